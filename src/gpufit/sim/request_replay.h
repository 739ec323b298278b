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
//  * A request goes to the busiest ready replica with a free slot (lowest index on ties),
//    which packs requests and leaves other replicas idle for scale-down.
// Cost: O((N + E) log R) for N requests, E schedule steps and R replicas.
#pragma once

#include <vector>

#include "gpufit/model/request_trace.h"

namespace gpufit {

struct ReplicaSchedule {
  double window_s = 60;       // length of one window (> 0)
  std::vector<int> replicas;  // target per window; the last value holds after the end
};

// What a request's SLO bounds: end-to-end latency (wait + service), time to first token
// (wait + prefill), or the queueing wait alone (time until a replica takes it).
enum class SloMetric { kLatency, kTtft, kWait };

// "latency", "ttft" or "wait": the metric's name in services files and reports.
inline const char* SloMetricName(SloMetric m) {
  switch (m) {
    case SloMetric::kTtft:
      return "ttft";
    case SloMetric::kWait:
      return "wait";
    case SloMetric::kLatency:
      break;
  }
  return "latency";
}

struct ReplayOptions {
  int concurrency = 1;      // requests per replica at once (>= 1)
  double cold_start_s = 0;  // a new replica serves this long after it starts
  double slo_s = 0;         // bound on `slo_metric`; 0: no SLO (attainment 1)
  SloMetric slo_metric = SloMetric::kLatency;
  int initial_ready = -1;    // replicas ready at t = 0 (default: the first window's target)
  double miss_bucket_s = 0;  // > 0: count SLO misses per bucket of arrival time
  // The first this many requests are served but not scored (a warm-up: neither in the
  // attainment nor in the misses).
  std::size_t unscored_prefix = 0;
};

struct ReplayResult {
  std::size_t requests = 0;
  double mean_wait_s = 0;
  double p50_latency_s = 0, p95_latency_s = 0, p99_latency_s = 0;
  double p50_ttft_s = 0, p95_ttft_s = 0, p99_ttft_s = 0;
  double slo_attainment = 1;   // share of scored requests within the SLO (unserved ones miss)
  std::size_t slo_misses = 0;  // scored requests that missed the SLO (unserved included)
  std::size_t unserved = 0;    // still waiting when no replica was left to serve them
  double gpu_hours = 0;        // replica-hours
  int cold_starts = 0;
  int max_replicas = 0;
  // With miss_bucket_s > 0: misses_per_bucket[b] counts requests arriving in
  // [b, b + 1) * miss_bucket_s that missed the SLO (unserved ones included).
  std::vector<std::size_t> misses_per_bucket;
};

// service_s[i] and prefill_s[i] (seconds) belong to trace.requests[i] (prefill_s may be
// empty). Preconditions (asserted, not errors: callers build these): sizes match,
// window_s > 0, concurrency >= 1.
ReplayResult ReplayRequests(const RequestTrace& trace, const std::vector<double>& service_s,
                            const std::vector<double>& prefill_s, const ReplicaSchedule& schedule,
                            const ReplayOptions& options);

}  // namespace gpufit
