#include "gpufit/sim/spot_study.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

namespace gpufit {

Result<SpotStudyRow> RunSpotStudy(const std::vector<TrainingNode>& nodes, const std::vector<TrainingJob>& jobs,
                                  const std::vector<GpuPrices>& prices, const InterruptionModel& model,
                                  const std::string& market, TrainingSimOptions options,
                                  const SpotDecisionOptions& decision) {
  if (prices.size() != jobs.size()) return InvalidArgument("{} prices for {} jobs", prices.size(), jobs.size());
  SpotStudyRow row;
  row.market = market;
  row.interruptions_per_hour = model.spot.interruptions_per_hour;
  options.interruptions = model;
  std::vector<JobRunPolicy> recommended, on_demand;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const SpotDecision d = DecideSpot(jobs[j], model, prices[j], decision);
    // Capacity the cluster lacks for this job is not an option.
    if (!AnyCanHost(nodes, jobs[j], CapacityType::kOnDemand)) {
      return InvalidArgument("job {}: no on-demand node has {} {} GPUs", jobs[j].name, jobs[j].gpu_count,
                             jobs[j].gpu_model.empty() ? std::string("free") : jobs[j].gpu_model);
    }
    if (d.choice != SpotChoice::kOnDemand && !AnyCanHost(nodes, jobs[j], CapacityType::kSpot)) {
      ++row.on_demand_jobs;
      recommended.push_back(ForcedPolicy(jobs[j], CapacityType::kOnDemand, model, prices[j]));
      on_demand.push_back(ForcedPolicy(jobs[j], CapacityType::kOnDemand, model, prices[j]));
      continue;
    }
    switch (d.choice) {
      case SpotChoice::kSpot:
        ++row.spot_jobs;
        break;
      case SpotChoice::kSpotWithFallback:
        ++row.fallback_jobs;
        break;
      case SpotChoice::kOnDemand:
        ++row.on_demand_jobs;
        break;
    }
    recommended.push_back(PolicyFromDecision(d, prices[j]));
    on_demand.push_back(ForcedPolicy(jobs[j], CapacityType::kOnDemand, model, prices[j]));
  }
  Result<TrainingSimResult> a = SimulateTraining(nodes, jobs, recommended, options);
  if (!a) return a.error();
  Result<TrainingSimResult> b = SimulateTraining(nodes, jobs, on_demand, options);
  if (!b) return b.error();
  row.recommended = std::move(*a);
  row.on_demand = std::move(*b);
  return row;
}

std::vector<TrainingNode> SpotAndOnDemandPools(const std::vector<NodeSpec>& nodes) {
  std::vector<TrainingNode> out;
  for (const NodeSpec& n : nodes) {
    if (n.gpu_count < 1) continue;
    out.push_back({.name = n.name + "-spot",
                   .gpu_count = n.gpu_count,
                   .gpu_model = n.gpu_model,
                   .capacity = CapacityType::kSpot});
    out.push_back({.name = n.name + "-od",
                   .gpu_count = n.gpu_count,
                   .gpu_model = n.gpu_model,
                   .capacity = CapacityType::kOnDemand});
  }
  return out;
}

std::string SpotStudyToMarkdown(const std::vector<SpotStudyRow>& rows, const std::string& source) {
  std::string md = fmt::format(
      "# Spot study: {}\n\nEach job as DecideSpot recommends vs all on on-demand, same seed. Cost = GPU-hours held x "
      "price.\n\n| spot interruptions | per node-hour | jobs spot / fallback / on-demand | cost | all on-demand | "
      "% of on-demand | lost GPU-h | on-demand lost GPU-h | interrupted runs | switched | deadline misses | mean "
      "completion "
      "h (on-demand) | utilization |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
      source);
  for (const SpotStudyRow& r : rows) {
    md += fmt::format(
        "| {} | {:.3g} | {} / {} / {} | {:.0f} USD | {:.0f} USD | {:.1f}% | {:.1f} | {:.1f} | {} | {} | {} | {:.2f} "
        "({:.2f}) | {:.3f}% |\n",
        r.market, r.interruptions_per_hour, r.spot_jobs, r.fallback_jobs, r.on_demand_jobs, r.recommended.cost.value,
        r.on_demand.cost.value, 100 * r.CostRatio(), r.recommended.lost_gpu_hours, r.on_demand.lost_gpu_hours,
        r.recommended.job_interruptions, r.recommended.switched, r.recommended.deadline_misses,
        r.recommended.mean_completion_h, r.on_demand.mean_completion_h, 100 * r.recommended.utilization);
  }
  return md;
}

std::string SpotStudyToJson(const std::vector<SpotStudyRow>& rows, const std::string& source) {
  const auto run = [](const TrainingSimResult& s) {
    return nlohmann::json{{"cost_usd", s.cost.value},
                          {"held_gpu_hours", s.held_gpu_hours},
                          {"useful_gpu_hours", s.useful_gpu_hours},
                          {"lost_gpu_hours", s.lost_gpu_hours},
                          {"checkpoint_gpu_hours", s.checkpoint_gpu_hours},
                          {"completed", s.completed},
                          {"unfinished", s.unfinished},
                          {"deadline_misses", s.deadline_misses},
                          {"switched_to_on_demand", s.switched},
                          {"spot_reclaims", s.spot_reclaims},
                          {"job_interruptions", s.job_interruptions},
                          {"hardware_failures", s.hardware_failures},
                          {"mean_completion_h", s.mean_completion_h},
                          {"makespan_h", s.makespan.count() / 3600},
                          {"utilization", s.utilization}};
  };
  nlohmann::json out = nlohmann::json::array();
  for (const SpotStudyRow& r : rows) {
    out.push_back(
        {{"market", r.market},
         {"interruptions_per_node_hour", r.interruptions_per_hour},
         {"jobs", {{"spot", r.spot_jobs}, {"spot_with_fallback", r.fallback_jobs}, {"on_demand", r.on_demand_jobs}}},
         {"cost_ratio", r.CostRatio()},
         {"recommended", run(r.recommended)},
         {"all_on_demand", run(r.on_demand)}});
  }
  return nlohmann::json{{"source", source}, {"rows", out}}.dump(2) + "\n";
}

}  // namespace gpufit
