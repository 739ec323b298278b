// JSON and Markdown of a walk-forward backtest (the `backtest` section of plan.json,
// docs/plan-json.md).
#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "gpufit/backtest/backtest.h"
#include "gpufit/backtest/status.h"

namespace gpufit {
namespace {

using nlohmann::json;

json ToJson(const SplitOutcome& s, double share) {
  return {{"split", s.split.label},
          {"fit_samples", {s.split.fit_begin, s.split.fit_end}},
          {"test_samples", {s.split.test_begin, s.split.test_end}},
          {"fit_hours", s.fit_hours},
          {"test_hours", s.test_hours},
          {"planned_pods", s.planned_pods},
          {"unplanned_pods", s.unplanned},
          {"dropped_pods", s.dropped},
          {"gpus", s.gpus},
          {"shared_gpus", s.shared_gpus},
          {"memory_margin_mib", s.memory_margin_mib},
          {"colocation",
           {{"overflow_samples", s.overflow_samples},
            {"overflow_gpus", s.overflow_gpus},
            {"worst_over_mib", s.worst_over_mib},
            {"overflow_gpu_hours_share", s.overflow_gpu_hours_share},
            {"max_collision_share", s.max_collision_share},
            {"gpus_over_collision_limit", s.gpus_over_collision_limit},
            {"cap_overflow_samples", s.cap_overflow_samples},
            {"over_cap", s.over_cap}}},
          {"fleet",
           {{"gpus", s.fleet_gpus},
            {"usd_per_month", s.fleet_usd_per_month},
            {"overflow_samples", s.fleet.memory_overflows},
            {"overflow_gpus", s.fleet.overflow_gpus},
            {"worst_over_mib", std::max(0.0, s.fleet.worst_over_mib)},
            {"max_collision_share", s.fleet.max_collision_share},
            {"gpus_over_collision_limit", s.fleet.gpus_over_collision_limit}}},
          {"right_sizing", {{"right_sized_pods", s.right_sized}, {"outgrown", s.outgrown}}},
          {"lending",
           {{"planned", s.lending},
            {"lent_gpus", s.lent_gpus},
            {"lending_samples", s.lending_samples},
            {"over_capacity_samples", s.lending_over_capacity}}},
          {"safe", s.safe(share)}};
}

template <class... Args>
void Out(std::string& s, fmt::format_string<Args...> f, Args&&... args) {
  fmt::format_to(std::back_inserter(s), f, std::forward<Args>(args)...);
}

void Row(std::string& md, const std::string& rule, const SplitOutcome& s, double share) {
  Out(md, "| {} | {} | {} | {} | {:.0f} | {} | {} | {:.0f} | {:.2f}% | {} | {} | {} / {} / {:.2f}% | {} |\n", rule,
      s.split.label, s.planned_pods, s.gpus, s.memory_margin_mib, s.overflow_samples, s.overflow_gpus, s.worst_over_mib,
      100 * s.max_collision_share, s.outgrown.size(), s.lending ? fmt::format("{}", s.lending_over_capacity) : "-",
      s.fleet_gpus, s.fleet.memory_overflows, 100 * s.fleet.max_collision_share,
      s.planned_pods == 0 || s.shared_gpus == 0 ? "not tested"
      : s.safe(share)                           ? "yes"
                                                : "NO");
}

constexpr const char* kHeader =
    "| rule | split | pods | GPUs | margin MiB | overflow samples | GPUs overflowing | worst MiB over | worst "
    "collision share | outgrown right-sized | lending over capacity | mixed fleet: GPUs / overflow samples / worst "
    "collision share | co-location safe |\n"
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";

json StatusJson(const Backtest& b) {
  json out = json::object();
  for (const StrategyStatus& s : Statuses(b)) out[s.strategy] = {{"status", VerdictName(s.verdict)}, {"why", s.why}};
  return out;
}

}  // namespace

std::string BacktestToJson(const Backtest& b, const std::vector<TradeoffRow>* tradeoff) {
  json splits = json::array();
  for (const SplitOutcome& s : b.splits) splits.push_back(ToJson(s, b.options.max_collision_share));
  json j = {{"method", "walk-forward: plan on the fit part with the same options, replay the test part"},
            {"splits", splits},
            {"safe", b.safe()},
            {"status", StatusJson(b)},
            {"guarantee", b.Guarantee()}};
  if (tradeoff != nullptr) {
    json rows = json::array();
    for (const TradeoffRow& r : *tradeoff) {
      json rs = json::array();
      for (const SplitOutcome& s : r.splits) rs.push_back(ToJson(s, b.options.max_collision_share));
      rows.push_back({{"rule", r.rule}, {"memory_risk", r.memory_risk}, {"splits", rs}});
    }
    j["tradeoff"] = rows;
  }
  return j.dump(2) + "\n";
}

std::string BacktestToMarkdown(const Backtest& b, const std::vector<TradeoffRow>* tradeoff, GuaranteeAt guarantee) {
  std::string md;
  Out(md, "\n## Backtest (walk-forward: fit on earlier telemetry, replay later telemetry)\n\n");
  if (guarantee == GuaranteeAt::kSection) Out(md, "{}\n\n", b.Guarantee());
  for (const StrategyStatus& s : Statuses(b)) Out(md, "- **{}: {}**: {}.\n", s.strategy, VerdictName(s.verdict), s.why);
  Out(md, "\n");
  Out(md, "{}", kHeader);
  const std::string rule =
      b.options.robust ? fmt::format("robust, memory risk {:g}", b.options.memory_risk) : std::string("in-sample");
  for (const SplitOutcome& s : b.splits) Row(md, rule, s, b.options.max_collision_share);
  std::size_t unplanned = 0, dropped = 0;
  for (const SplitOutcome& s : b.splits) unplanned += s.unplanned.size(), dropped += s.dropped.size();
  if (unplanned + dropped > 0)
    Out(md,
        "\nPods only in a test part (unplanned: they need a new decision): {}; pods that ended in a fit part "
        "(dropped from both sides): {}; counted per split. Names in the JSON.\n",
        unplanned, dropped);
  for (const SplitOutcome& s : b.splits)
    for (const std::string& o : s.outgrown) Out(md, "\nOutgrown ({}): {}", s.split.label, o);
  if (tradeoff != nullptr) {
    Out(md, "\n\n### Trade-off: GPUs vs hold-out overflow\n\n{}", kHeader);
    for (const TradeoffRow& r : *tradeoff)
      for (const SplitOutcome& s : r.splits) Row(md, r.rule, s, b.options.max_collision_share);
  }
  Out(md, "\n");
  return md;
}

}  // namespace gpufit
