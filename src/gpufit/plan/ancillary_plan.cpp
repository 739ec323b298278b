#include "gpufit/plan/ancillary_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "gpufit/core/text.h"
#include "gpufit/plan/kube_manifests.h"

namespace gpufit {
namespace {

using json = nlohmann::json;

// p5.48xlarge per GPU: 192 vCPU and 2048 GiB for 8 GPUs (cloud_prices.yaml).
constexpr double kAssumedCoresPerGpu = 24, kAssumedGibPerGpu = 256;

NodeRates RatesOfNode(const KubeNode& n, const GpuCatalog& catalog) {
  const double cores = static_cast<double>(n.cpu_capacity.value) / 1000.0;
  const double gib = static_cast<double>(n.memory_capacity.value) / 1024.0;
  NodeRates r;
  if (n.gpu_count > 0 && cores > 0 && gib > 0) {
    const std::string product = NormalizedGpuProduct(n.gpu_product);
    for (const GpuModel& m : catalog.models()) {
      if (NormalizedGpuProduct(m.name) != product) continue;
      r = SplitNodePrice(m.on_demand_per_gpu_hour.value * n.gpu_count, n.gpu_count, cores, gib);
      r.basis = fmt::format(
          "{} x {} at {:.4g} USD/GPU-hour, {:g} cores, {:.0f} GiB, split in OpenCost's default "
          "proportions",
          n.gpu_count, m.id, m.on_demand_per_gpu_hour.value, cores, gib);
      break;
    }
    if (r.basis.empty()) {
      r.gpu_node = true;
      r.basis = fmt::format("GPU '{}' not in the catalog: OpenCost's reference rates", n.gpu_product);
    }
  } else {
    r.basis = "no GPU: OpenCost's reference rates (CPU 0.031611 USD/core-hour, RAM 0.004237 USD/GiB-hour)";
  }
  r.node = n.name;
  return r;
}

std::string Cpu(std::optional<MilliCpu> m) { return m ? fmt::format("{}m", m->value) : std::string("-"); }
std::string Mem(std::optional<MiB> m) { return m ? fmt::format("{}Mi", m->value) : std::string("-"); }
json OptCpu(std::optional<MilliCpu> m) { return m ? json(m->value) : json(nullptr); }
json OptMem(std::optional<MiB> m) { return m ? json(m->value) : json(nullptr); }

}  // namespace

Result<void> ValidateAncillaryOptions(const ContainerRightsizeOptions& ro, const ModelLoadingOptions& mo) {
  if (!(ro.cpu_percentile > 0 && ro.cpu_percentile <= 100))
    return InvalidArgument("--cpu-percentile must be in (0, 100], got {}", ro.cpu_percentile);
  if (!(ro.memory_buffer >= 0 && ro.memory_buffer <= 10))
    return InvalidArgument("--memory-buffer must be in [0, 10] (0.15 = 15%), got {}", ro.memory_buffer);
  if (!(mo.cache_gb_per_s > 0 && std::isfinite(mo.cache_gb_per_s)))
    return InvalidArgument("--model-cache-gb-per-s must be a number > 0, got {}", mo.cache_gb_per_s);
  if (mo.model_gib && !(*mo.model_gib > 0 && std::isfinite(*mo.model_gib)))
    return InvalidArgument("--model-gib must be a number > 0, got {}", *mo.model_gib);
  return {};
}

Result<AncillaryPlan> BuildAncillaryPlan(const AncillaryInputs& in) {
  if (Result<void> ok = ValidateAncillaryOptions(in.rightsize, in.model_loading); !ok) return ok.error();
  AncillaryPlan out;
  const Plan& plan = *in.plan;
  std::map<std::string, const KubeNode*> nodes;
  if (in.nodes != nullptr)
    for (const KubeNode& n : *in.nodes) nodes[n.name] = &n;
  std::map<std::string, std::string> node_of;  // pod key -> node
  if (in.pods != nullptr)
    for (const KubePod& p : *in.pods) node_of[p.Key()] = p.node_name;
  if (in.pod_nodes != nullptr)
    for (const auto& [pod, node] : *in.pod_nodes) node_of.emplace(pod, node);
  const auto opencost_of = [&](const std::string& node) -> const NodePrice* {
    return in.prices != nullptr ? in.prices->CpuRamOf(node) : nullptr;
  };
  std::set<std::string, std::less<>> gpu_pod;  // container pod keys of the GPU telemetry
  for (const std::string& name : plan.pod_names) gpu_pod.emplace(PodKeyOf(name));
  NodeRates assumed =
      SplitNodePrice(plan.current.on_demand_per_gpu_hour.value, 1, kAssumedCoresPerGpu, kAssumedGibPerGpu);
  assumed.basis = fmt::format("assumed {} node, {:g} cores and {:g} GiB per GPU (p5.48xlarge's shape)", plan.current.id,
                              kAssumedCoresPerGpu, kAssumedGibPerGpu);
  std::map<std::string, NodeRates> node_rates;
  auto rates_of_node = [&](const std::string& node) -> NodeRates {
    const auto it = nodes.find(node);
    const NodePrice* opencost = opencost_of(node);
    if (it == nodes.end() && opencost == nullptr) return NodeRates{};
    auto [cached, fresh] = node_rates.try_emplace(node);
    if (fresh && opencost != nullptr) {
      NodeRates& r = cached->second;
      r.node = node;
      r.gpu_node = (opencost->gpus && *opencost->gpus > 0) || in.prices->node_gpu.count(node) > 0 ||
                   (it != nodes.end() && it->second->gpu_count > 0);
      r.usd_per_core_hour = *opencost->usd_per_core_hour;
      r.usd_per_gib_hour = *opencost->usd_per_gib_hour;
      r.basis = fmt::format("OpenCost's node_cpu_hourly_cost and node_ram_hourly_cost of {} (the window's mean)", node);
    } else if (fresh) {
      cached->second = RatesOfNode(*it->second, *in.catalog);
    }
    return cached->second;
  };
  auto rates_of_pod = [&](const std::string& pod) -> NodeRates {
    if (const auto it = node_of.find(pod); it != node_of.end() && (nodes.count(it->second) || opencost_of(it->second)))
      return rates_of_node(it->second);
    if (gpu_pod.count(pod)) return assumed;
    NodeRates r;
    r.basis = "node unknown: OpenCost's reference rates";
    return r;
  };
  out.rates_basis =
      in.nodes != nullptr && in.pods != nullptr
          ? "each pod's node (kubectl): its GPUs' catalog price split over GPUs, cores and GiB in "
            "OpenCost's default proportions; CPU nodes at OpenCost's reference rates"
          : "no --nodes/--pods: GPU pods' containers on an " + assumed.basis + "; others at OpenCost's reference rates";
  std::set<std::pair<std::string, std::string>> gpu_containers;  // (pod, container) that hold a GPU
  if (in.pods != nullptr)
    for (const KubePod& p : *in.pods)
      for (const KubeContainer& c : p.containers)
        if (c.resources.HoldsGpu()) gpu_containers.emplace(p.Key(), c.name);
  out.containers = RightsizeContainers(*in.telemetry, rates_of_pod, plan.cpu_starvation, in.rightsize,
                                       [&](const std::string& pod, const std::string& container) {
                                         return gpu_containers.count({pod, container}) > 0;
                                       });
  std::size_t on_known_node = 0, on_opencost_node = 0;
  for (const ContainerRecommendation& c : out.containers) {
    out.containers_usd_per_month_saving += std::max(0.0, c.usd_per_month_saving());
    on_known_node += !c.rates.node.empty();
    on_opencost_node += !c.rates.node.empty() && opencost_of(c.rates.node) != nullptr;
  }
  if (in.prices != nullptr && in.prices->opencost)
    out.rates_basis = fmt::format(
        "OpenCost's node_cpu_hourly_cost and node_ram_hourly_cost of each pod's node (kube_pod_info or --pods) "
        "for {} of {} containers; the others as without OpenCost ({})",
        on_opencost_node, out.containers.size(), out.rates_basis);
  if (in.nodes != nullptr && in.pods != nullptr)
    out.rates_basis += fmt::format(
        " ({} of {} containers' pods found on a node of --pods/--nodes; the others as "
        "without them: pod keys are namespace/pod)",
        on_known_node, out.containers.size());

  if (in.pods != nullptr) {
    for (const KubePod& p : *in.pods) {
      for (const KubeContainer& c : p.containers) {
        if (c.kind == KubeContainer::Kind::kInit) continue;
        const ContainerKind kind = ClassifyContainer(c.name, c.image, c.resources.HoldsGpu());
        if (kind == ContainerKind::kApplication && c.kind != KubeContainer::Kind::kSidecar) continue;
        out.sidecars.push_back({.pod = p.Key(),
                                .container = c.name,
                                .image = c.image,
                                .node = p.node_name,
                                .kind = kind,
                                .native = c.kind == KubeContainer::Kind::kSidecar,
                                .gpu_node = !p.node_name.empty() && rates_of_node(p.node_name).gpu_node,
                                .cpu_request = c.resources.cpu_request,
                                .memory_request = c.resources.memory_request});
      }
    }
    out.duplicated_agents = FindDuplicatedAgents(*in.pods, rates_of_node);
  }

  out.container_data =
      std::any_of(in.telemetry->containers.begin(), in.telemetry->containers.end(), [](const ContainerSeries& c) {
        return std::any_of(c.cpu_cores.begin(), c.cpu_cores.end(), [](float v) { return std::isfinite(v); });
      });
  TimeMultiplexOptions tm = in.time_multiplex;
  if (tm.gpu_id.empty()) tm.gpu_id = plan.current.id;
  // Lending starts from the plan's fleet: the GPUs kept after co-location (CPU-starved pods
  // keep theirs and are neither lent nor counted).
  tm.fleet_gpus = static_cast<int>(plan.replay.gpus.size() + plan.too_big.size());
  tm.excluded_pods = plan.kept_on_current_gpu();
  // Lending fits memory too: the kept replicas' loaded models (optimize/time_multiplex.h).
  tm.gpu_memory_mib = plan.capacity_mib;
  for (std::size_t i = 0; i < plan.workload_of.size() && i < plan.pod_names.size(); ++i)
    if (!plan.workload_of[i].empty()) tm.workload_by_pod[plan.pod_names[i]] = plan.workload_of[i];
  if (in.model_loads != nullptr && !in.model_loads->empty()) {
    out.model_loading = AnalyzeModelLoading(*in.telemetry, *in.model_loads, plan.current.on_demand_per_gpu_hour.value,
                                            in.model_loading);
    if (out.model_loading->pods.empty())
      return InvalidArgument("{}: none of its {} pods is in the telemetry (the pod keys must match)",
                             in.model_loads_source, out.model_loading->pods_not_in_telemetry);
    tm.cold_start_s = out.model_loading->cold_start_p95_s;
  }
  if (in.network != nullptr && in.links != nullptr)
    out.network = AnalyzeNetworkLoading(*in.telemetry, *in.network, *in.links,
                                        {.cache_gb_per_s = in.model_loading.cache_gb_per_s});
  static const std::vector<TrainingJob> kNoJobs;
  Result<TimeMultiplexPlan> t = PlanTimeMultiplex(*in.telemetry, in.jobs ? *in.jobs : kNoJobs, tm);
  if (!t) return t.error();
  out.time_multiplex = std::move(*t);
  out.time_multiplex_replay = ReplayTimeMultiplex(*in.telemetry, *out.time_multiplex);
  return out;
}

std::string AncillaryPlanToJson(const AncillaryPlan& a) {
  json containers = json::array();
  for (const ContainerRecommendation& c : a.containers) {
    containers.push_back({{"pod", c.pod},
                          {"container", c.container},
                          {"image", c.image},
                          {"kind", ToString(c.kind)},
                          {"node", c.rates.node.empty() ? json(nullptr) : json(c.rates.node)},
                          {"gpu_node", c.rates.gpu_node},
                          {"usd_per_core_hour", c.rates.usd_per_core_hour},
                          {"usd_per_gib_hour", c.rates.usd_per_gib_hour},
                          {"rates_basis", c.rates.basis},
                          {"cpu_samples", c.cpu_samples},
                          {"memory_samples", c.memory_samples},
                          {"cpu_cores_percentile", c.cpu_cores_percentile},
                          {"cpu_throttled_ratio_p95", c.cpu_throttled_p95},
                          {"memory_working_set_peak_mib", c.memory_peak_mib},
                          {"now",
                           {{"cpu_request_m", OptCpu(c.cpu_request_now)},
                            {"cpu_limit_m", OptCpu(c.cpu_limit_now)},
                            {"memory_request_mib", OptMem(c.memory_request_now)},
                            {"memory_limit_mib", OptMem(c.memory_limit_now)}}},
                          {"recommended",
                           {{"cpu_request_m", c.cpu_request.value},
                            {"cpu_limit_m", OptCpu(c.cpu_limit)},
                            {"memory_request_mib", c.memory_request.value},
                            {"memory_limit_mib", OptMem(c.memory_limit)}}},
                          {"memory_held", c.memory_held},
                          {"usd_per_month_now", c.usd_per_month_now},
                          {"usd_per_month_recommended", c.usd_per_month_recommended},
                          {"usd_per_month_saving", c.usd_per_month_saving()},
                          {"evidence", c.evidence}});
  }
  json sidecars = json::array();
  for (const SidecarFinding& s : a.sidecars)
    sidecars.push_back({{"pod", s.pod},
                        {"container", s.container},
                        {"image", s.image},
                        {"kind", ToString(s.kind)},
                        {"native_sidecar", s.native},
                        {"node", s.node},
                        {"gpu_node", s.gpu_node},
                        {"cpu_request_m", OptCpu(s.cpu_request)},
                        {"memory_request_mib", OptMem(s.memory_request)}});
  json agents = json::array();
  for (const AgentConsolidation& g : a.duplicated_agents)
    agents.push_back({{"node", g.node},
                      {"kind", ToString(g.kind)},
                      {"image_repository", g.image_repository},
                      {"copies", g.copies},
                      {"cpu_requests_m", g.cpu_requests.value},
                      {"memory_requests_mib", g.memory_requests.value},
                      {"kept_cpu_m", g.cpu_kept.value},
                      {"kept_memory_mib", g.memory_kept.value},
                      {"usd_per_core_hour", g.rates.usd_per_core_hour},
                      {"usd_per_gib_hour", g.rates.usd_per_gib_hour},
                      {"usd_per_month_saving", g.usd_per_month_saving},
                      {"recommendation", "run one copy per node as a DaemonSet and remove the per-pod copies"}});
  json j = {{"container_data", a.container_data},
            {"rates_basis", a.rates_basis},
            {"containers", containers},
            {"containers_usd_per_month_saving", a.containers_usd_per_month_saving},
            {"sidecars", sidecars},
            {"duplicated_agents", agents},
            {"model_loading", nullptr},
            {"network", a.network ? json::parse(NetworkReportToJson(*a.network)) : json(nullptr)},
            {"time_multiplexing", nullptr}};
  if (a.model_loading) {
    const ModelLoadingReport& m = *a.model_loading;
    json pods = json::array();
    for (const PodModelLoading& p : m.pods)
      pods.push_back({{"pod", p.pod},
                      {"loads", p.loads},
                      {"first_load_s", p.first_s},
                      {"load_p50_s", p.p50_s},
                      {"load_p95_s", p.p95_s},
                      {"loading_s", p.loading_s},
                      {"life_s", p.life_s},
                      {"share_of_gpu_time", p.share},
                      {"model_mib", p.model_mib},
                      {"model_size_from_this_pod", p.size_estimated_from_pod},
                      {"cached_load_s", p.cached_load_s},
                      {"saved_s", p.saved_s}});
    j["model_loading"] = {{"loads", m.loads},
                          {"repeat_loads", m.repeat_loads},
                          {"pods_not_in_telemetry", m.pods_not_in_telemetry},
                          {"loads_not_in_telemetry", m.loads_not_in_telemetry},
                          {"cold_start_p50_s", m.cold_start_p50_s},
                          {"cold_start_p95_s", m.cold_start_p95_s},
                          {"model_mib", m.model_mib},
                          {"model_size_basis", m.size_basis},
                          {"observed_gb_per_s_p50", m.observed_gb_per_s_p50},
                          {"cache_gb_per_s", m.cache_gb_per_s},
                          {"loading_gpu_hours", m.loading_gpu_hours},
                          {"pod_gpu_hours", m.pod_gpu_hours},
                          {"share_of_gpu_time", m.share},
                          {"cache_saved_gpu_hours", m.saved_gpu_hours},
                          {"share_of_gpu_time_with_cache", m.share_after},
                          {"cache_usd_per_month_saving", m.saved_usd_per_month},
                          {"pods", pods}};
  }
  if (a.time_multiplex) {
    const TimeMultiplexPlan& t = *a.time_multiplex;
    json curve = json::array();
    for (int n : t.needed_by_hour) curve.push_back(n < 0 ? json(nullptr) : json(n));
    json jobs = json::array();
    for (const LentJob& l : t.jobs)
      jobs.push_back({{"job", l.name},
                      {"gpus", l.gpus},
                      {"checkpoint_interval_s", l.checkpoint_interval.count()},
                      {"checkpoint_write_s", l.checkpoint_write.count()},
                      {"nights_to_finish", l.nights}});
    const TimeMultiplexReplay& r = a.time_multiplex_replay;
    j["time_multiplexing"] = {
        {"fleet_gpus", t.fleet_gpus},
        {"target_utilization", t.target_utilization},
        {"gpus_needed_by_hour_utc", curve},
        {"peak_gpus_needed", t.peak_needed},
        {"gpus_free_all_day", t.free_all_day},
        {"night_window", t.has_window ? json{{"start_utc", fmt::format("{:02d}:00", t.window_start_hour)},
                                             {"hours", t.window_hours},
                                             {"lending_ends_utc", ClockTime(t.lending_end_s())},
                                             {"lead_s", t.lead_s},
                                             {"drain_utc", ClockTime(t.drain_s())}}
                                      : json(nullptr)},
        {"gpus_lent", t.lent_gpus},
        {"night_free_gpu_hours", t.night_free_gpu_hours},
        {"lent_gpu_hours_per_night", t.lent_gpu_hours_per_night},
        {"jobs", jobs},
        {"not_lent", t.not_lent},
        {"evidence", t.evidence},
        {"replay",
         {{"samples", r.samples},
          {"lent_samples", r.lent_samples},
          {"inference_samples_over_capacity", r.over_capacity},
          {"samples_short_without_lending", r.short_without_lending},
          {"min_spare_gpus", r.min_spare_gpus},
          {"lent_gpu_hours", r.lent_gpu_hours},
          {"safe", r.over_capacity == 0}}}};
  }
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string AncillaryPlanToMarkdown(const AncillaryPlan& a) {
  std::string s = "## Ancillary: containers, sidecars, model loading, network, day/night lending\n";
  if (!a.container_data)
    s += "\nContainer right-sizing: not evaluated, the telemetry has no container CPU or memory (Prometheus with "
         "cAdvisor, or --containers).\n";
  if (!a.containers.empty()) {
    s += fmt::format(
        "\n### Container right-sizing ({:.0f} USD/month to save; {})\n\n| pod/container | kind | node | CPU now -> "
        "recommended | memory now -> recommended | USD/month saved |\n|---|---|---|---|---|---:|\n",
        a.containers_usd_per_month_saving, a.rates_basis);
    std::size_t shown = 0;
    for (const ContainerRecommendation& c : a.containers) {
      if (++shown > 20) break;
      s += fmt::format("| {}/{} | {} | {} | {} -> {}m | {} -> {}Mi | {:.2f} |\n", MarkdownText(c.pod),
                       MarkdownText(c.container), ToString(c.kind),
                       c.rates.gpu_node
                           ? (c.rates.node.empty() ? "GPU (assumed)" : MarkdownText(c.rates.node) + " (GPU)")
                           : (c.rates.node.empty() ? "?" : MarkdownText(c.rates.node)),
                       Cpu(c.cpu_request_now), c.cpu_request.value, Mem(c.memory_request_now), c.memory_request.value,
                       c.usd_per_month_saving());
    }
    if (a.containers.size() > 20) s += fmt::format("\n({} more in plan.json)\n", a.containers.size() - 20);
  }
  if (!a.sidecars.empty()) {
    std::map<std::string, int> by_kind;
    for (const SidecarFinding& f : a.sidecars) ++by_kind[ToString(f.kind) + (f.gpu_node ? " on GPU nodes" : "")];
    s += "\n### Sidecars and agents found\n\n";
    for (const auto& [kind, n] : by_kind) s += fmt::format("- {}: {}\n", kind, n);
  }
  if (!a.duplicated_agents.empty()) {
    s += "\n### Duplicated agents per node (consolidate into one DaemonSet pod)\n\n| node | agent | copies | USD/month "
         "saved |\n|---|---|---:|---:|\n";
    for (const AgentConsolidation& g : a.duplicated_agents)
      s += fmt::format("| {} | {} ({}) | {} | {:.2f} |\n", MarkdownText(g.node), MarkdownText(g.image_repository),
                       ToString(g.kind), g.copies.size(), g.usd_per_month_saving);
  }
  if (a.model_loading) {
    const ModelLoadingReport& m = *a.model_loading;
    s += fmt::format(
        "\n### Model loading\n\n{} loads on {} pods: cold start p50 {:.1f} s, p95 {:.1f} s; {:.1f} of {:.1f} GPU-hours "
        "({:.2f}%) spent loading.",
        m.loads, m.pods.size(), m.cold_start_p50_s, m.cold_start_p95_s, m.loading_gpu_hours, m.pod_gpu_hours,
        100 * m.share);
    if (m.pods_not_in_telemetry > 0)
      s += fmt::format(" {} loads of {} pods not in the telemetry are left out.", m.loads_not_in_telemetry,
                       m.pods_not_in_telemetry);
    if (m.model_mib > 0) {
      s += fmt::format(
          " Model size {:.0f} MiB ({}), observed {:.2f} GB/s. A node-local cache at {:g} GB/s would serve the {} "
          "repeat "
          "loads: {:.1f} GPU-hours saved ({:.2f}% -> {:.2f}% of GPU time), {:.0f} USD/month.\n",
          m.model_mib, m.size_basis, m.observed_gb_per_s_p50, m.cache_gb_per_s, m.repeat_loads, m.saved_gpu_hours,
          100 * m.share, 100 * m.share_after, m.saved_usd_per_month);
    } else {
      s += " The model size is unknown (no load raised GPU memory): give --model-gib to price a cache.\n";
    }
  }
  if (a.network) s += NetworkReportToMarkdown(*a.network);
  if (a.time_multiplex) {
    const TimeMultiplexPlan& t = *a.time_multiplex;
    const TimeMultiplexReplay& r = a.time_multiplex_replay;
    s += fmt::format("\n### Day/night lending\n\nGPUs needed by hour (UTC, fleet {}):", t.fleet_gpus);
    for (std::size_t h = 0; h < 24; ++h)
      s += t.needed_by_hour[h] < 0 ? fmt::format(" {:02d}h -", h) : fmt::format(" {:02d}h {}", h, t.needed_by_hour[h]);
    s += fmt::format("\n\n{} GPUs are free all day. ", t.free_all_day);
    if (t.has_window) {
      s += fmt::format(
          "Night window {:02d}:00 UTC for {} h: {:.0f} GPU-hours free per night; {} GPUs lent until {} UTC ({:.0f} "
          "GPU-hours a night).",
          t.window_start_hour, t.window_hours, t.night_free_gpu_hours, t.lent_gpus, ClockTime(t.lending_end_s()),
          t.lent_gpu_hours_per_night);
    } else {
      s += "No night trough to lend.";
    }
    for (const LentJob& l : t.jobs)
      s += fmt::format("\n- lend to {} ({} GPUs): checkpoint every {:.0f} s, {} nights", MarkdownText(l.name), l.gpus,
                       l.checkpoint_interval.count(), l.nights);
    for (const std::string& n : t.not_lent) s += "\n- not lent: " + MarkdownText(n);
    s += fmt::format(
        "\n\nReplay of inference plus lent GPUs over {} samples ({} lending): {} over capacity, at least {} GPUs spare "
        "-> {}.\n",
        r.samples, r.lent_samples, r.over_capacity, r.min_spare_gpus, r.over_capacity == 0 ? "safe" : "UNSAFE");
  }
  return s;
}

}  // namespace gpufit
