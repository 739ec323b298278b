// Model loading: how long pods spend loading weights onto their GPU, what share of their GPU
// time that is, and what a node-local model cache (or a faster storage class) would save
// for models loaded again and again by the same pods.
//
// Per pod (loads joined to Telemetry::pods by pod key):
//  * cold start = a load's duration; reported as p50 / p95 over the pod's loads and its
//    first load (a new replica loads before it serves);
//  * share of GPU time loading = sum of load durations / the pod's life (running samples x
//    step): the GPU is held, idle for serving, while weights stream in;
//  * model size: options.model_gib when given, else estimated from the telemetry as the
//    median rise of DCGM_FI_DEV_FB_USED across a load (the sample after minus the sample
//    before) over the pod's loads that raised it by at least min_step_mib; pods without one
//    take the median of all pods' estimates. The estimate reads weights swapped in; where a
//    pod frees the old model first the rise understates the size (and the cached time).
//  * observed throughput = size / duration.
// Cache: every load of a pod after its first is a repeat (the same node has read the model
// before, so a node-local cache holds it: a lower bound, as pods on one node share a cache).
// A cached load takes size / cache_gb_per_s (1 GB = 1e9 bytes); the saving per repeat is
// max(0, duration - cached time): loads already faster than the cache save nothing.
// GPU-hours saved = sum of savings / 3600; per month = GPU-hours saved / window hours x 730
// x the GPU's on-demand price.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpufit/model/model_load.h"
#include "gpufit/model/telemetry.h"

namespace gpufit {

struct ModelLoadingOptions {
  // Sequential read of a node-local NVMe SSD, conservative: data-centre NVMe drives read 2-7
  // GB/s, and cloud instance stores stripe several. An assumption: set it to your disks'.
  double cache_gb_per_s = 2.0;
  std::optional<double> model_gib{};  // the model's size when known; else estimated
  double min_step_mib = 256;
};

struct PodModelLoading {
  std::string pod;
  std::size_t loads = 0;
  double first_s = 0, p50_s = 0, p95_s = 0, loading_s = 0;
  double life_s = 0;     // running samples x step
  double share = 0;      // loading_s / life_s
  double model_mib = 0;  // estimated or given
  bool size_estimated_from_pod = false;
  double cached_load_s = 0;
  double saved_s = 0;  // over the repeat loads
};

struct ModelLoadingReport {
  std::vector<PodModelLoading> pods;                                  // by pod key, the pods in the telemetry only
  std::size_t loads = 0, repeat_loads = 0;                            // of those pods
  std::size_t pods_not_in_telemetry = 0, loads_not_in_telemetry = 0;  // left out of every figure
  double cold_start_p50_s = 0, cold_start_p95_s = 0;                  // over the loads of pods in the telemetry
  double observed_gb_per_s_p50 = 0;                                   // size / duration, median over loads
  double model_mib = 0;                                               // median over the pods' sizes
  std::string size_basis;                                             // in words
  double cache_gb_per_s = 0;
  double loading_gpu_hours = 0, pod_gpu_hours = 0;  // pods in the telemetry
  double share = 0;                                 // loading / pod GPU-hours
  double saved_gpu_hours = 0, share_after = 0;
  double saved_usd_per_month = 0;
};

// Preconditions: options.cache_gb_per_s > 0, model_gib > 0 when given.
ModelLoadingReport AnalyzeModelLoading(const Telemetry& telemetry, const std::vector<ModelLoad>& loads,
                                       double usd_per_gpu_hour, const ModelLoadingOptions& options = {});

}  // namespace gpufit
