// What spot would save a set of training jobs: each job gets DecideSpot's recommendation
// (spot, on-demand, or spot with a switch before its deadline), the set is simulated
// (sim/training_sim.h) once so and once all on on-demand, under the same seed, and the two
// runs are compared.
#pragma once

#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/cluster.h"
#include "gpufit/sim/training_sim.h"

namespace gpufit {

struct SpotStudyRow {
  std::string market;  // label of the interruption rate
  double interruptions_per_hour = 0;
  int spot_jobs = 0, fallback_jobs = 0, on_demand_jobs = 0;
  TrainingSimResult recommended, on_demand;
  double CostRatio() const { return on_demand.cost.value > 0 ? recommended.cost.value / on_demand.cost.value : 0; }
};

// prices: one per job (USD per GPU-hour). options.interruptions is replaced by `model`.
// A job whose recommendation needs spot but that no spot node can host runs on on-demand.
// Errors: kInvalidArgument for a prices list of the wrong length or a job no on-demand
// node can host; SimulateTraining's errors otherwise.
Result<SpotStudyRow> RunSpotStudy(const std::vector<TrainingNode>& nodes, const std::vector<TrainingJob>& jobs,
                                  const std::vector<GpuPrices>& prices, const InterruptionModel& model,
                                  const std::string& market, TrainingSimOptions options,
                                  const SpotDecisionOptions& decision = {});

// A cloud offering every node both ways: each GPU node once as spot (`<name>-spot`) and
// once as on-demand (`<name>-od`). CPU-only nodes are left out.
std::vector<TrainingNode> SpotAndOnDemandPools(const std::vector<NodeSpec>& nodes);

std::string SpotStudyToMarkdown(const std::vector<SpotStudyRow>& rows, const std::string& source);
std::string SpotStudyToJson(const std::vector<SpotStudyRow>& rows, const std::string& source);

}  // namespace gpufit
