// Walk-forward splits of a telemetry window: fit on an earlier part, test on the later one.
//
//  * 2 whole days or more (86,400 s each from the window's start): roll day by day, fit on
//    days 1..k and test on day k+1, for the last (at most) 7 test days (a plan is rebuilt per
//    split; older splits add cost, not insight into tomorrow). Samples past the last whole
//    day are left out. Every fit part holds a full day: what a guarantee needs (status.h).
//  * Fewer: rolling origin, three cuts at 1/4, 1/2 and 3/4 of the grid samples, each fitted
//    on everything before the cut and tested on everything after it. Every fit part is
//    shorter than a day, so verdicts on them are provisional (status.h).
// Slicing keeps the trace's clock (start_s moves with the cut), so time-of-day rules
// (lending) see the same hours.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gpufit/model/telemetry.h"

namespace gpufit {

// A day, seconds: the period of the load cycle the splits and verdicts rely on (status.h).
inline constexpr double kFullDayS = 86400;

struct WalkForwardSplit {
  std::string label;                // "first half -> second half", "days 1-3 -> day 4"
  std::size_t fit_begin = 0, fit_end = 0;    // grid samples [begin, end)
  std::size_t test_begin = 0, test_end = 0;  // grid samples [begin, end)
};

std::vector<WalkForwardSplit> WalkForwardSplits(const Telemetry& telemetry);

// The grid samples [begin, end) of `telemetry` (begin < end <= samples), with the pods that
// run there and, when `only` is given, whose names are in it (sorted). Lives are clipped to
// the slice; gaps, containers and SM activity are sliced alike.
Telemetry SliceTelemetry(const Telemetry& telemetry, std::size_t begin, std::size_t end,
                         const std::vector<std::string>* only = nullptr);

// Names of the pods running in [begin, end), sorted.
std::vector<std::string> PodsRunningIn(const Telemetry& telemetry, std::size_t begin, std::size_t end);

}  // namespace gpufit
