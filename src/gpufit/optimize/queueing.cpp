#include "gpufit/optimize/queueing.h"

#include <cassert>
#include <cmath>
#include <limits>

namespace gpufit {

double ErlangB(int servers, double offered_load) {
  assert(servers >= 0 && offered_load >= 0);
  double b = 1;
  for (int k = 1; k <= servers; ++k) b = offered_load * b / (k + offered_load * b);
  return b;
}

double ErlangC(int servers, double offered_load) {
  if (offered_load >= servers) return 1;
  const double b = ErlangB(servers, offered_load);
  const double rho = offered_load / servers;
  return b / (1 - rho * (1 - b));
}

double MmcMeanWait(int servers, double lambda, double mu) {
  const double spare = servers * mu - lambda;
  if (spare <= 0) return std::numeric_limits<double>::infinity();
  return ErlangC(servers, lambda / mu) / spare;
}

double MmcWaitTail(int servers, double lambda, double mu, double t) {
  const double spare = servers * mu - lambda;
  if (spare <= 0) return 1;
  return ErlangC(servers, lambda / mu) * std::exp(-spare * t);
}

int MinServersForWaitTail(double lambda, double mu, double t, double epsilon) {
  assert(mu > 0 && lambda >= 0);
  if (lambda == 0) return 0;
  int c = std::max(1, static_cast<int>(std::floor(lambda / mu)) + 1);
  while (MmcWaitTail(c, lambda, mu, t) > epsilon) ++c;
  return c;
}

}  // namespace gpufit
