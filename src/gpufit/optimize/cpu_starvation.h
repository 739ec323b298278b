// GPU starvation by CPU: pods whose GPU waits on their CPU (data loading, preprocessing,
// tokenization on too few cores), and the CPU per GPU that would feed it.
//
// Input: the pod's GPU activity and its containers' CPU (model/telemetry.h). GPU activity is
// DCGM_FI_PROF_SM_ACTIVE where the pod has it, else DCGM_FI_DEV_GPU_UTIL (the duty cycle).
// Per grid sample of the pod's life with both activity and CPU data:
//  * CPU usage c = sum over its containers of the cAdvisor usage rate, cores;
//  * CPU pressure: c >= at_limit_ratio x the pod's CPU limit (sum of its containers'
//    limits, when every container has one), or the highest CFS throttling ratio of its
//    containers >= throttled_ratio;
//  * starved: CPU pressure while activity < low_activity_pct.
// A pod is starved when at least min_starved_share of those samples are.
//
// Model (stated, and the only one used): while a pod is CPU-bound its GPU activity is
// proportional to the CPU it gets, a = k x c (an input pipeline that feeds the GPU at a rate
// proportional to its cores), up to the GPU's saturation; k is the median of a / c over the
// starved samples (robust to the odd sample). The CPU that lets the GPU reach
// target_activity_pct is target / k, rounded up to 100 millicores, never below the CPU the
// pod has now (its limit, else its highest usage), and capped at max_cores_per_gpu (then the
// recommendation says so). Expected activity after the change: each starved sample scales
// to min(target, a x recommended / c); the other samples stay as they were.
// Pods on several GPUs are left out of the telemetry (ingest); these are one GPU each.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gpufit/model/telemetry.h"

namespace gpufit {

struct StarvationOptions {
  double low_activity_pct = 50;     // a sample's GPU activity below this is low
  double at_limit_ratio = 0.9;      // CPU usage at >= 90% of the limit is at the limit
  double throttled_ratio = 0.25;    // CFS throttled periods / all periods, per sample
  double min_starved_share = 0.10;  // of the pod's samples with activity and CPU data
  double target_activity_pct = 100;
  // p5.48xlarge: 192 vCPU for 8 H100 (../shared/reference/cloud_prices.yaml); with --nodes the
  // caller passes the node's allocatable cores per GPU instead.
  double max_cores_per_gpu = 24;
};

struct CpuStarvation {
  std::size_t pod = 0;               // index into Telemetry::pods
  std::string pod_name;              // Telemetry::pods[pod].pod
  std::string activity_metric;       // DCGM_FI_PROF_SM_ACTIVE or DCGM_FI_DEV_GPU_UTIL
  std::size_t observed_samples = 0;  // samples of its life with activity and CPU data
  std::size_t starved_samples = 0;
  double cpu_limit_cores = 0;        // 0 = no limit on some container
  double cpu_used_p50_starved = 0;   // cores, median over the starved samples
  double throttled_p50_starved = 0;  // highest container ratio, median over the starved samples
  double activity_p50_starved = 0;   // percent
  double activity_per_core = 0;      // k, percent per core
  double cores_needed = 0;           // target / k, before rounding and the cap
  double recommended_cores = 0;      // per GPU
  bool capped = false;               // cores_needed exceeded max_cores_per_gpu
  double activity_mean_pct_now = 0;  // over observed samples
  double activity_mean_pct_expected = 0;
  std::string evidence;  // for humans: the samples, the thresholds, the fit

  double starved_share() const {
    return observed_samples == 0 ? 0 : static_cast<double>(starved_samples) / static_cast<double>(observed_samples);
  }
};

// Whether some pod of the telemetry has container CPU samples: whether starvation can be
// judged at all.
bool HasContainerCpu(const Telemetry& telemetry);

// The starved pods, in Telemetry::pods order. Pods without container data are not judged.
// Precondition: options in range (thresholds in (0, 100] / (0, 1], max_cores_per_gpu > 0).
std::vector<CpuStarvation> DetectCpuStarvation(const Telemetry& telemetry, const StarvationOptions& options = {});

}  // namespace gpufit
