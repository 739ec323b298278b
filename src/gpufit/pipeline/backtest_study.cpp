#include "gpufit/pipeline/backtest_study.h"

#include <fmt/format.h>

#include <algorithm>

#include "gpufit/backtest/backtest.h"
#include "gpufit/backtest/status.h"
#include "gpufit/pipeline/sharing.h"

namespace gpufit::pipeline {

Result<BacktestStudy> RunBacktestStudy(PlanInputs in, const GpuCatalog& catalog, const std::vector<double>& risks) {
  const Telemetry& tel = *in.telemetry;
  in.nodes.reset();
  in.pods.reset();
  in.options.reserve = MiB{in.reserve_mib};
  if (Result<void> ok = ApplySharing(in, catalog, &tel); !ok) return ok.error();
  const PlanOptions& options = in.options;
  // The backtest of the options given is one row of the curve: computed once.
  std::vector<double> all = risks;
  if (options.robust && std::find(all.begin(), all.end(), options.memory_risk) == all.end())
    all.push_back(options.memory_risk);
  const Result<std::vector<TradeoffRow>> curve = RunTradeoff(tel, catalog, options, all, EverySplit(tel));
  if (!curve) return curve.error();
  const auto row = std::find_if(curve->begin(), curve->end(), [&](const TradeoffRow& r) {
    return options.robust ? r.robust && r.memory_risk == options.memory_risk : !r.robust;
  });
  const Backtest b{options, row->splits, tel.window_hours()};
  BacktestStudy out;
  out.markdown = fmt::format("# gpufit backtest\n\nTelemetry: {} ({} pods, {:.1f} h), {} on {}.\n{}", in.origin.name,
                             tel.pods.size(), tel.window_hours(), options.robust ? "robust envelope" : "in-sample rule",
                             options.target_gpu, BacktestToMarkdown(b, &*curve));
  out.json = BacktestToJson(b, &*curve);
  // Held or provisional otherwise (status.h).
  const std::vector<StrategyStatus> statuses = Statuses(b);
  out.did_not_hold = std::any_of(statuses.begin(), statuses.end(),
                                 [](const StrategyStatus& s) { return s.verdict == StrategyVerdict::kDidNotHold; });
  out.colocation_not_tested = StatusOf(statuses, "colocation").verdict == StrategyVerdict::kNotTested;
  return out;
}

}  // namespace gpufit::pipeline
