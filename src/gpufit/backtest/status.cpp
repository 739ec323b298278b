#include "gpufit/backtest/status.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

namespace gpufit {
namespace {

// Whether every split fitted on at least a full day.
bool FullDays(const Backtest& b) {
  return !b.splits.empty() && std::all_of(b.splits.begin(), b.splits.end(),
                                          [](const SplitOutcome& s) { return s.fit_hours * 3600 >= kFullDayS - 1e-6; });
}

// A strategy whose replays broke nothing: held on whole days, else provisional, with the
// history a guarantee needs (status.h).
StrategyStatus Clean(const Backtest& b, std::string strategy, const std::string& replayed) {
  if (FullDays(b)) return {std::move(strategy), StrategyVerdict::kHeld, replayed};
  double fit = 0;
  for (const SplitOutcome& s : b.splits) fit = std::max(fit, s.fit_hours);
  return {std::move(strategy), StrategyVerdict::kProvisional,
          fmt::format("{}; fitted on at most {:.1f} h: a guarantee needs a full day to fit and the next to test (48 h "
                      "of telemetry; have {:.1f} h), because load follows the day",
                      replayed, fit, b.window_hours)};
}

std::string Splits(std::size_t n) { return fmt::format("{} split{}", n, n == 1 ? "" : "s"); }

StrategyStatus ColocationStatus(const Backtest& b) {
  const std::string name = "colocation";
  if (b.splits.empty()) return {name, StrategyVerdict::kNotTested, "the window is too short to hold a part out"};
  std::int64_t overflows = 0, over_cap = 0;
  std::size_t tested = 0, shared = 0;
  double worst_share = 0, worst_over = 0, test_hours = 0;  // test_hours: the longest test part
  for (const SplitOutcome& o : b.splits) {
    if (o.planned_pods == 0 || o.shared_gpus == 0) continue;
    ++tested;
    shared = std::max(shared, o.shared_gpus);
    test_hours = std::max(test_hours, o.test_hours);
    overflows += o.overflow_samples;
    over_cap += o.cap_overflow_samples;
    worst_share = std::max(worst_share, o.max_collision_share);
    worst_over = std::max(worst_over, o.worst_over_mib);
  }
  if (tested == 0) {
    const bool any_pods =
        std::any_of(b.splits.begin(), b.splits.end(), [](const SplitOutcome& o) { return o.planned_pods > 0; });
    return {name, StrategyVerdict::kNotTested,
            any_pods ? "no split's plan shared a GPU, so no co-location was replayed"
                     : "no pod ran in both the fit and the test part of any split, so nothing was replayed"};
  }
  if (overflows > 0 || over_cap > 0 || worst_share > b.options.max_collision_share + 1e-12)
    return {name, StrategyVerdict::kDidNotHold,
            fmt::format("{} memory-overflow samples (worst {:.0f} MiB over){}, worst GPU collides on {:.2f}% of "
                        "samples (limit {:.2f}%)",
                        overflows, worst_over,
                        b.options.memory_caps ? fmt::format(", {} samples over a memory cap", over_cap) : "",
                        100 * worst_share, 100 * b.options.max_collision_share)};
  return Clean(b, name,
               fmt::format("{} of {} replayed (up to {:.1f} h held out and {} shared GPUs): 0 memory-overflow "
                           "samples, worst GPU collides on {:.2f}% of samples",
                           tested, Splits(b.splits.size()), test_hours, shared, 100 * worst_share));
}

StrategyStatus RightSizingStatus(const Backtest& b) {
  const std::string name = "right_sizing";
  std::size_t right_sized = 0, outgrown = 0;
  for (const SplitOutcome& o : b.splits) right_sized += o.right_sized, outgrown += o.outgrown.size();
  if (outgrown > 0)
    return {name, StrategyVerdict::kDidNotHold,
            fmt::format("{} pods outgrew the GPU right-sizing chose for them ({} were sent to a smaller one)", outgrown,
                        right_sized)};
  if (right_sized == 0)
    return {name, StrategyVerdict::kNotTested,
            "no split's plan sent a pod to a GPU with less memory than its current one"};
  return Clean(b, name,
               fmt::format("{} pods right-sized to a smaller GPU stayed within it on every test part", right_sized));
}

StrategyStatus FleetStatus(const Backtest& b) {
  const std::string name = "fleet";
  std::int64_t overflows = 0;
  std::size_t over_limit = 0, tested = 0;
  double worst_over = 0;
  for (const SplitOutcome& o : b.splits) {
    if (o.planned_pods == 0) continue;
    ++tested;
    overflows += o.fleet.memory_overflows;
    over_limit += o.fleet.gpus_over_collision_limit;
    worst_over = std::max(worst_over, o.fleet.worst_over_mib);
  }
  if (tested == 0)
    return {name, StrategyVerdict::kNotTested, "no pod ran in both the fit and the test part of any split"};
  if (overflows > 0 || over_limit > 0)
    return {name, StrategyVerdict::kDidNotHold,
            fmt::format("{} memory-overflow samples (worst {:.0f} MiB over), {} GPU{} over the collision limit",
                        overflows, std::max(0.0, worst_over), over_limit, over_limit == 1 ? "" : "s")};
  return Clean(b, name, Splits(tested) + " replayed without a violation");
}

StrategyStatus LendingStatus(const Backtest& b) {
  const std::string name = "lending";
  std::size_t lent = 0, samples = 0, over = 0;
  for (const SplitOutcome& o : b.splits)
    if (o.lending) ++lent, samples += o.lending_samples, over += o.lending_over_capacity;
  if (lent == 0) return {name, StrategyVerdict::kNotTested, "no fit part had a window to lend GPUs in"};
  if (samples == 0) return {name, StrategyVerdict::kNotTested, "no test part reached a lending window"};
  if (over > 0)
    return {name, StrategyVerdict::kDidNotHold,
            fmt::format("{} of {} lending samples needed more GPUs than the fleet kept", over, samples)};
  return Clean(b, name, fmt::format("{} lending samples within the fleet on {}", samples, Splits(lent)));
}

}  // namespace

std::string_view VerdictName(StrategyVerdict v) {
  switch (v) {
    case StrategyVerdict::kHeld:
      return "held";
    case StrategyVerdict::kDidNotHold:
      return "did not hold";
    case StrategyVerdict::kProvisional:
      return "provisional";
    case StrategyVerdict::kNotTested:
      return "not tested";
  }
  return "not tested";
}

std::vector<StrategyStatus> Statuses(const Backtest& backtest) {
  std::vector<StrategyStatus> out = {ColocationStatus(backtest), RightSizingStatus(backtest), FleetStatus(backtest),
                                     LendingStatus(backtest)};
  if (backtest.options.mig_isolation)
    out.push_back(
        {"mig", StrategyVerdict::kNotTested, "the backtest replays no MIG layout; see the plan's in-sample check"});
  return out;
}

const StrategyStatus& StatusOf(const std::vector<StrategyStatus>& statuses, std::string_view strategy) {
  for (const StrategyStatus& s : statuses)
    if (s.strategy == strategy) return s;
  throw std::out_of_range("no status for " + std::string(strategy));
}

}  // namespace gpufit
