// Container CPU and memory from a Prometheus server that scrapes the kubelets' cAdvisor
// endpoints and kube-state-metrics, added to a Telemetry's grid (model/telemetry.h,
// ContainerSeries). Names and units: ../shared/reference/formats.md (c).
//
// Queries (range queries, W = step - 1 ms as in prometheus_telemetry.h, so each point is the
// raw sample of its step, or its largest where a step holds several: the counters' last),
// cAdvisor ones with {container!="", container!="POD"} to drop the pod-level and pause
// cgroups; each with the --namespace/--selector matchers and split under the answer cap
// (prometheus_split.h):
//   max_over_time(container_cpu_usage_seconds_total[W])           counter, CPU-seconds
//   max_over_time(container_cpu_cfs_periods_total[W])             counter
//   max_over_time(container_cpu_cfs_throttled_periods_total[W])   counter
//   max_over_time(container_memory_working_set_bytes[W])          gauge, bytes
//   max_over_time(kube_pod_container_resource_requests{resource=~"cpu|memory"}[W])
//   max_over_time(kube_pod_container_resource_limits{resource=~"cpu|memory"}[W])
// Rates are taken here from consecutive raw samples of one series, with Prometheus's
// counter-reset rule (a decrease means the counter restarted from 0, so the increase is the
// new value): cores at sample k = increase / (t_k - t_(k-1)); the throttled ratio is the
// increase of throttled periods over the increase of all periods. Samples go to the nearest
// grid sample; several series of one container (a restart gives a new cgroup) or several
// samples on one grid sample keep the largest. Requests and limits are the last value in
// the range: cores -> millicores (rounded up), bytes -> MiB (rounded up).
#pragma once

#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/ingest/prometheus/client.h"
#include "gpufit/ingest/prometheus/telemetry.h"
#include "gpufit/model/telemetry.h"

namespace gpufit {

// Queries the server and fills telemetry.containers (empty when the server has no cAdvisor
// series); the requests are added to `stats`. Errors: those of QueryRangeSplit.
Result<void> AddPrometheusContainers(const PrometheusOptions& options, const TelemetryGrid& grid, Telemetry& telemetry,
                                     PrometheusQueryStats& stats);

// The mapping alone (exposed for tests): the six answers, in the order above.
void AddContainerSeries(const std::vector<PromSeries>& cpu_usage, const std::vector<PromSeries>& cfs_periods,
                        const std::vector<PromSeries>& cfs_throttled, const std::vector<PromSeries>& working_set,
                        const std::vector<PromSeries>& requests, const std::vector<PromSeries>& limits,
                        Telemetry& telemetry);

}  // namespace gpufit
