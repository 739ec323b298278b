// Usage profile of one pod: percentiles, idle share and waste over the pod's life.
//
// Percentiles use the nearest-rank method (the smallest sample with at least q % of the
// samples at or below it) over the pod's running samples. "Idle" is a duty cycle of 0.
// GPU-hours: allocated = running samples x step (one whole GPU held);
// used = sum of duty cycle / 100 x step; waste = allocated - used.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpufit/model/telemetry.h"

namespace gpufit {

struct Percentiles {
  double peak = 0, p99 = 0, p95 = 0, p50 = 0, mean = 0;
};

struct PodProfile {
  std::string pod;
  Percentiles fb_used_mib;                   // GPU memory used, MiB
  Percentiles gpu_util_pct;                  // duty cycle, percent
  std::optional<Percentiles> sm_active_pct;  // DCGM_FI_PROF_SM_ACTIVE x 100 where the source has it
  std::string util_field;                    // the field gpu_util_pct came from (PodSeries::util_field)
  std::string device;                        // PodSeries::device
  double idle_share = 0;                     // share of running samples with duty cycle 0, in [0, 1]
  std::size_t running_samples = 0;
  std::size_t filled_samples = 0;
  double gpu_hours_allocated = 0;
  double gpu_hours_used = 0;
  double gpu_hours_wasted() const { return gpu_hours_allocated - gpu_hours_used; }
};

// Nearest-rank percentile q in [0, 100] of `values` (which it reorders). 0 if empty.
double NearestRank(std::vector<float>& values, double q);

// The finite values of a series (NaN marks a sample without data), in order.
std::vector<float> FiniteValues(const std::vector<float>& series);

// Peak, p99, p95, p50 (nearest rank) and mean of `values`; all 0 if empty.
Percentiles Summarize(std::vector<float> values);

PodProfile Profile(const PodSeries& pod, double step_s);
std::vector<PodProfile> ProfileAll(const Telemetry& telemetry);

}  // namespace gpufit
