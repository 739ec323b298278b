#include "gpufit/plan/plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include "gpufit/optimize/lp_bound.h"
#include "gpufit/optimize/memory_envelope.h"
#include "gpufit/optimize/throughput_scaling.h"

namespace gpufit {
namespace {

Result<void> Validate(const PlanOptions& o, const GpuModel& target) {
  if (!std::isfinite(o.headroom) || o.headroom < 0 || o.headroom > 10)
    return InvalidArgument("--headroom must be in [0, 10] (0.10 = 10%), got {}", o.headroom);
  if (!std::isfinite(o.max_collision_share) || o.max_collision_share < 0 || o.max_collision_share > 1)
    return InvalidArgument("--max-collision-share must be in [0, 1], got {}", o.max_collision_share);
  if (o.reserve.value < 0) return InvalidArgument("--reserve-mib must be >= 0, got {}", o.reserve.value);
  if (o.reserve >= target.memory)
    return InvalidArgument("--reserve-mib {} leaves nothing of {}'s {} MiB", o.reserve.value, target.id,
                           target.memory.value);
  if (o.search_budget < 0) return InvalidArgument("--search-budget must be >= 0, got {}", o.search_budget);
  if (!std::isfinite(o.memory_risk) || o.memory_risk < 0 || o.memory_risk >= 1)
    return InvalidArgument("--memory-risk must be in [0, 1), got {}", o.memory_risk);
  if (!(o.min_window_hours >= 0)) return InvalidArgument("--min-window-hours must be >= 0, got {}", o.min_window_hours);
  return {};
}

// Each pod's cap: its right-sizing need, the largest of its workload's replicas.
std::vector<double> MemoryCaps(const Plan& plan, const std::map<std::string, std::string>& workload_of) {
  std::map<std::string, double> largest;
  auto workload = [&](std::size_t i) {
    const auto it = workload_of.find(plan.pod_names[i]);
    return it == workload_of.end() ? std::string() : it->second;
  };
  for (std::size_t i = 0; i < plan.right_sizing.size(); ++i) {
    const auto need = static_cast<double>(plan.right_sizing[i].required.value);
    if (!workload(i).empty()) largest[workload(i)] = std::max(largest[workload(i)], need);
  }
  std::vector<double> caps;
  for (std::size_t i = 0; i < plan.right_sizing.size(); ++i)
    caps.push_back(workload(i).empty() ? static_cast<double>(plan.right_sizing[i].required.value)
                                       : largest.at(workload(i)));
  return caps;
}

// The telemetry as the packer sees capped pods: memory = the cap at every sample of the
// window, duty cycle as measured (0 outside the pod's life).
Telemetry CappedTelemetry(const Telemetry& telemetry, const std::vector<double>& caps) {
  Telemetry out = telemetry;
  for (std::size_t i = 0; i < out.pods.size(); ++i) {
    PodSeries& p = out.pods[i];
    for (std::size_t t = 0; t < out.samples; ++t) {
      const bool alive = t >= p.first && t <= p.last;
      p.fb_used_mib[t] = static_cast<float>(caps[i]);
      if (!alive || !std::isfinite(p.gpu_util_pct[t])) p.gpu_util_pct[t] = 0;
    }
    p.first = 0;
    p.last = out.samples == 0 ? 0 : out.samples - 1;
  }
  return out;
}

// What the packer places (PlanOptions::whole_workloads): each pod alone, or the pods of one
// workload together when their caps fit one GPU; CPU-starved pods always alone. Ascending.
std::vector<std::vector<std::size_t>> PackingItems(const Plan& plan, const PlanOptions& options) {
  std::vector<std::vector<std::size_t>> items;
  std::map<std::string, std::vector<std::size_t>> by_workload;
  for (std::size_t i = 0; i < plan.pod_names.size(); ++i) {
    const auto it = options.workload_by_pod.find(plan.pod_names[i]);
    if (!options.whole_workloads || !options.memory_caps || plan.keeps_current_gpu(i) ||
        it == options.workload_by_pod.end() || it->second.empty())
      items.push_back({i});
    else
      by_workload[it->second].push_back(i);
  }
  for (const auto& [key, pods] : by_workload) {
    double caps = 0;
    for (std::size_t p : pods) caps += plan.memory_cap_mib[p];
    if (caps <= plan.capacity_mib) {
      items.push_back(pods);
    } else {
      for (std::size_t p : pods) items.push_back({p});
    }
  }
  std::sort(items.begin(), items.end());
  return items;
}

// One series per item: its pods' memory and duty cycles summed, over the whole window.
Telemetry MergeItems(const Telemetry& telemetry, const std::vector<std::vector<std::size_t>>& items) {
  Telemetry out = telemetry;
  out.pods.clear();
  for (const std::vector<std::size_t>& item : items) {
    PodSeries s;
    s.pod = telemetry.pods[item.front()].pod;
    s.fb_used_mib.assign(telemetry.samples, 0);
    s.gpu_util_pct.assign(telemetry.samples, 0);
    s.first = telemetry.samples;
    for (std::size_t p : item) {
      const PodSeries& q = telemetry.pods[p];
      s.first = std::min(s.first, q.first);
      s.last = std::max(s.last, q.last);
      for (std::size_t t = q.first; t <= q.last; ++t) {
        s.fb_used_mib[t] += q.fb_used_mib[t];
        if (std::isfinite(q.gpu_util_pct[t])) s.gpu_util_pct[t] += q.gpu_util_pct[t];
      }
    }
    out.pods.push_back(std::move(s));
  }
  return out;
}

// Per pod, its replica set (PlanOptions::replicas_apart) or -1.
std::vector<int> ReplicaSets(const Plan& plan, const PlanOptions& options) {
  std::vector<int> sets(plan.pod_names.size(), -1);
  if (!options.replicas_apart || options.whole_workloads) return sets;
  std::map<std::string, int> ids;
  std::map<std::string, std::size_t> size;
  for (const auto& [pod, key] : options.workload_by_pod)
    if (!key.empty() && !key.starts_with("pod/")) ++size[key];
  for (std::size_t i = 0; i < plan.pod_names.size(); ++i) {
    const auto it = options.workload_by_pod.find(plan.pod_names[i]);
    if (it == options.workload_by_pod.end() || size[it->second] < 2 || plan.keeps_current_gpu(i)) continue;
    sets[i] = ids.emplace(it->second, static_cast<int>(ids.size())).first->second;
  }
  return sets;
}

// What the kept pods' current GPUs cost per hour.
double KeptUsdPerHour(const Plan& plan) {
  double usd = 0;
  for (std::size_t p : plan.kept_on_current_gpu()) usd += plan.usd_per_hour_today(p);
  return usd;
}

// The share of its GPU a pod's device holds: a MIG instance of a known profile, its compute
// slices over the GPU's (../shared/reference/mig_profiles.yaml, NVIDIA MIG User Guide: an SM
// slice is ~1/7 of the SMs on A100/H100/H200/B200, 1/4 on the A30; a 1g.10gb on an A100-80GB
// is 1/7); a whole GPU, 1. A profile the current GPU does not offer (or no MIG catalog entry)
// counts as the whole GPU: nothing says which share it holds.
double DeviceShare(const PodSeries& pod, const std::string& gpu_id, const std::map<std::string, std::string>& spec) {
  std::string name = pod.mig_profile;
  if (const auto it = spec.find(std::string(PodKeyOf(pod.pod))); name.empty() && it != spec.end()) name = it->second;
  if (name.empty()) return 1;
  const Result<const MigGpu*> gpu = MigCatalog::Embedded().Find(gpu_id);
  if (!gpu || (*gpu)->compute_slices <= 0) return 1;
  const Result<const MigProfile*> profile = (*gpu)->Profile(name);
  if (!profile) return 1;
  return static_cast<double>((*profile)->compute_slices) / static_cast<double>((*gpu)->compute_slices);
}

}  // namespace

Result<Plan> BuildPlan(const Telemetry& telemetry, const GpuCatalog& catalog, const PlanOptions& options,
                       const std::string& source) {
  const Result<GpuModel> target = catalog.Find(options.target_gpu);
  if (!target) return target.error();
  const Result<GpuModel> current = catalog.Find(options.current_gpu.empty() ? options.target_gpu : options.current_gpu);
  if (!current) return current.error();
  if (Result<void> ok = Validate(options, *target); !ok) return ok.error();

  Plan plan;
  plan.source = source;
  plan.samples = telemetry.samples;
  plan.step_s = telemetry.step_s;
  plan.window_hours = telemetry.window_hours();
  plan.options = options;
  plan.current = *current;
  plan.target = *target;
  plan.capacity_mib = static_cast<double>((target->memory - options.reserve).value);
  plan.skipped = telemetry.skipped;
  plan.ended = telemetry.ended;
  plan.queries = telemetry.queries;
  plan.profiles = ProfileAll(telemetry);
  plan.containers = ProfileContainers(telemetry);
  for (const PodSeries& p : telemetry.pods) {
    plan.pod_names.push_back(p.pod);
    const auto own = options.current_gpu_of.find(p.pod);
    if (own == options.current_gpu_of.end() || own->second == current->id) {
      plan.current_of.push_back(*current);
      continue;
    }
    const Result<GpuModel> m = catalog.Find(own->second);
    if (!m) return Error{m.error().code, fmt::format("current GPU of pod {}: {}", p.pod, m.error().message)};
    plan.current_of.push_back(*m);
  }
  plan.container_data = HasContainerCpu(telemetry);
  plan.cpu_starvation = DetectCpuStarvation(telemetry, options.starvation);
  plan.multi_gpu = FindMultiGpuPods(telemetry, options.spec_devices);
  {
    std::vector<std::string> ended;
    for (const PodEnd& e : telemetry.ended) ended.push_back(e.pod);
    std::sort(ended.begin(), ended.end());
    for (std::size_t i = 0; i < telemetry.pods.size(); ++i) {
      const PodSeries& p = telemetry.pods[i];
      if (!(plan.profiles[i].fb_used_mib.peak > 0) && plan.multi_gpu_of(i) == nullptr) plan.unmeasured.push_back(i);
      if (plan.profiles[i].fb_used_mib.peak > static_cast<double>(plan.current_gpu(i).memory.value))
        plan.above_current.push_back(i);
      if (p.last + 1 < telemetry.samples && !std::binary_search(ended.begin(), ended.end(), p.pod))
        plan.stopped_without_end.push_back(i);
    }
  }
  if (options.robust) {
    std::vector<std::size_t> pods;
    for (std::size_t i = 0; i < telemetry.pods.size(); ++i)
      if (!plan.keeps_current_gpu(i)) pods.push_back(i);
    const std::vector<double> surprises = PooledPeakSurprises(telemetry, pods);
    plan.memory_surprises = surprises.size();
    plan.memory_margin_mib = SurpriseMargin(surprises, options.memory_risk);
    // The margin never leaves less than a tenth of the GPU to pack into.
    plan.memory_margin_mib = std::min(plan.memory_margin_mib, 0.9 * plan.capacity_mib);
    plan.group_margin = LearnGroupMargin(surprises, plan.memory_margin_mib, options.memory_risk);
  }
  plan.packing_capacity_mib = plan.capacity_mib - plan.memory_margin_mib;
  for (const std::string& id : options.fleet.models)
    if (Result<GpuModel> m = catalog.Find(id); !m) return Error{m.error().code, "--gpus: " + m.error().message};
  const std::int64_t collision_limit = CollisionLimit(telemetry.samples, options.max_collision_share);
  for (std::size_t i = 0; i < plan.profiles.size(); ++i) {
    // The one-pod case of the fleet plan: only the models it may use, each admitting the pod.
    const auto refuse = [&](const GpuModel& m) -> std::string {
      const auto& allowed = options.fleet.models;
      if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), m.id) == allowed.end()) return "not in --gpus";
      const bool latency = options.fleet.LatencyBound(telemetry.pods[i]);
      return AdmitPod(telemetry.pods[i], plan.current_gpu(i), m, latency, collision_limit).reason;
    };
    RightSizing r =
        RightSize(plan.profiles[i], plan.current_gpu(i), catalog, options.headroom, plan.memory_margin_mib, refuse);
    HoldShrink(r, plan.current_gpu(i), catalog,
               {.window_hours = plan.window_hours,
                .min_window_hours = options.min_window_hours,
                .gap_near_peak = GapNearPeak(telemetry.pods[i], telemetry.step_s)});
    plan.right_sizing.push_back(std::move(r));
  }
  for (const CpuStarvation& s : plan.cpu_starvation) {
    RightSizing& r = plan.right_sizing[s.pod];
    r.recommended_gpu = plan.current_gpu(s.pod).id;
    r.usd_per_month_recommended = r.usd_per_month_current;
    r.reason = fmt::format("kept on {}: CPU-starved ({:.0f}% of samples), give it {:g} cores per GPU first",
                           plan.current_gpu(s.pod).id, 100 * s.starved_share(), s.recommended_cores);
  }
  for (std::size_t p : plan.unmeasured) {
    RightSizing& r = plan.right_sizing[p];
    r.recommended_gpu = plan.current_gpu(p).id;
    r.usd_per_month_recommended = r.usd_per_month_current;
    r.reason = fmt::format(
        "kept on {}: 0 MiB at every sample, so unmeasured (a CUDA context alone holds hundreds of "
        "MiB); check its DCGM series before sizing it",
        plan.current_gpu(p).id);
  }
  for (const MultiGpuPod& m : plan.multi_gpu) {
    for (std::size_t p : m.series) {
      RightSizing& r = plan.right_sizing[p];
      r.recommended_gpu = plan.current_gpu(p).id;
      r.usd_per_month_recommended = r.usd_per_month_current;
      r.reason = fmt::format("kept whole on {}: pod {} holds {} devices ({}), never shared{}", plan.current_gpu(p).id,
                             m.pod, m.devices, m.evidence, m.ask_for_one ? "; " + m.ask_for_one->text : std::string());
    }
  }

  // With memory caps the packer sees each pod as its cap, held over the whole window.
  std::optional<Telemetry> capped;
  if (options.memory_caps) {
    plan.memory_cap_mib = MemoryCaps(plan, options.workload_by_pod);
    capped = CappedTelemetry(telemetry, plan.memory_cap_mib);
    plan.packing_capacity_mib = plan.capacity_mib;
  }
  const Telemetry& capped_or_real = capped ? *capped : telemetry;
  // Items the packer places: one per pod, or with whole_workloads one per workload whose
  // caps fit one GPU (its pods' caps and duty cycles summed into one series).
  const std::vector<std::vector<std::size_t>> items = PackingItems(plan, options);
  const std::optional<Telemetry> merged =
      items.size() == telemetry.pods.size() ? std::nullopt : std::optional(MergeItems(capped_or_real, items));
  const Telemetry& packed = merged ? *merged : capped_or_real;

  ColocateOptions co;
  plan.replica_set = ReplicaSets(plan, options);
  if (std::any_of(plan.replica_set.begin(), plan.replica_set.end(), [](int r) { return r >= 0; })) {
    // Items are single pods here: whole_workloads, which merges them, keeps no set.
    for (const std::vector<std::size_t>& item : items) co.apart.push_back(plan.replica_set[item.front()]);
  }
  co.max_pods_per_gpu = options.max_pods_per_gpu;
  co.gpu_memory = target->memory;
  co.reserve = options.reserve;
  co.memory_margin_mib = options.memory_caps ? 0.0 : plan.memory_margin_mib;
  co.per_pod_margin_mib = options.memory_caps ? 0.0 : plan.group_margin.per_pod_mib;
  co.collisions_if_active = options.robust;
  co.max_collision_share = options.max_collision_share;
  co.seed = options.seed;
  co.search_budget = options.search_budget;
  co.threads = options.threads;
  // The lower bound first: the search stops early when it reaches it.
  std::vector<std::size_t> packable;
  for (std::size_t k = 0; k < items.size(); ++k) {
    const std::size_t i = items[k].front();
    if (plan.keeps_current_gpu(i)) {
      co.excluded.push_back(k);  // kept pods are items of their own
      continue;
    }
    double peak = 0;
    for (std::size_t p : items[k])
      peak += options.memory_caps ? plan.memory_cap_mib[p] : plan.profiles[p].fb_used_mib.peak;
    if (peak <= plan.packing_capacity_mib) packable.push_back(k);
  }
  plan.collision_limit_samples = CollisionLimit(telemetry.samples, options.max_collision_share);
  plan.totals.lower_bound = LowerBound(packed, packable, plan.packing_capacity_mib, plan.collision_limit_samples);
  co.stop_at_gpus = plan.totals.lower_bound.gpus();
  Colocation colocation = Colocate(packed, co);
  // The LP bound last: it starts from the packer's groups, which are columns of its master.
  // It needs the pairwise conflicts, so it runs where the clique's graph was built, and on
  // at most kLpMaxPods items (its exact pricing is a 0/1 program over them).
  constexpr std::size_t kLpMaxPods = 1000;
  if (options.lp_bound_seconds > 0 && plan.totals.lower_bound.clique_graph_built && packable.size() <= kLpMaxPods) {
    const LpBound lp = ColumnGenerationBound(packed, packable, plan.packing_capacity_mib, plan.collision_limit_samples,
                                             colocation.groups, {.max_seconds = options.lp_bound_seconds});
    plan.totals.lower_bound.lp_computed = true;
    plan.totals.lower_bound.lp_column_generation = lp.gpus;
    plan.totals.lower_bound.lp_value = lp.lp_value;
    plan.totals.lower_bound.lp_converged = lp.converged;
    plan.totals.lower_bound.lp_seconds = lp.seconds;
  }
  if (merged) {
    auto expand = [&](const std::vector<std::size_t>& of_items) {
      std::vector<std::size_t> pods;
      for (std::size_t k : of_items) pods.insert(pods.end(), items[k].begin(), items[k].end());
      std::sort(pods.begin(), pods.end());
      return pods;
    };
    for (std::vector<std::size_t>& g : colocation.groups) g = expand(g);
    std::sort(colocation.groups.begin(), colocation.groups.end());
    colocation.too_big = expand(colocation.too_big);
  }
  plan.collision_limit_samples = colocation.collision_limit_samples;
  plan.too_big = colocation.too_big;
  plan.search_evaluations = colocation.evaluations;
  plan.replay = ReplayColocation(telemetry, colocation.groups, plan.packing_capacity_mib, options.max_collision_share);
  if (options.robust) {
    std::vector<ActiveDuty> duty;
    for (const PodSeries& p : telemetry.pods) duty.push_back(ActiveDutyOf(p));
    for (const std::vector<std::size_t>& g : colocation.groups) {
      std::vector<const ActiveDuty*> members;
      for (std::size_t p : g) members.push_back(&duty[p]);
      const double p_if_active = CollisionProbabilityIfActive(members);
      plan.collision_p_if_active.push_back(p_if_active);
      if (p_if_active > options.max_collision_share + 1e-12)
        return Internal("a group collides {:.4f} of the time if always active, above {}", p_if_active,
                        options.max_collision_share);
    }
  }
  // The replay's share test is per sample count; the packer's is floor(share x samples).
  if (!plan.replay.safe)
    return Internal("replay found the co-location unsafe: {} memory overflows, max collision share {}",
                    plan.replay.memory_overflows, plan.replay.max_collision_share);
  for (const GpuReplay& g : plan.replay.gpus) {
    std::vector<int> live(telemetry.samples + 1, 0);  // +1 at first, -1 after last
    for (std::size_t p : g.pods) {
      ++live[telemetry.pods[p].first];
      --live[telemetry.pods[p].last + 1];
    }
    int now = 0, most = 0;
    for (std::size_t t = 0; t < telemetry.samples; ++t) most = std::max(most, now += live[t]);
    plan.group_pods_at_once.push_back(static_cast<std::size_t>(most));
  }
  plan.reserved_gpus = PlaceOnReservedGpus(plan, telemetry.reserved_gpu_memory);
  plan.group_of.assign(telemetry.pods.size(), std::nullopt);
  for (std::size_t g = 0; g < plan.replay.gpus.size(); ++g) {
    for (std::size_t p : plan.replay.gpus[g].pods) plan.group_of[p] = g;
  }

  plan.device_share.clear();
  for (std::size_t i = 0; i < telemetry.pods.size(); ++i)
    plan.device_share.push_back(DeviceShare(telemetry.pods[i], plan.current_gpu(i).id, options.spec_mig_profiles));
  PlanTotals& t = plan.totals;
  t.gpus_before = 0;
  for (std::size_t i = 0; i < telemetry.pods.size(); ++i) t.gpus_before += plan.gpus_of(i);
  const std::size_t own = plan.too_big.size() + plan.kept_gpus();  // one GPU each, a multi-GPU pod all of its
  t.gpus_after = plan.replay.gpus.size() + own;
  t.gpus_lower_bound = t.lower_bound.gpus() + own;
  {  // Replicas apart: a set of k packed replicas needs k GPUs, whatever their size.
    std::map<int, std::size_t> packed_in_set;
    for (std::size_t i = 0; i < plan.replica_set.size(); ++i)
      if (plan.replica_set[i] >= 0 && plan.group_of[i]) ++packed_in_set[plan.replica_set[i]];
    for (const auto& [set, k] : packed_in_set) plan.largest_replica_set = std::max(plan.largest_replica_set, k);
    t.gpus_lower_bound = std::max(t.gpus_lower_bound, plan.largest_replica_set + own);
  }
  t.gpus_first_fit_decreasing = colocation.first_fit_decreasing_gpus + own;
  const double hours_per_sample = telemetry.step_s / 3600.0;
  double duty_before = 0, duty_after = 0;
  for (std::size_t i = 0; i < plan.profiles.size(); ++i) {
    const PodProfile& p = plan.profiles[i];
    const auto gpus = static_cast<double>(plan.gpus_of(i));
    t.gpu_hours_before += p.gpu_hours_allocated * gpus;
    duty_before += p.gpu_util_pct.mean * static_cast<double>(p.running_samples) * gpus;
  }
  for (const GpuReplay& g : plan.replay.gpus) {
    t.gpu_hours_after += static_cast<double>(g.occupied_samples) * hours_per_sample;
    duty_after += g.mean_util_pct * static_cast<double>(telemetry.samples);
  }
  double too_big_usd_per_hour = KeptUsdPerHour(plan);
  for (std::size_t p : plan.kept_on_current_gpu()) {
    const auto gpus = static_cast<double>(plan.gpus_of(p));
    t.gpu_hours_after += plan.profiles[p].gpu_hours_allocated * gpus;
    duty_after += plan.profiles[p].gpu_util_pct.mean * static_cast<double>(plan.profiles[p].running_samples) * gpus;
  }
  for (std::size_t p : plan.too_big) {
    too_big_usd_per_hour += plan.right_sizing[p].usd_per_month_recommended / kHoursPerMonth;
    t.gpu_hours_after += plan.profiles[p].gpu_hours_allocated;
    duty_after += plan.profiles[p].gpu_util_pct.mean * static_cast<double>(plan.profiles[p].running_samples);
  }
  const double window = static_cast<double>(std::max<std::size_t>(1, telemetry.samples));
  t.mean_duty_pct_before = duty_before / (window * static_cast<double>(std::max<std::size_t>(1, t.gpus_before)));
  t.mean_duty_pct_after = duty_after / (window * static_cast<double>(std::max<std::size_t>(1, t.gpus_after)));
  // Each pod at its own model's price; a pod on a MIG instance at its share of the GPU.
  t.usd_per_month_before = 0;
  for (std::size_t i = 0; i < telemetry.pods.size(); ++i)
    t.usd_per_month_before += plan.usd_per_hour_today(i) * kHoursPerMonth;
  t.usd_per_month_after =
      (static_cast<double>(plan.replay.gpus.size()) * target->on_demand_per_gpu_hour.value + too_big_usd_per_hour) *
      kHoursPerMonth;
  Result<FleetPlan> fleet = BuildFleetPlan(capped_or_real, plan, catalog, options.fleet);
  if (!fleet) return fleet.error();
  plan.fleet = std::move(*fleet);
  if (const FleetReplay r = ReplayFleet(telemetry, plan.fleet, options.max_collision_share); !r.safe)
    return Internal("replay found the fleet plan unsafe: {} memory overflows, {} GPUs over the collision limit",
                    r.memory_overflows, r.gpus_over_collision_limit);
  if (options.mig_isolation) {
    const Result<const MigGpu*> mig_gpu = MigCatalog::Embedded().Find(options.target_gpu);
    if (!mig_gpu) return FailedPrecondition("--sharing mig: {} does not support MIG", options.target_gpu);
    // CPU-starved and multi-GPU pods keep their whole current GPU(s) here too: no instance for them.
    std::vector<MigWorkload> workloads;
    std::vector<std::size_t> pod_of;  // workload -> pod
    for (std::size_t i = 0; i < plan.profiles.size(); ++i) {
      if (plan.keeps_current_gpu(i)) continue;
      const PodProfile& p = plan.profiles[i];
      workloads.push_back({p.pod, plan.right_sizing[i].required, 0});
      pod_of.push_back(i);
    }
    Result<MigPlan> mig = PlanMigLayouts(**mig_gpu, workloads);
    if (!mig) return mig.error();
    std::vector<int> sets;
    for (std::size_t i : pod_of) sets.push_back(plan.replica_set[i]);
    SpreadMigReplicas(**mig_gpu, *mig, sets);
    for (std::size_t w = 0; w < pod_of.size() && w < mig->assignments.size(); ++w) {
      const MigAssignment& a = mig->assignments[w];
      if (a.gpu < 0) continue;
      const float memory = static_cast<float>((*(*mig_gpu)->Profile(a.profile))->memory.value);
      const std::vector<float>& series = telemetry.pods[pod_of[w]].fb_used_mib;
      plan.mig_pods_exceeding += std::any_of(series.begin(), series.end(), [&](float v) { return v > memory; });
    }
    plan.mig_usd_per_month =
        (static_cast<double>(mig->gpus + static_cast<int>(mig->too_big.size())) * target->on_demand_per_gpu_hour.value +
         KeptUsdPerHour(plan)) *
        kHoursPerMonth;
    plan.mig = std::move(*mig);
  }
  return plan;
}

}  // namespace gpufit
