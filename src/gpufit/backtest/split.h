// Walk-forward splits of a telemetry window: fit on an earlier part, test on the later one.
//
//  * Fewer than 3 whole days (86,400 s from the window's start): one split, fit on the first
//    half of the grid samples, test on the second half.
//  * 3 whole days or more: roll day by day, fit on days 1..k and test on day k+1, for the
//    last (at most) 7 test days (a plan is rebuilt per split; older splits add cost, not
//    insight into tomorrow). Samples past the last whole day are left out.
// Slicing keeps the trace's clock (start_s moves with the cut), so time-of-day rules
// (lending) see the same hours.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gpufit/model/telemetry.h"

namespace gpufit {

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
