// Replica policies for one inference service, all judged by the same replay
// (sim/request_replay.h) of the same demand.
//
//  * Static peak: one replica count all the time, the fewest that meet the SLO.
//  * HPA-like: the Kubernetes HorizontalPodAutoscaler on a requests-per-second metric
//    (kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/, algorithm
//    details): every sync period (15 s) desired = ceil(rate / target per replica), where
//    rate is the last metric window's (60 s, as Prometheus `rate(...[1m])`); no change
//    within the 0.1 tolerance; scale-up at most max(4 pods, 100%) per period; scale-down to
//    the highest recommendation of the last stabilization window (300 s). The target per
//    replica is target_utilization * concurrency / mean service time. New pods serve after
//    the cold start; the HPA does not know it.
//  * gpufit: a replica count per decision window. The analytic M/M/c model
//    (optimize/queueing.h) gives each window's count from its arrival rate and mean service
//    time (servers = replicas * concurrency, P(wait > budget) <= the miss allowance); the
//    counts rise ahead of time by the cold start (prewarm); then each level is held for
//    at least the hold time (ReplicaHoldSeconds below): a dip shorter than it is not taken
//    and a level, once reached, is kept at least that long, so the schedule does not flap
//    (ski rental's break-even, formulas.md section 3; the same role as the Kubernetes HPA's
//    scale-down stabilization window). The replay
//    then judges: windows that miss more than their share of the allowance get a replica
//    more until the SLO holds, then passes take a replica from every window that can spare
//    it (the SLO still holds overall and within that window's share, so the allowance is
//    not all spent in one window), but never below a stable queue: more slots than the
//    offered load of the window and of its neighbours (a window's arrival count is a noisy
//    estimate of its rate; trimming to a lucky sample fails on the next hour).
//  * Clairvoyant reference: knows every arrival and service time. Per window, the fewest
//    replicas such that the window's requests, replayed after the previous window's tail
//    (the requests that arrived up to the longest service time before it, served on the
//    same count but not scored) on replicas ready at no cost (no cold start), miss at most
//    what an optimal split of the overall allowance gives that window (exact: a dynamic
//    program over the misses spent, a multiple-choice knapsack). GPU-hours = sum of count x
//    window length. A reference for how far a real windowed schedule is from the best one
//    could do knowing the future, without cold starts; not a proof of optimality.
// Requests that miss even without waiting (a prompt whose prefill alone exceeds a TTFT
// bound) are beyond any policy: every target is lowered to what can be reached.
#pragma once

#include <string>
#include <vector>

#include "gpufit/inference/demand.h"
#include "gpufit/sim/request_replay.h"

namespace gpufit {

struct InferenceSlo {
  SloMetric metric = SloMetric::kTtft;
  double seconds = 2;
  double target = 0.99;  // share of requests within `seconds`
};

struct ReplicaPolicyInput {
  const Demand* demand = nullptr;
  int concurrency = 1;      // requests per replica at once
  double cold_start_s = 0;  // replica start until it serves
  InferenceSlo slo;
  double window_s = 60;  // decision window of gpufit and the clairvoyant reference
  double step_s = 5;     // schedule resolution (prewarm lead), divides window_s
  int max_replicas = 100000;
  double hold_s = -1;  // gpufit's minimum hold per level, seconds; negative: ReplicaHoldSeconds
};

struct HpaSettings {
  double target_utilization = 0.7;
  double sync_s = 15;
  double metric_window_s = 60;
  double stabilization_s = 300;
  double tolerance = 0.1;
  int min_replicas = 1;
};

struct PolicyOutcome {
  std::string policy;
  ReplicaSchedule schedule;
  ReplayResult replay;                // the clairvoyant's: requests, gpu_hours, slo_attainment only
  double target_rps_per_replica = 0;  // HPA-like: the metric target it scaled on
  int replays = 0;                    // replays the policy ran to choose its schedule
  bool fell_back_to_static = false;   // gpufit: its windows cost more than static peak's count
};

ReplayOptions ReplayOptionsFor(const ReplicaPolicyInput& in);

// Requests that miss the SLO even without waiting (a prompt whose prefill alone exceeds a
// TTFT bound, a service time above a latency bound).
std::size_t RequestsMissingAlone(const Demand& demand, const InferenceSlo& slo);

// The SLO target, lowered to the share of requests that can meet the SLO at all. Every
// policy aims at this. (PrepareService refuses services where it is below the target.)
double ReachableSloTarget(const ReplicaPolicyInput& in);

PolicyOutcome StaticPeak(const ReplicaPolicyInput& in);
PolicyOutcome HpaLike(const ReplicaPolicyInput& in, const HpaSettings& hpa);
PolicyOutcome GpufitSchedule(const ReplicaPolicyInput& in);
PolicyOutcome Clairvoyant(const ReplicaPolicyInput& in);

// The minimum time gpufit's schedule holds a replica level, seconds: the break-even of
// ski rental. Scaling from n down to n - 1 replicas for t seconds saves t x p (p: the GPU's
// price per second); coming back up costs a cold start: cold_start_s x p of a GPU paid
// while it loads, plus the latency risk that the need returns earlier than the schedule
// says. The schedule knows a rise only to its decision window (a window's count is an
// estimate from its arrivals), so to carry no more risk than holding the level the replica
// must be back up to a window early: window_s x p more. The dip pays off when
// t x p > (cold_start_s + window_s) x p, so the hold is cold_start_s + window_s (the price
// cancels: it is the same GPU either way). A dip shorter than the hold is filled; a level
// reached is kept at least as long; holding a level is always safe for the SLO (never
// fewer replicas than needed), only dearer.
double ReplicaHoldSeconds(const ReplicaPolicyInput& in);

// gpufit's per-window counts expanded to steps with prewarm and the hold (exposed for
// tests): `per_window` counts, `steps_per_window` steps each; a rise at step s starts
// `lead_steps` earlier; then, at every level, a dip of at most `keep_steps` steps between
// steps at or above it is filled, and a run at or above it that ends before the series
// does lasts at least keep_steps + 1 steps (lengthened at its end). The result is never
// below the prewarmed counts, never above their maximum, and per level has no interior
// gap and no run (but the last) of keep_steps steps or fewer.
std::vector<int> ExpandSchedule(const std::vector<int>& per_window, int steps_per_window, int lead_steps,
                                int keep_steps);

}  // namespace gpufit
