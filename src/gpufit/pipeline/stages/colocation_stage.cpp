// The colocation stage: each pod's GPU today, pre-allocating servers resized, the sharing
// back end, the co-location fit with its mixed fleet, and its walk-forward backtest.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "gpufit/backtest/backtest.h"
#include "gpufit/pipeline/internal/stages.h"
#include "gpufit/pipeline/sharing.h"
#include "gpufit/plan/current_gpus.h"
#include "gpufit/plan/kube_manifests.h"
#include "gpufit/plan/preallocated.h"
#include "gpufit/plan/workload_keys.h"
#include "gpufit/plan/workload_profiles.h"

namespace gpufit::pipeline::internal {

Result<void> ColocationStage::Run(PlanContext& c) const {
  PlanInputs& in = c.in;
  const GpuCatalog* catalog = &c.catalog;
  const std::optional<std::vector<KubeNode>>& nodes = in.nodes;
  const std::optional<std::vector<KubePod>>& pods = in.pods;
  if (in.telemetry) {
    // Each pod's GPU today: its modelName, its node's product label, else --current-gpu/--gpu.
    CurrentGpus current = ResolveCurrentGpus({.telemetry = in.telemetry,
                                              .catalog = catalog,
                                              .pods = c.pods(),
                                              .nodes = c.nodes(),
                                              .override_id = in.options.current_gpu,
                                              .fallback_id = in.options.target_gpu});
    if (current.named_by_data > 0) {
      // The plan's one "current" model (headlines, prices) is the one most pods run on, by
      // the data where it names them: an override the data contradicts does not win here.
      in.options.current_gpu = current.most_common;
      in.options.current_gpu_of = std::move(current.id_of);
      in.options.current_gpu_source_of = std::move(current.source_of);
    }
    if (in.options.target_gpu.empty() && !in.options.current_gpu.empty()) {  // no --gpu: right-size on the same model
      in.options.target_gpu = in.options.current_gpu;
      std::map<std::string, int> pods_on;  // the models the data names, with their pod counts
      for (const auto& [pod, id] : in.options.current_gpu_of)
        if (!id.empty()) ++pods_on[id];
      std::string found;
      for (const auto& [id, n] : pods_on) found += fmt::format("{}{} ({} pods)", found.empty() ? "" : ", ", id, n);
      // With no model in the data the target is --current-gpu's, not one that most pods run on.
      c.Note(found.empty() ? fmt::format("GPU models found: none in the telemetry or the nodes' labels; target {}, "
                                         "as --current-gpu says  [--gpu]",
                                         in.options.target_gpu)
                           : fmt::format("GPU models found: {}; target {}, the model most pods run on  [--gpu]", found,
                                         in.options.target_gpu));
    }
    for (const std::string& w : current.warnings) c.Note("warning: " + w);
    in.options.current_gpu_warnings = std::move(current.warnings);
  }
  // Servers that pre-allocate GPU memory, sized by their KV cache use: the plan (and its
  // backtest) sees the memory each will hold with the new setting (plan/preallocated.h).
  Preallocation preallocated;
  if (in.telemetry) {
    const auto memory_of = [&](const PodSeries& p) {
      const auto it = in.options.current_gpu_of.find(p.pod);
      const Result<GpuModel> m = catalog->Find(it != in.options.current_gpu_of.end() ? it->second
                                               : in.options.current_gpu.empty()      ? in.options.target_gpu
                                                                                     : in.options.current_gpu);
      return m ? static_cast<double>(m->memory.value) : 0.0;
    };
    preallocated =
        SizePreallocatedServers(*in.telemetry, 1 - in.options.max_collision_share, in.options.headroom, memory_of);
    if (AnySized(preallocated)) {
      c.sized_telemetry = *in.telemetry;
      ApplyPreallocation(preallocated, *c.sized_telemetry);
      in.telemetry = &*c.sized_telemetry;
    }
  }
  const Telemetry* telemetry = in.telemetry;
  if (telemetry && nodes) {
    // Starved pods get at most what a node of their GPU model has per GPU.
    const Result<GpuModel> current =
        catalog->Find(in.options.current_gpu.empty() ? in.options.target_gpu : in.options.current_gpu);
    double most = 0;
    for (const KubeNode& n : *nodes) {
      if (!current || n.gpu_count <= 0 || NormalizedGpuProduct(n.gpu_product) != NormalizedGpuProduct(current->name))
        continue;
      most = std::max(most, static_cast<double>(n.cpu_allocatable.value) / 1000.0 / n.gpu_count);
    }
    if (most > 0) in.options.starvation.max_cores_per_gpu = std::floor(most * 10) / 10;
  }
  if (Result<void> ok = ApplySharing(in, *catalog, telemetry); !ok) return ok;
  if (!telemetry) return {};
  if (in.options.target_gpu.empty())
    return InvalidArgument(
        "--gpu is required when neither the telemetry (modelName), the nodes' labels nor --current-gpu name the "
        "pods' GPU model");
  in.options.reserve = MiB{in.reserve_mib};
  in.options.fleet.models.clear();
  for (const std::string& id : in.gpus) {  // "a, b" as "a,b"; an empty id is an error
    const std::size_t b = id.find_first_not_of(" \t"), e = id.find_last_not_of(" \t");
    if (b == std::string::npos) return InvalidArgument("--gpus: an empty catalog id in '{}'", fmt::join(in.gpus, ","));
    in.options.fleet.models.push_back(id.substr(b, e - b + 1));
  }
  // Batch work is judged by its duty cycle alone; every other pod keeps its latency
  // (optimize/throughput_scaling.h). Batch: the pods of the training jobs found in the cluster.
  in.options.fleet.batch_pods.clear();
  if (c.training)
    for (const std::optional<JobOrigin>& o : c.training->workload.origins)
      if (o)
        for (const std::string& pod : o->pods) in.options.fleet.batch_pods.insert(o->namespace_name + "/" + pod);
  // A pod spec's MIG instance prices its pod as its slice where the telemetry does not say.
  if (pods)
    for (const KubePod& pod : *pods)
      if (std::string profile = pod.MigProfile(); !profile.empty())
        in.options.spec_mig_profiles[pod.Key()] = std::move(profile);
  c.Phase("plan");
  Result<Plan> p = BuildPlan(*telemetry, *catalog, in.options, in.source);
  if (!p) return p.error();
  c.plan = std::move(*p);
  Plan& plan = *c.plan;
  plan.preallocated = std::move(preallocated);
  // With the pods' owners, the plan also names workloads: it survives a rollout's new pod names.
  if (pods) KeyPlanByWorkload(plan, *telemetry, *pods);
  // What serve places new replicas by (plan/workload_profiles.h).
  std::vector<std::string> keys = plan.workload_of;
  if (keys.empty())
    for (const std::string& name : plan.pod_names) keys.push_back(WorkloadKeyOf(name, {}));
  plan.workload_profiles =
      ProfileWorkloads(*telemetry, keys, 1.0 - plan.options.max_collision_share, plan.memory_margin_mib,
                       plan.options.robust ? std::optional<double>(plan.options.memory_risk) : std::nullopt);
  // Every plan from telemetry is also checked on data it was not fitted to.
  if (WalkForwardSplits(*telemetry).empty()) {
    c.backtest_note = "Backtest: none, the telemetry is too short to hold a part out.";
    return {};
  }
  c.Phase("backtest");
  Result<Backtest> b = RunBacktest(*telemetry, *catalog, in.options);
  if (!b) return b.error();
  c.backtest = std::move(*b);
  // The mixed fleet is recommended only if it held too (plan/fleet_plan.h).
  std::vector<std::string> failed;
  for (const SplitOutcome& s : c.backtest->splits)
    if (s.fleet.memory_overflows > 0 || s.fleet.gpus_over_collision_limit > 0)
      failed.push_back(fmt::format("{}: {} memory-overflow samples, {} GPUs over the collision limit", s.split.label,
                                   s.fleet.memory_overflows, s.fleet.gpus_over_collision_limit));
  plan.fleet.backtest_held = failed.empty();
  plan.fleet.backtest_failure = fmt::format("{}", fmt::join(failed, "; "));
  return {};
}

}  // namespace gpufit::pipeline::internal
