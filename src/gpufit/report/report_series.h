// The time series a plan's report draws, computed from the telemetry the plan was made on
// (plan.json keeps only summaries). A JSON object:
//   step_s, samples, start_s        the telemetry grid (model/telemetry.h)
//   bucket_samples                  grid samples per drawn point (>= 1)
//   holdout                         null, or {begin_h, end_h, label}: the backtest's test
//                                   part (plan.json backtest.splits[].test_samples, first
//                                   begin to last end), hours from the window's start
//   gpu_memory[]                    per shared GPU (a plan group of >= 2 pods), the fullest
//                                   first, at most kMaxGpus: gpu (group index), capacity_mib,
//                                   packing_capacity_mib, peak_mib, pods[], hours[] (bucket
//                                   starts, hours from the window's start), mib[pod][point]
//   gpu_memory_omitted              shared GPUs left out by the cap
//   duty_by_hour                    {pods[], hours: 0..23, pct[pod][hour]} mean duty cycle per
//                                   hour of day on the telemetry's clock (UTC for Unix
//                                   times), over each pod's life; null where a pod has no
//                                   sample in that hour; at most kMaxPods pods, most
//                                   GPU-hours first; duty_pods_omitted counts the rest
// Downsampling keeps the peaks honest: a drawn point of a GPU is the grid sample of its
// bucket where the pods' summed memory is largest, and each pod's value at that sample, so
// the stack's height is the bucket's true peak (never an average under the capacity line).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "gpufit/model/telemetry.h"

namespace gpufit::report {

inline constexpr std::size_t kMaxPoints = 480;  // drawn points per GPU
inline constexpr std::size_t kMaxGpus = 200;    // shared GPUs drawn
inline constexpr std::size_t kMaxPods = 200;    // heatmap rows

// The object above as JSON text. `plan_json`: plan.json of a plan made on `telemetry`
// (groups[].pods name its pods; unknown names are skipped). Errors: plan_json that is not
// JSON throws std::invalid_argument (a caller's logic error).
std::string ReportSeriesJson(const Telemetry& telemetry, std::string_view plan_json);

}  // namespace gpufit::report
