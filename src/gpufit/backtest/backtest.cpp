#include "gpufit/backtest/backtest.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "gpufit/backtest/status.h"
#include "gpufit/optimize/time_multiplex.h"
#include "gpufit/plan/replay.h"

namespace gpufit {
namespace {

Result<SplitOutcome> RunSplit(const Telemetry& telemetry, const GpuCatalog& catalog, const PlanOptions& options,
                              const WalkForwardSplit& split) {
  SplitOutcome out;
  out.split = split;
  const std::vector<std::string> fit_pods = PodsRunningIn(telemetry, split.fit_begin, split.fit_end);
  const std::vector<std::string> test_pods = PodsRunningIn(telemetry, split.test_begin, split.test_end);
  std::vector<std::string> both;
  std::set_intersection(fit_pods.begin(), fit_pods.end(), test_pods.begin(), test_pods.end(), std::back_inserter(both));
  std::set_difference(test_pods.begin(), test_pods.end(), fit_pods.begin(), fit_pods.end(),
                      std::back_inserter(out.unplanned));
  std::set_difference(fit_pods.begin(), fit_pods.end(), test_pods.begin(), test_pods.end(),
                      std::back_inserter(out.dropped));
  out.planned_pods = both.size();
  out.fit_hours = static_cast<double>(split.fit_end - split.fit_begin) * telemetry.step_s / 3600;
  out.test_hours = static_cast<double>(split.test_end - split.test_begin) * telemetry.step_s / 3600;
  if (both.empty()) return out;
  const Telemetry fit = SliceTelemetry(telemetry, split.fit_begin, split.fit_end, &both);
  const Telemetry test = SliceTelemetry(telemetry, split.test_begin, split.test_end, &both);
  PlanOptions fit_options = options;
  fit_options.lp_bound_seconds = 0;  // a fit's lower bound is not reported
  Result<Plan> plan = BuildPlan(fit, catalog, fit_options, split.label);
  if (!plan) return plan.error();
  out.gpus = plan->totals.gpus_after;
  for (const GpuReplay& g : plan->replay.gpus) out.shared_gpus += g.pods.size() > 1;
  out.memory_margin_mib = plan->memory_margin_mib;

  // Both slices hold exactly `both`, in name order: fit and test indices agree.
  std::vector<std::vector<std::size_t>> groups;
  for (const GpuReplay& g : plan->replay.gpus) groups.push_back(g.pods);
  const Replay r = ReplayColocation(test, groups, plan->capacity_mib, options.max_collision_share);
  const std::int64_t limit = CollisionLimit(test.samples, options.max_collision_share);
  for (const GpuReplay& g : r.gpus) {
    out.overflow_samples += g.memory_overflows;
    out.overflow_gpus += g.memory_overflows > 0;
    out.worst_over_mib = std::max(out.worst_over_mib, g.peak_mib - plan->capacity_mib);
    out.max_collision_share = std::max(out.max_collision_share, g.collision_share);
    out.gpus_over_collision_limit += g.collisions > limit;
  }
  out.worst_over_mib = std::max(0.0, out.worst_over_mib);
  out.fleet_gpus = plan->fleet.gpus.size() + plan->fleet.kept_gpus;
  out.fleet_usd_per_month = plan->fleet.usd_per_month;
  out.fleet = ReplayFleet(test, plan->fleet, options.max_collision_share);
  if (!plan->memory_cap_mib.empty()) {
    const CapReplay caps = ReplayCaps(test, {plan->memory_cap_mib.begin(), plan->memory_cap_mib.end()});
    out.cap_overflow_samples = caps.samples_over;
    out.over_cap = caps.pods;
  }
  if (!r.gpus.empty())
    out.overflow_gpu_hours_share = static_cast<double>(out.overflow_samples) /
                                   (static_cast<double>(r.gpus.size()) * static_cast<double>(test.samples));

  for (std::size_t i = 0; i < both.size(); ++i) {
    const RightSizing& rs = plan->right_sizing[i];
    if (!rs.recommended_gpu) continue;
    const Result<GpuModel> gpu = catalog.Find(*rs.recommended_gpu);
    if (!gpu) continue;
    // Right-sizing is judged on the pods it moved to another GPU; a pod kept on its current
    // GPU and outgrowing it contradicts the premise (Plan::above_current), not the rule.
    if (gpu->id == plan->current.id) continue;
    if (gpu->memory < plan->current.memory) ++out.right_sized;
    const auto& fb = test.pods[i].fb_used_mib;
    const double peak = *std::max_element(fb.begin(), fb.end());
    if (peak > static_cast<double>(gpu->memory.value))
      out.outgrown.push_back(
          fmt::format("{}: test peak {:.0f} MiB > {} {} MiB", both[i], peak, gpu->id, gpu->memory.value));
  }

  TimeMultiplexOptions tm;
  tm.gpu_id = plan->target.id;
  tm.fleet_gpus = static_cast<int>(plan->replay.gpus.size() + plan->too_big.size());
  tm.excluded_pods = plan->kept_on_current_gpu();
  tm.gpu_memory_mib = plan->capacity_mib;
  tm.workload_by_pod = options.workload_by_pod;
  const Result<TimeMultiplexPlan> lend = PlanTimeMultiplex(fit, {}, tm);
  if (lend && lend->has_window && lend->lent_gpus > 0) {
    out.lending = true;
    out.lent_gpus = lend->lent_gpus;
    const TimeMultiplexReplay lr = ReplayTimeMultiplex(test, *lend);
    out.lending_samples = lr.lent_samples;
    out.lending_over_capacity = lr.over_capacity;
  }
  return out;
}

Result<std::vector<SplitOutcome>> RunSplits(const Telemetry& telemetry, const GpuCatalog& catalog,
                                            const PlanOptions& options, const std::vector<WalkForwardSplit>& splits) {
  if (splits.empty()) return InvalidArgument("backtest: the telemetry has fewer than 2 samples: nothing to hold out");
  std::vector<SplitOutcome> out;
  for (const WalkForwardSplit& s : splits) {
    Result<SplitOutcome> o = RunSplit(telemetry, catalog, options, s);
    if (!o) return o.error();
    out.push_back(std::move(*o));
  }
  return out;
}

}  // namespace

bool Backtest::safe() const {
  const StrategyVerdict v = StatusOf(Statuses(*this), "colocation").verdict;
  return v == StrategyVerdict::kHeld || v == StrategyVerdict::kProvisional;
}

std::string Backtest::Guarantee() const {
  if (splits.empty()) return "No backtest: the window is too short to hold any part out.";
  std::vector<std::string> verdicts;
  for (const StrategyStatus& s : Statuses(*this))
    verdicts.push_back(fmt::format("{} {}", s.strategy, VerdictName(s.verdict)));
  double fit = 0;
  for (const SplitOutcome& s : splits) fit = std::max(fit, s.fit_hours);
  return fmt::format(
      "Backtest on {} split{} (each plan fitted on the earlier part, at most {:.1f} h, and replayed on a later part it "
      "never saw): {}. It covers the pods seen in both parts, not new pods or load beyond what the data showed.",
      splits.size(), splits.size() == 1 ? "" : "s", fit, fmt::join(verdicts, ", "));
}

Result<Backtest> RunBacktest(const Telemetry& telemetry, const GpuCatalog& catalog, const PlanOptions& options) {
  return RunBacktest(telemetry, catalog, options, WalkForwardSplits(telemetry));
}

Result<Backtest> RunBacktest(const Telemetry& telemetry, const GpuCatalog& catalog, const PlanOptions& options,
                             const std::vector<WalkForwardSplit>& splits) {
  Result<std::vector<SplitOutcome>> outcomes = RunSplits(telemetry, catalog, options, splits);
  if (!outcomes) return outcomes.error();
  return Backtest{options, std::move(*outcomes), telemetry.window_hours()};
}

std::vector<WalkForwardSplit> EverySplit(const Telemetry& telemetry) {
  std::vector<WalkForwardSplit> splits = WalkForwardSplits(telemetry);
  const std::size_t n = telemetry.samples;
  // Under two days (fit parts shorter than a day), also the time-reversed half.
  const bool rolling = !splits.empty() && static_cast<double>(splits.front().fit_end) * telemetry.step_s < kFullDayS;
  if (rolling && n >= 2) splits.push_back({"second half -> first half", n / 2, n, 0, n / 2});
  return splits;
}

Result<std::vector<TradeoffRow>> RunTradeoff(const Telemetry& telemetry, const GpuCatalog& catalog,
                                             const PlanOptions& options, const std::vector<double>& risks,
                                             const std::vector<WalkForwardSplit>& splits) {
  std::vector<TradeoffRow> rows;
  PlanOptions o = options;
  o.robust = false;
  Result<std::vector<SplitOutcome>> in_sample = RunSplits(telemetry, catalog, o, splits);
  if (!in_sample) return in_sample.error();
  rows.push_back({"in-sample", false, 0, std::move(*in_sample)});
  o.robust = true;
  for (double risk : risks) {
    o.memory_risk = risk;
    Result<std::vector<SplitOutcome>> s = RunSplits(telemetry, catalog, o, splits);
    if (!s) return s.error();
    rows.push_back({fmt::format("robust, memory risk {:g}", risk), true, risk, std::move(*s)});
  }
  return rows;
}

}  // namespace gpufit
