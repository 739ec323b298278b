// Walk-forward backtest of a plan: build it on the fit part of the telemetry with the same
// options, then replay the test part (data the plan never saw) against it.
//
// Pods: those running in both parts are planned and replayed; those running only in the
// test part are `unplanned` (listed: a new pod needs a new decision); those that ended in
// the fit part are dropped from both sides.
//
// Measured on the test part, per split:
//  * co-location: samples where a shared GPU's summed memory exceeds its capacity (GPU
//    memory - reserve; the out-of-memory line, not the packing capacity), GPUs with any,
//    the worst MiB over, and the worst GPU's share of samples whose summed duty cycle
//    exceeds 100% (plan/replay.h), GPUs above the allowed share;
//  * the mixed-fleet plan: the same per GPU at its model's line, duty scaled (ReplayFleet);
//    it does not enter `safe` (a failed fleet is not recommended, the same-model plan is);
//  * right-sizing: pods whose test peak exceeds the memory of the GPU recommended for
//    them; right_sized counts those sent to a GPU with less memory than their current one;
//  * lending (optimize/time_multiplex.h): the lending plan made on the fit part with the
//    fit plan's fleet, replayed on the test part: samples where needed + lent > fleet.
// Errors: those of BuildPlan on a fit part, kInvalidArgument when there is no split.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/backtest/split.h"
#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/model/telemetry.h"
#include "gpufit/plan/plan.h"

namespace gpufit {

struct SplitOutcome {
  WalkForwardSplit split;
  double fit_hours = 0, test_hours = 0;
  std::size_t planned_pods = 0;
  std::vector<std::string> unplanned;  // only in the test part
  std::vector<std::string> dropped;    // ended in the fit part
  std::size_t gpus = 0;                // the fit plan's GPUs after
  std::size_t shared_gpus = 0;         // its co-location groups
  double memory_margin_mib = 0;        // the fit plan's learned margin
  // Co-location on the test part.
  std::int64_t overflow_samples = 0;
  std::size_t overflow_gpus = 0;
  double worst_over_mib = 0;
  double overflow_gpu_hours_share = 0;  // overflow samples / (shared GPUs x test samples)
  double max_collision_share = 0;
  std::size_t gpus_over_collision_limit = 0;
  // With memory caps (PlanOptions::memory_caps): samples where a pod passed its fit-part cap.
  std::int64_t cap_overflow_samples = 0;
  std::vector<std::string> over_cap;  // "pod: peak X MiB > cap Y MiB"
  // Right-sizing on the test part.
  std::size_t right_sized = 0;
  std::vector<std::string> outgrown;  // "pod: test peak X MiB > gpu Y MiB"
  // The mixed-fleet plan (plan/fleet_plan.h) on the test part: each GPU at its own model's
  // line, its pods' duty scaled by their slowdown there.
  std::size_t fleet_gpus = 0;
  double fleet_usd_per_month = 0;
  FleetReplay fleet{};
  // Lending on the test part.
  bool lending = false;  // the fit part had a window to lend
  int lent_gpus = 0;
  std::size_t lending_samples = 0, lending_over_capacity = 0;

  // The same-model co-location's replay on this split: no memory overflow, no pod over its
  // cap, no GPU over the collision share. Right-sizing, the mixed fleet and lending are judged
  // apart (status.h).
  bool safe(double max_collision_share_allowed) const {
    return overflow_samples == 0 && cap_overflow_samples == 0 &&
           max_collision_share <= max_collision_share_allowed + 1e-12;
  }
};

struct Backtest {
  PlanOptions options;
  std::vector<SplitOutcome> splits;
  double window_hours = 0;  // the whole telemetry window the splits cut
  // The co-location verdict (status.h): held or provisional. False when it did not hold and
  // when nothing was tested (no split planned a shared GPU).
  bool safe() const;
  // One sentence per strategy: its verdict and why (status.h).
  std::string Guarantee() const;
};

Result<Backtest> RunBacktest(const Telemetry& telemetry, const GpuCatalog& catalog, const PlanOptions& options);
// The same on given splits (a test part may also come before its fit part: a time-reversed
// check of a short window).
Result<Backtest> RunBacktest(const Telemetry& telemetry, const GpuCatalog& catalog, const PlanOptions& options,
                             const std::vector<WalkForwardSplit>& splits);

// The walk-forward splits and, under 2 days, the reversed half too ("second half -> first
// half"): every split a short window allows, for `gpufit backtest`.
std::vector<WalkForwardSplit> EverySplit(const Telemetry& telemetry);

// The trade-off between GPUs and hold-out overflow: the backtest at each memory risk (and,
// first, the in-sample rule alone), one row per setting, each over `splits`.
struct TradeoffRow {
  std::string rule;  // "in-sample" or "robust, memory risk 0.05"
  bool robust = true;
  double memory_risk = 0;
  std::vector<SplitOutcome> splits;
};
Result<std::vector<TradeoffRow>> RunTradeoff(const Telemetry& telemetry, const GpuCatalog& catalog,
                                             const PlanOptions& options, const std::vector<double>& risks,
                                             const std::vector<WalkForwardSplit>& splits);

std::string BacktestToJson(const Backtest& backtest, const std::vector<TradeoffRow>* tradeoff = nullptr);
// Where the Markdown states the guarantee (Backtest::Guarantee), which is said once per
// document: at the head of the backtest section (`gpufit backtest`, where the section is the
// document), or not in it because the document's summary already leads with it (`plan`).
enum class GuaranteeAt { kSection, kSummaryLead };
std::string BacktestToMarkdown(const Backtest& backtest, const std::vector<TradeoffRow>* tradeoff = nullptr,
                               GuaranteeAt guarantee = GuaranteeAt::kSection);

}  // namespace gpufit
