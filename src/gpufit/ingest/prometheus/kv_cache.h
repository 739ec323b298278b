// The KV cache of vLLM servers, for the pods of a telemetry read from Prometheus: servers that
// pre-allocate GPU memory (--gpu-memory-utilization, 0.9 of the GPU by default) show that
// budget in DCGM_FI_DEV_FB_USED whatever their load; their own metrics say what they use.
//
// Metrics (vLLM source: vllm/v1/metrics/loggers.py PrometheusStatLogger; vllm/engine/metrics.py
// before V1), labels model_name (and engine from V1), plus the pod's own labels that the
// scrape adds (pod, namespace; or exported_pod, exported_namespace: PodKeyFromLabels):
//  * vllm:kv_cache_usage_perc, a gauge, 1 = 100% of the cache in use (vLLM 0.9 on);
//  * vllm:gpu_cache_usage_perc, the same before 0.9 (renamed in vLLM PR #18354, hidden in
//    0.10, removed later): read where the new name has no series;
//  * vllm:cache_config_info, an info gauge (value 1) whose labels are every CacheConfig field
//    as a string ("None" when unset): gpu_memory_utilization, num_gpu_blocks, block_size,
//    cache_dtype, and from vLLM 0.11 kv_cache_memory_bytes (the cache's size when set).
// Queries, on the telemetry's grid with its window: max_over_time of each usage gauge, and
// last_over_time of cache_config_info. A pod with usage but no config keeps its usage and a
// config with engine "vllm" only (its size unknown: plan/preallocated.h keeps it as it is).
#pragma once

#include <cstddef>

#include "gpufit/core/result.h"
#include "gpufit/ingest/prometheus/client.h"
#include "gpufit/model/telemetry.h"

namespace gpufit {

// Sets PodSeries::kv_cache and kv_cache_usage of every telemetry pod ("namespace/pod" by
// PodKeyOf) that vLLM metrics name; returns how many. Errors: QueryRange's; a config label
// that is not a number ("None" is absent) names the pod, the label and the value.
Result<std::size_t> AddVllmKvCaches(const PrometheusOptions& options, Telemetry& telemetry);

// The same from answers already read (exposed for tests).
Result<std::size_t> AddVllmKvCacheSeries(const std::vector<PromSeries>& usage, const std::vector<PromSeries>& old_usage,
                                         const std::vector<PromSeries>& config, Telemetry& telemetry);

}  // namespace gpufit
