// One verdict per strategy from a walk-forward backtest (backtest.h), so that the summary,
// the report, plan.json and the exit codes say the same thing, and only what was tested.
//
// Verdicts:
//  * held: every split that planned the strategy replayed its test part without a violation,
//    and every fit part held at least a full day (kFullDayS) of telemetry;
//  * did not hold: some split's test part broke the strategy's rule;
//  * provisional: the splits held, but a fit part was shorter than a day, so the pattern the
//    strategy relies on (load that rises and falls with the day, peaks that do not coincide)
//    was not in it; `why` names the history needed;
//  * not tested: nothing was replayed (no split, no pod in both parts of any split, no shared
//    GPU, no pod right-sized smaller, no lending window).
// Only "held" is recommended. Per strategy:
//  * colocation: the same-model groups' memory (at the OOM line), memory caps and collisions;
//  * right_sizing: pods sent to a GPU with less memory than their current one, against their
//    test peak;
//  * fleet: the mixed fleet's GPUs, each at its model's line, duty scaled;
//  * lending: the night lending plan, needed + lent GPUs against the fleet, memory included;
//  * mig: not replayed by the backtest: always "not tested" (its in-sample check is the plan's).
//
// Why a full day: serving load follows the day. On GenTD26 (22.8 h), a plan fitted on the
// first 2.3 h saw the median pod's peak rise by 8 GB afterwards; fitted on 11.4 h, by none.
// A fit part shorter than the period of that cycle cannot contain it, and a test part
// shorter than it cannot show it, so a guarantee needs two full days: one to fit, one to test.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpufit/backtest/backtest.h"

namespace gpufit {

enum class StrategyVerdict { kHeld, kDidNotHold, kProvisional, kNotTested };
// "held", "did not hold", "provisional", "not tested".
std::string_view VerdictName(StrategyVerdict v);

struct StrategyStatus {
  std::string strategy;  // "colocation", "right_sizing", "fleet", "lending", "mig"
  StrategyVerdict verdict = StrategyVerdict::kNotTested;
  std::string why;  // one sentence with the figures behind the verdict
};

// The statuses of `backtest`, in the order above (mig only with options.mig_isolation); a
// provisional verdict's why names Backtest::window_hours.
std::vector<StrategyStatus> Statuses(const Backtest& backtest);
// The one named `strategy`: a reference into `statuses`, which must outlive it. Throws
// std::out_of_range when none is (a caller asking for a strategy it did not plan).
const StrategyStatus& StatusOf(const std::vector<StrategyStatus>& statuses, std::string_view strategy);

}  // namespace gpufit
