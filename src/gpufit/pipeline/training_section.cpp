#include "gpufit/pipeline/training_section.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "gpufit/core/rfc3339.h"
#include "gpufit/ingest/prometheus/training.h"
#include "gpufit/plan/kube_manifests.h"
#include "gpufit/training/cluster_jobs.h"

namespace gpufit::pipeline {
namespace {

// "namespace/pod" of a telemetry series ("ns/pod[i]" per device, "ns/pod@2" for a reused name).
std::string BasePod(const std::string& key) { return key.substr(0, std::min(key.find('['), key.find('@'))); }

}  // namespace

Result<std::optional<TrainingPlan>> TrainingSection(const TrainingSectionInput& in) {
  const Result<CapacityLabels> labels = ParseCapacityLabels(in.capacity_labels);
  if (!labels) return labels.error();
  std::optional<TrainingWorkload> file;
  if (!in.training_jobs.empty()) {
    Result<TrainingWorkload> w = ReadTrainingWorkload(in.training_jobs);
    if (!w) return w.error();
    file = std::move(*w);
  }
  const bool prometheus = in.source != nullptr && !in.source->prometheus.empty() && in.telemetry != nullptr;
  if (in.pods == nullptr && !prometheus) {
    if (!file) return std::optional<TrainingPlan>();
    Result<TrainingPlan> p = BuildTrainingPlan(std::move(*file), *in.catalog, *labels, in.training_jobs);
    if (!p) return p.error();
    return std::optional<TrainingPlan>(std::move(*p));
  }

  // The cluster: kubectl's pods where given (every label and annotation), else
  // kube-state-metrics'; kubectl's nodes win over kube-state-metrics' by name.
  std::optional<PrometheusClusterState> state;
  if (prometheus) {
    Result<PrometheusClusterState> s = ReadPrometheusClusterState(in.source->server, in.source->range);
    if (!s) return s.error();
    state = std::move(*s);
  }
  const std::vector<KubePod>& pods = in.pods != nullptr ? *in.pods : state->pods;
  std::vector<KubeNode> nodes;
  if (in.nodes != nullptr) nodes = *in.nodes;
  if (state)
    for (const KubeNode& n : state->nodes)
      if (std::none_of(nodes.begin(), nodes.end(), [&](const KubeNode& k) { return k.name == n.name; }))
        nodes.push_back(n);
  Result<SpotEstimate> spot = EstimateSpotRate(state ? &state->history : nullptr);
  if (!spot) return spot.error();

  ClusterJobsOptions o;
  o.now_s = prometheus ? in.source->range.until_s : in.now_s;
  o.pods_source = in.pods != nullptr ? in.pods_source : "kube-state-metrics at " + in.source->prometheus;
  for (const GpuModel& m : in.catalog->models()) o.gpu_memory_of_model[m.id] = m.memory;
  for (const KubeNode& n : nodes) {
    if (n.gpu_product.empty()) continue;
    for (const GpuModel& m : in.catalog->models())
      if (NormalizedGpuProduct(m.name) == NormalizedGpuProduct(n.gpu_product)) o.gpu_model_of_node[n.name] = m.id;
  }
  if (in.telemetry != nullptr) {
    // The pod's peak per device, summed over its devices.
    std::map<std::string, double> peaks;
    for (const PodSeries& p : in.telemetry->pods) {
      float peak = 0;
      for (const float v : p.fb_used_mib)
        if (v > peak) peak = v;
      peaks[BasePod(p.pod)] += peak;
    }
    for (const auto& [pod, mib] : peaks) o.gpu_memory_used[pod] = MiB{static_cast<std::int64_t>(mib)};
    o.gpu_memory_source = "DCGM_FI_DEV_FB_USED peak of each GPU of " + in.source->name;
    for (const GpuModel& m : in.catalog->models())
      if (!in.telemetry->gpu_model_name.empty() && m.name == in.telemetry->gpu_model_name) {
        o.default_gpu_model = m.id;
        o.default_gpu_model_source = "dcgm-exporter modelName " + m.name;
      }
  }
  if (o.default_gpu_model.empty() && !in.gpu.empty()) {
    o.default_gpu_model = in.gpu;
    o.default_gpu_model_source = "assumption: --current-gpu or --gpu " + in.gpu + " (no GPU product label on its node)";
  }
  Result<TrainingWorkload> cluster = TrainingWorkloadFromCluster(pods, nodes, *spot, o);
  if (!cluster) return cluster.error();
  std::string source = o.pods_source;
  if (prometheus)
    source +=
        fmt::format(" ({} to {})", FormatRfc3339(in.source->range.since_s), FormatRfc3339(in.source->range.until_s));
  TrainingWorkload w = std::move(*cluster);
  if (file) {
    w = MergeTrainingWorkloads(std::move(w), std::move(*file));
    source += ", overridden by " + in.training_jobs;
  }
  if (w.jobs.empty()) return std::optional<TrainingPlan>();
  Result<TrainingPlan> p = BuildTrainingPlan(std::move(w), *in.catalog, *labels, source);
  if (!p) return p.error();
  return std::optional<TrainingPlan>(std::move(*p));
}

}  // namespace gpufit::pipeline
