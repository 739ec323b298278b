// M/M/c queueing (Erlang C), the fast guide for sizing inference replicas.
//
// Symbols: arrival rate lambda (requests/s), per-replica service rate mu (requests/s),
// replicas c, offered load a = lambda / mu (Erlangs), utilisation rho = a / c < 1.
// Formulas and test vectors: ../shared/reference/formulas.md section 2 (Erlang C via the
// numerically stable Erlang-B recursion B(k, a) = a B(k-1, a) / (k + a B(k-1, a)),
// C = B / (1 - rho (1 - B)); W_q = C / (c mu - lambda); P(W_q > t) = C e^(-(c mu - lambda) t)).
#pragma once

namespace gpufit {

// Erlang B: blocking probability of c servers at offered load a (>= 0).
double ErlangB(int servers, double offered_load);

// Erlang C: probability an arrival waits. Requires offered_load < servers (else 1).
double ErlangC(int servers, double offered_load);

// Mean wait in queue W_q, seconds; infinite when lambda >= c mu.
double MmcMeanWait(int servers, double lambda, double mu);

// P(W_q > t): the tail of the waiting time.
double MmcWaitTail(int servers, double lambda, double mu, double t);

// The fewest servers c > a with P(W_q > t) <= epsilon (at least 1; 0 when lambda is 0).
int MinServersForWaitTail(double lambda, double mu, double t, double epsilon);

}  // namespace gpufit
