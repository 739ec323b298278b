// The ancillary stage: the network check's series, the model loads, and the ancillary plan
// (container right-sizing, model loading, night lending) of a co-location plan.
#include <filesystem>

#include "gpufit/ingest/files/gentd26_serving_reader.h"
#include "gpufit/pipeline/internal/stages.h"

namespace gpufit::pipeline::internal {

Result<void> AncillaryStage::Run(PlanContext& c) const {
  if (!c.plan) return {};
  PlanInputs& in = c.in;
  Result<std::optional<ClusterNetwork>> n = ReadClusterNetwork(in.origin, *in.telemetry, c.pods());
  if (!n) return n.error();
  // No network series at all (no cAdvisor counters, no node-exporter): no network check.
  if (*n && (!(*n)->pods.empty() || !(*n)->links.empty())) c.network = std::move(*n);

  // Model loads: the file given, else the GenTD26 folder's own.
  std::string loads_path = in.model_loads;
  if (loads_path.empty() && !in.origin.path.empty() && std::filesystem::is_directory(in.origin.path)) {
    const auto candidate = std::filesystem::path(in.origin.path) / "basemodel_update_latency_anon.csv";
    if (std::filesystem::exists(candidate)) loads_path = candidate.string();
  }
  std::optional<std::vector<ModelLoad>> loads;
  if (!loads_path.empty()) {
    Result<std::vector<ModelLoad>> l = ReadGenTd26ModelLoads(loads_path);
    if (!l) return l.error();
    loads = std::move(*l);
  }

  in.rightsize.throttled_ratio = in.options.starvation.throttled_ratio;
  in.rightsize.min_window_hours = in.options.min_window_hours;
  const std::optional<ClusterNetwork>& network = c.network;
  Result<AncillaryPlan> a = BuildAncillaryPlan(
      {.telemetry = in.telemetry,
       .plan = &*c.plan,
       .catalog = &c.catalog,
       .nodes = c.nodes(),
       .pods = c.pods(),
       .model_loads = loads ? &*loads : nullptr,
       .model_loads_source = loads_path,
       // Night lending: the file's jobs (found ones already run).
       .jobs = c.training && (!in.training_jobs.empty() || in.demo_training) ? &c.training->workload.jobs : nullptr,
       .rightsize = in.rightsize,
       .model_loading = in.model_loading,
       .time_multiplex = {},
       .prices = c.pricing && c.pricing->prices ? &*c.pricing->prices : nullptr,
       .pod_nodes = network ? &network->pod_nodes : nullptr,
       .network = network ? &network->pods : nullptr,
       .links = network ? &network->links : nullptr});
  if (!a) return a.error();
  c.sections.emplace_back("ancillary", std::make_pair(AncillaryPlanToJson(*a), AncillaryPlanToMarkdown(*a)));
  c.ancillary = std::move(*a);
  return {};
}

}  // namespace gpufit::pipeline::internal
