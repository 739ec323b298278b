// Container CPU and memory from a long CSV (for exports of cAdvisor and kube-state-metrics
// without a Prometheus gpufit can reach), onto an existing Telemetry grid.
//
// Header `timestamp_s,pod,container,image,metric,value` (any column order, extra columns
// ignored; `image` may be empty). Metrics (the PromQL each comes from, formats.md (c)):
//  * container_cpu_usage_cores: rate(container_cpu_usage_seconds_total[step]), cores;
//  * container_cpu_cfs_throttled_ratio: rate(container_cpu_cfs_throttled_periods_total) /
//    rate(container_cpu_cfs_periods_total), 0-1;
//  * container_memory_working_set_bytes: bytes (converted to MiB);
//  * kube_pod_container_resource_requests_cpu_cores, kube_pod_container_resource_limits_cpu_cores,
//    kube_pod_container_resource_requests_memory_bytes, kube_pod_container_resource_limits_memory_bytes
//    (kube-state-metrics v1 names): the last value wins.
// Rows of other metrics are skipped. Each sample goes to the nearest grid point of
// `telemetry` (duplicates on one point keep the largest); samples more than half a step
// outside the grid are dropped. Containers are ordered by pod, container.
// Errors (kInvalidArgument, naming file, line and column): missing column, malformed,
// negative or non-finite number, a ratio above 1, an empty pod or container, no data rows,
// samples of which none falls within the telemetry's span (another clock);
// kNotFound for a missing file.
#pragma once

#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/telemetry.h"

namespace gpufit {

Result<std::vector<ContainerSeries>> ReadContainersCsv(const std::string& path, const Telemetry& telemetry);

}  // namespace gpufit
