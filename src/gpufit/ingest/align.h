// Turns raw (time, value) samples into the common grid of model/telemetry.h.
//
// Rules (the same for every reader):
//  * Grid step: the median of the positive differences between consecutive timestamps
//    within each pod's series (the scrape interval); 60 s when no series has two samples.
//    Grid start and end: the earliest and latest timestamps of either metric.
//  * Each raw sample goes to the nearest grid sample; several samples of one pod and metric
//    landing on one grid sample keep the largest (conservative for memory and duty).
//  * A pod's life runs from its first to its last raw sample of either metric. Before and
//    after it the pod is not running: both series are 0 (late starts, early ends).
//  * Inside its life a grid sample with no raw value (a gap) takes the larger of the
//    nearest known values before and after it (only one side exists at the edges), so a
//    gap never hides a peak. Gaps are counted in PodSeries::filled_samples.
//  * A pod that has samples of only one of the two metrics is left out and listed in
//    Telemetry::skipped.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/telemetry.h"

namespace gpufit {

// Raw samples of one metric of one pod, in input order. Times in seconds.
struct RawSeries {
  std::vector<double> time_s;
  std::vector<float> value;
};

// Raw samples of both metrics, keyed by pod name.
struct RawTelemetry {
  std::unordered_map<std::string, RawSeries> fb_used_mib;
  std::unordered_map<std::string, RawSeries> gpu_util_pct;
};

// A grid fixed by the source instead of inferred from the samples (a Prometheus range query
// evaluates at known times). Every raw timestamp must lie within half a step of it.
struct GridSpec {
  double start_s = 0;
  double step_s = 60;
  std::size_t samples = 0;
};

// Errors: kInvalidArgument naming `source` when there is no pod with both metrics, or when
// the grid would exceed 50 million samples or 400 million samples x pods (a timestamp far
// off the rest).
Result<Telemetry> AlignToGrid(const RawTelemetry& raw, const std::string& source,
                              const std::optional<GridSpec>& grid = std::nullopt);

}  // namespace gpufit
