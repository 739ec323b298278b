// Servers that pre-allocate GPU memory, sized by what they use. vLLM reserves
// gpu_memory_utilization x the GPU's memory at start (0.9 by default; TGI's
// --cuda-memory-fraction 1.0, TensorRT-LLM's free_gpu_memory_fraction 0.9 of what is free):
// the weights, activations and CUDA context, and a KV cache filling the rest. DCGM then reads
// that budget, flat, whatever the load, so co-location and right-sizing would see every LLM
// server as a whole GPU. Its own metrics (ingest/prometheus/kv_cache.h) say how much of the
// cache it uses.
//
// Per server with a KV cache series (PodSeries::kv_cache):
//  * reserved R = the pod's peak DCGM_FI_DEV_FB_USED (the budget, flat);
//  * the cache's size K: kv_cache_memory_bytes when the engine states it; else
//    num_gpu_blocks x block_size x the model's KV bytes per token (2 x layers x KV heads x
//    head size x bytes per element, inference/llm_service.h, for a model it knows by its
//    model_name; 1 byte per element for an fp8 cache_dtype, else 2); else unknown;
//  * the rest, R - K, is what does not shrink (weights, activations, context);
//  * the cache used at the tail: u = the usage's quantile 1 - max_collision_share (the share
//    of samples the plan lets collide; p99 by default) over the samples with data, and the
//    new cache K' = K x min(1, u x (1 + headroom));
//  * need = (R - K) + K': the memory it will hold, flat, with the new setting. Its
//    fb_used_mib series becomes that need over its life, so right-sizing and co-location act
//    on it; the engine's setting (vLLM --gpu-memory-utilization = need / the GPU's memory,
//    rounded up to 0.01) is emitted with the plan (plan/manifests/engine_settings.cpp).
//  * The replay: the samples whose cache use K x usage passes K' (queued or preempted
//    requests, not an out-of-memory: vLLM never allocates past its cache).
// A server whose size is unknown (no config, an unknown model) or whose numbers contradict
// (K >= R) is kept as it is, with the reason. Pods without cache metrics that sit flat at
// 80% or more of their GPU's memory are listed: likely pre-allocating servers gpufit cannot
// size (their own metrics are missing), kept whole.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/model/telemetry.h"

namespace gpufit {

struct PreallocatedServer {
  std::string pod;
  std::string engine, model;
  double reserved_mib = 0;             // R
  std::optional<double> kv_cache_mib;  // K, when known
  std::string kv_cache_source;         // how K was found
  double kv_usage_quantile = 0;        // u
  double kv_usage_peak = 0;            // the largest usage seen
  double need_mib = 0;                 // (R - K) + K', or R when kept
  double new_kv_cache_mib = 0;         // K'
  std::size_t samples_above = 0;       // samples where K x usage > K'
  std::size_t samples = 0;             // samples with usage data
  bool sized = false;                  // false: kept as it is (`why`)
  std::string why;
};

struct Preallocation {
  std::vector<PreallocatedServer> servers;        // by pod
  std::vector<std::string> flat_without_metrics;  // pods flat at >= 80% of their GPU, no cache metrics
};

// Sizes each server (rules above). `quantile` in (0, 1], `headroom` >= 0;
// `gpu_memory_mib(pod)` is the memory of the GPU the pod runs on today.
Preallocation SizePreallocatedServers(const Telemetry& telemetry, double quantile, double headroom,
                                      const std::function<double(const PodSeries&)>& gpu_memory_mib);
// Whether any server was sized, and its fb_used_mib rewritten as its need over its life.
bool AnySized(const Preallocation& p);
void ApplyPreallocation(const Preallocation& p, Telemetry& telemetry);

// vLLM's --gpu-memory-utilization for `need_mib` on a GPU (or HAMi share) of `memory_mib`:
// need / memory rounded up to 0.01, at most 1.
double GpuMemoryUtilization(double need_mib, double memory_mib);

}  // namespace gpufit
