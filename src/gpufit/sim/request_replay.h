// Discrete-event replay of every request of a trace through a replica schedule: the judge
// of inference replica policies.
//
// Rules:
//  * Each replica serves up to `concurrency` requests at once (maximum concurrent
//    sequences); a request's service time is given per request and does not depend on how
//    many others share the replica (no batching slowdown: a stated simplification).
//  * Requests wait first come, first served for any free slot of a ready replica.
//  * The schedule sets the replica target per window. Scale-up starts replicas that serve
//    only after `cold_start`; scale-down retires idle replicas first (starting ones, then
//    ready ones), and a busy replica leaves when its last request ends and accepts no new ones.
//  * GPU-hours count every replica from its start (cold start included) until it leaves.
//  * Latency = wait + service; time to first token = wait + the request's prefill time
//    (given per request; 0 when unknown).
#pragma once

#include <vector>

#include "gpufit/model/request_trace.h"

namespace gpufit {

struct ReplicaSchedule {
  double window_s = 60;       // length of one window (> 0)
  std::vector<int> replicas;  // target per window; the last value holds after the end
};

struct ReplayOptions {
  int concurrency = 1;      // requests per replica at once (>= 1)
  double cold_start_s = 0;  // a new replica serves this long after it starts
  double slo_s = 0;         // latency (or TTFT when slo_on_ttft) objective; 0: none
  bool slo_on_ttft = false;
  int initial_ready = -1;  // replicas ready at t = 0 (default: the first window's target)
};

struct ReplayResult {
  std::size_t requests = 0;
  double mean_wait_s = 0;
  double p50_latency_s = 0, p95_latency_s = 0, p99_latency_s = 0;
  double p50_ttft_s = 0, p95_ttft_s = 0, p99_ttft_s = 0;
  double slo_attainment = 1;  // share of all requests within the SLO (unserved ones miss)
  std::size_t unserved = 0;   // still waiting when no replica was left to serve them
  double gpu_hours = 0;       // replica-hours
  int cold_starts = 0;
  int max_replicas = 0;
};

// service_s[i] and prefill_s[i] (seconds) belong to trace.requests[i] (prefill_s may be
// empty). Preconditions (asserted, not errors: callers build these): sizes match,
// window_s > 0, concurrency >= 1.
ReplayResult ReplayRequests(const RequestTrace& trace, const std::vector<double>& service_s,
                            const std::vector<double>& prefill_s, const ReplicaSchedule& schedule,
                            const ReplayOptions& options);

}  // namespace gpufit
