#include "gpufit/ingest/prometheus/training.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>

#include "gpufit/ingest/kube/kube_reader.h"

namespace gpufit {
namespace {

// Kubernetes keys read back from kube-state-metrics' label names.
constexpr std::array<const char*, 8> kPodLabelKeys = {"kueue.x-k8s.io/pod-group-name",
                                                      "scheduling.x-k8s.io/pod-group",
                                                      "volcano.sh/job-name",
                                                      "jobset.sigs.k8s.io/jobset-name",
                                                      "training.kubeflow.org/job-name",
                                                      "ray.io/originated-from-crd",
                                                      "ray.io/originated-from-cr-name",
                                                      "ray.io/cluster"};
constexpr std::array<const char*, 6> kPodAnnotationKeys = {
    "scheduling.k8s.io/group-name",       "gpufit.io/work-hours",      "gpufit.io/checkpoint-size-gib",
    "gpufit.io/checkpoint-write-seconds", "gpufit.io/restore-seconds", "gpufit.io/checkpointing"};
constexpr std::array<const char*, 8> kNodeLabelKeys = {"karpenter.sh/capacity-type",
                                                       "eks.amazonaws.com/capacityType",
                                                       "cloud.google.com/gke-spot",
                                                       "cloud.google.com/gke-preemptible",
                                                       "kubernetes.azure.com/scalesetpriority",
                                                       "nvidia.com/gpu.product",
                                                       "nvidia.com/gpu.count",
                                                       "nvidia.com/gpu.memory"};

std::string Label(const PromSeries& s, const char* key) {
  const auto it = s.labels.find(key);
  return it == s.labels.end() ? std::string() : it->second;
}

// The last finite value of a series, with its time.
std::optional<std::pair<double, double>> Last(const PromSeries& s) {
  for (std::size_t i = s.value.size(); i-- > 0;)
    if (std::isfinite(s.value[i])) return std::make_pair(s.time_s[i], s.value[i]);
  return std::nullopt;
}

// "namespace/pod" of a kube-state-metrics series (exported_* first: prometheus_telemetry.h).
std::pair<std::string, std::string> PodOf(const PromSeries& s) {
  const std::string key = PodKeyFromLabels(s.labels);
  const std::size_t slash = key.find('/');
  if (slash == std::string::npos) return {"", key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

std::string Key(const std::pair<std::string, std::string>& p) { return p.first + "/" + p.second; }

// The increase of a counter over the range (header: reset rule, series created in range).
double Increase(const PromSeries& s, double first_grid_s) {
  double sum = 0, prev = NAN;
  for (std::size_t i = 0; i < s.value.size(); ++i) {
    const double v = s.value[i];
    if (!std::isfinite(v)) continue;
    if (std::isnan(prev)) {
      if (s.time_s[i] > first_grid_s + 1e-6) sum += v;
    } else {
      sum += v >= prev ? v - prev : v;
    }
    prev = v;
  }
  return sum;
}

}  // namespace

std::string KsmLabelName(std::string_view prefix, std::string_view key) {
  std::string sanitized;
  for (const char c : key) sanitized += std::isalnum(static_cast<unsigned char>(c)) || c == '_' ? c : '_';
  std::string out(prefix);
  out += '_';
  for (std::size_t i = 0; i < sanitized.size(); ++i) {
    const char c = sanitized[i];
    const bool upper = std::isupper(static_cast<unsigned char>(c)) != 0;
    if (upper && i > 0) {
      const char p = sanitized[i - 1];
      if (std::islower(static_cast<unsigned char>(p)) || std::isdigit(static_cast<unsigned char>(p))) out += '_';
    }
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

PrometheusClusterState ClusterStateFromSeries(const ClusterStateAnswers& a, const GridSpec& grid, double since_s,
                                              double until_s) {
  PrometheusClusterState out;
  const double last_grid = grid.start_s + static_cast<double>(grid.samples - 1) * grid.step_s;
  // Pods: GPUs and node from the requests, kept when running.
  std::map<std::string, KubePod> pods;
  for (const PromSeries& s : a.gpu_requests) {
    const auto pod = PodOf(s);
    const auto v = Last(s);
    if (pod.second.empty() || !v || v->second <= 0) continue;
    KubePod& p = pods[Key(pod)];
    p.namespace_name = pod.first;
    p.name = pod.second;
    if (p.containers.empty())
      p.containers.push_back({.name = "", .image = "", .resources = {}, .kind = KubeContainer::Kind::kApp});
    p.containers.front().resources.devices["nvidia.com/gpu"] += static_cast<int>(std::lround(v->second));
    if (p.node_name.empty()) p.node_name = Label(s, "node");
    p.uid = Label(s, "uid");
  }
  std::map<std::string, bool> running;
  for (const PromSeries& s : a.running) {
    const auto v = Last(s);
    if (v && v->second >= 1) running[Key(PodOf(s))] = true;
  }
  for (auto it = pods.begin(); it != pods.end();) {
    if (running.contains(it->first)) {
      it->second.phase = "Running";
      ++it;
    } else {
      it = pods.erase(it);
    }
  }
  std::map<std::string, bool> controller;
  for (const PromSeries& s : a.owner) {
    const auto it = pods.find(Key(PodOf(s)));
    if (it == pods.end()) continue;
    const std::string kind = Label(s, "owner_kind"), name = Label(s, "owner_name");
    if (kind.empty() || kind == "<none>") continue;
    const bool is_controller = Label(s, "owner_is_controller") == "true";
    if (!it->second.owner.kind.empty() && (controller[it->first] || !is_controller)) continue;
    it->second.owner = {kind, name};
    controller[it->first] = is_controller;
  }
  for (const PromSeries& s : a.info) {
    const auto it = pods.find(Key(PodOf(s)));
    if (it == pods.end()) continue;
    if (const std::string node = Label(s, "node"); !node.empty()) it->second.node_name = node;
    const std::string kind = Label(s, "created_by_kind");
    if (it->second.owner.kind.empty() && !kind.empty() && kind != "<none>")
      it->second.owner = {kind, Label(s, "created_by_name")};
  }
  for (const PromSeries& s : a.start_time) {
    const auto it = pods.find(Key(PodOf(s)));
    if (const auto v = Last(s); it != pods.end() && v && v->second > 0) it->second.started_s = v->second;
  }
  for (const PromSeries& s : a.created) {
    const auto it = pods.find(Key(PodOf(s)));
    if (const auto v = Last(s); it != pods.end() && v && v->second > 0) it->second.created_s = v->second;
  }
  for (const PromSeries& s : a.labels) {
    const auto it = pods.find(Key(PodOf(s)));
    if (it == pods.end()) continue;
    for (const char* key : kPodLabelKeys)
      if (const std::string v = Label(s, KsmLabelName("label", key).c_str()); !v.empty()) it->second.labels[key] = v;
  }
  for (const PromSeries& s : a.annotations) {
    const auto it = pods.find(Key(PodOf(s)));
    if (it == pods.end()) continue;
    for (const char* key : kPodAnnotationKeys)
      if (const std::string v = Label(s, KsmLabelName("annotation", key).c_str()); !v.empty())
        it->second.annotations[key] = v;
  }
  for (auto& [key, p] : pods) {
    if (p.owner.kind.empty()) p.owner = {"Pod", p.name};
    out.pods.push_back(std::move(p));
  }

  // Nodes: presence over the range, labels from the last kube_node_labels sample.
  std::map<std::string, NodePresence> seen;
  std::map<std::string, KubeNode> nodes;
  const auto present = [&](const PromSeries& s) {
    const std::string node = Label(s, "node");
    if (node.empty()) return;
    for (std::size_t i = 0; i < s.time_s.size(); ++i) {
      if (!std::isfinite(s.value[i])) continue;
      auto [it, fresh] = seen.try_emplace(node, NodePresence{.node = node,
                                                             .capacity_type = "",
                                                             .first_s = s.time_s[i],
                                                             .last_s = s.time_s[i],
                                                             .gke = false,
                                                             .aks = false});
      it->second.first_s = std::min(it->second.first_s, s.time_s[i]);
      it->second.last_s = std::max(it->second.last_s, s.time_s[i]);
    }
    nodes[node].name = node;
  };
  for (const PromSeries& s : a.node_labels) {
    present(s);
    KubeNode& n = nodes[Label(s, "node")];
    for (const char* key : kNodeLabelKeys)
      if (const std::string v = Label(s, KsmLabelName("label", key).c_str()); !v.empty()) n.labels[key] = v;
  }
  for (const PromSeries& s : a.node_info) present(s);
  for (auto& [name, n] : nodes) {
    if (name.empty()) continue;
    n.capacity_type = CapacityTypeOfLabels(n.labels);
    if (const auto it = n.labels.find("nvidia.com/gpu.product"); it != n.labels.end()) n.gpu_product = it->second;
    if (const auto it = n.labels.find("nvidia.com/gpu.count"); it != n.labels.end()) {
      int count = 0;
      for (const char c : it->second) count = std::isdigit(static_cast<unsigned char>(c)) ? count * 10 + (c - '0') : 0;
      n.gpu_count = count;
    }
    NodePresence& p = seen[name];
    p.capacity_type = n.capacity_type;
    p.gke = n.labels.contains("cloud.google.com/gke-spot") || n.labels.contains("cloud.google.com/gke-preemptible");
    p.aks = n.labels.contains("kubernetes.azure.com/scalesetpriority");
    out.history.nodes.push_back(p);
    out.nodes.push_back(std::move(n));
  }
  out.history.since_s = since_s;
  out.history.until_s = until_s;
  out.history.step_s = grid.step_s;
  out.history.last_grid_s = last_grid;

  // Karpenter's count of spot reclaims.
  const auto total = [&](const std::vector<PromSeries>& series) {
    double sum = 0;
    for (const PromSeries& s : series) sum += Increase(s, grid.start_s);
    return sum;
  };
  if (!a.karpenter_disrupted.empty()) {
    out.history.karpenter_spot_reclaims = total(a.karpenter_disrupted);
    out.history.karpenter_metric =
        "karpenter_nodeclaims_disrupted_total{reason=\"spot_interrupted\"}, its increase over the range (Karpenter)";
  } else if (!a.karpenter_messages.empty()) {
    out.history.karpenter_spot_reclaims = total(a.karpenter_messages);
    out.history.karpenter_metric =
        "karpenter_interruption_received_messages_total{message_type=\"spot_interrupted\"}, its increase over the "
        "range (Karpenter's interruption queue)";
  } else if (!a.karpenter_build_info.empty()) {
    out.history.karpenter_spot_reclaims = 0;
    out.history.karpenter_metric =
        "karpenter_nodeclaims_disrupted_total{reason=\"spot_interrupted\"}: no series while Karpenter ran "
        "(karpenter_build_info)";
  }
  return out;
}

Result<PrometheusClusterState> ReadPrometheusClusterState(const PrometheusOptions& options,
                                                          const TelemetryRange& range) {
  const Result<TelemetryGrid> grid = GridFor(range);
  if (!grid) return grid.error();
  const double last = grid->grid.start_s + static_cast<double>(grid->grid.samples - 1) * grid->grid.step_s;
  const std::string instant_window =
      fmt::format("[{}ms]", static_cast<long long>(std::llround(std::max(range.step_s, 300.0) * 1000)) - 1);
  ClusterStateAnswers a;
  const auto at_end = [&](const std::string& metric, std::vector<PromSeries>& into) -> Result<void> {
    Result<std::vector<PromSeries>> r = QueryRange(
        options,
        {.query = fmt::format("max_over_time({}{})", AddMatchers(metric, options.ScopeMatchers()), instant_window),
         .start_s = last,
         .end_s = last,
         .step_s = range.step_s});
    if (!r) return r.error();
    into = std::move(*r);
    return {};
  };
  const std::pair<const char*, std::vector<PromSeries>*> instant[] = {
      {"kube_pod_container_resource_requests{resource=\"nvidia_com_gpu\"}", &a.gpu_requests},
      {"kube_pod_status_phase{phase=\"Running\"}", &a.running},
      {"kube_pod_owner", &a.owner},
      {"kube_pod_info", &a.info},
      {"kube_pod_start_time", &a.start_time},
      {"kube_pod_created", &a.created},
      {"kube_pod_labels", &a.labels},
      {"kube_pod_annotations", &a.annotations}};
  for (const auto& [metric, into] : instant) {
    if (Result<void> ok = at_end(metric, *into); !ok) return ok.error();
    if (into == &a.gpu_requests && a.gpu_requests.empty()) break;  // no GPU pod: the rest is moot
  }
  // Node history on a grid of at most kHistoryPoints steps (whole seconds, at least the
  // range's step): presence needs no finer grain, and 7 days at 60 s of 1,000 nodes would
  // pass the answer cap.
  TelemetryRange coarse = range;
  coarse.step_s = std::max(range.step_s, std::ceil((range.until_s - range.since_s) / kHistoryPoints));
  const Result<TelemetryGrid> hgrid = GridFor(coarse);
  if (!hgrid) return hgrid.error();
  const double hlast = hgrid->grid.start_s + static_cast<double>(hgrid->grid.samples - 1) * hgrid->grid.step_s;
  const auto over_range = [&](const std::string& metric, std::vector<PromSeries>& into) -> Result<void> {
    Result<std::vector<PromSeries>> r =
        QueryRange(options, {.query = fmt::format("max_over_time({}{})", metric, hgrid->window),
                             .start_s = hgrid->grid.start_s,
                             .end_s = hlast,
                             .step_s = coarse.step_s});
    if (!r) return r.error();
    into = std::move(*r);
    return {};
  };
  const std::pair<const char*, std::vector<PromSeries>*> ranged[] = {
      {"kube_node_labels", &a.node_labels},
      {"kube_node_info", &a.node_info},
      {"karpenter_nodeclaims_disrupted_total{reason=\"spot_interrupted\"}", &a.karpenter_disrupted},
      {"karpenter_interruption_received_messages_total{message_type=\"spot_interrupted\"}", &a.karpenter_messages},
      {"karpenter_build_info", &a.karpenter_build_info}};
  for (const auto& [metric, into] : ranged)
    if (Result<void> ok = over_range(metric, *into); !ok) return ok.error();
  return ClusterStateFromSeries(a, hgrid->grid, range.since_s, range.until_s);
}

}  // namespace gpufit
