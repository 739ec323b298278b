// gpufit backtest as a library call: the walk-forward backtest of the co-location plan on
// every split of the telemetry, and the GPUs-vs-overflow trade-off at several memory risks
// (backtest/backtest.h), as JSON and Markdown with the verdict the exit code reports.
#pragma once

#include <string>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/pipeline/plan_pipeline.h"

namespace gpufit::pipeline {

struct BacktestStudy {
  std::string json, markdown;
  bool did_not_hold = false;           // a strategy did not hold on a held-out split
  bool colocation_not_tested = false;  // nothing was replayed: the co-location is untested
};

// The study of in.telemetry (required; named in.origin.name) with in.options on `catalog`, at
// each memory risk of `risks` (each in [0, 1)) and the options' own. in.sharing settles as
// ApplySharing (sharing.h) does; nodes and pods are not read. Errors: ApplySharing's, the
// backtest's.
Result<BacktestStudy> RunBacktestStudy(PlanInputs in, const GpuCatalog& catalog, const std::vector<double>& risks);

}  // namespace gpufit::pipeline
