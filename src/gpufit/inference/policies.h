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
//    counts rise ahead of time by the cold start (prewarm); dips shorter than the
//    break-even keep-alive are filled (ski rental, formulas.md section 3: a cold start
//    costs cold_start_s replica-seconds, keeping a replica warm costs the gap). The replay
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

// gpufit's per-window counts expanded to steps with prewarm and keep-alive (exposed for
// tests): `per_window` counts, `steps_per_window` steps each; a rise at step s starts
// `lead_steps` earlier; a dip of at most `keep_steps` steps between higher levels is filled.
std::vector<int> ExpandSchedule(const std::vector<int>& per_window, int steps_per_window, int lead_steps,
                                int keep_steps);

}  // namespace gpufit
