#include "gpufit/plan/workload_keys.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>

namespace gpufit {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool LowerAlnum(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); });
}

// "<deployment>-<hash>-<suffix>" -> "<deployment>", or "" when the name is not so made.
std::string DeploymentOfName(std::string_view name) {
  const std::size_t last = name.rfind('-');
  if (last == std::string_view::npos || name.size() - last - 1 != 5 || !LowerAlnum(name.substr(last + 1))) return "";
  const std::size_t hash = name.rfind('-', last - 1);
  if (hash == std::string_view::npos || hash == 0) return "";
  const std::string_view h = name.substr(hash + 1, last - hash - 1);
  if (h.empty() || h.size() > 10 || !LowerAlnum(h)) return "";
  return std::string(name.substr(0, hash));
}

// The per-sample sum of the k largest values of `series` (0 outside lives).
void AddTopK(const std::vector<const std::vector<float>*>& series, std::size_t k, std::vector<float>& out) {
  std::vector<float> at(series.size());
  for (std::size_t t = 0; t < out.size(); ++t) {
    for (std::size_t i = 0; i < series.size(); ++i) at[i] = (*series[i])[t];
    const std::size_t n = std::min(k, at.size());
    std::partial_sort(at.begin(), at.begin() + static_cast<std::ptrdiff_t>(n), at.end(), std::greater<>());
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += at[i];
    out[t] = static_cast<float>(sum);
  }
}

}  // namespace

const KubePod* FindKubePod(const std::vector<KubePod>& pods, const std::string& telemetry_pod) {
  const std::string_view key = PodKeyOf(telemetry_pod);
  const std::size_t slash = key.find('/');
  const KubePod* match = nullptr;
  for (const KubePod& p : pods) {
    if (slash != std::string::npos ? p.Key() == key : p.name == key) {
      if (match != nullptr) return nullptr;  // a bare name in several namespaces: ambiguous
      match = &p;
    }
  }
  return match;
}

std::string WorkloadKeyOf(const std::string& telemetry_pod, const std::vector<KubePod>& pods) {
  const std::string_view key = PodKeyOf(telemetry_pod);
  if (const KubePod* pod = FindKubePod(pods, telemetry_pod)) {
    if (pod->owner.kind.empty() || pod->owner.kind == "Pod") return "pod/" + pod->Key();
    return fmt::format("{}/{}/{}", Lower(pod->owner.kind), pod->namespace_name, pod->owner.name);
  }
  const std::size_t slash = key.find('/');
  if (slash != std::string_view::npos) {
    const std::string_view ns = key.substr(0, slash);
    const std::string deployment = DeploymentOfName(key.substr(slash + 1));
    const bool known = !deployment.empty() && std::any_of(pods.begin(), pods.end(), [&](const KubePod& p) {
      return p.namespace_name == ns && p.owner.kind == "Deployment" && p.owner.name == deployment;
    });
    if (known) return fmt::format("deployment/{}/{}", ns, deployment);
  }
  return "pod/" + std::string(key);
}

std::vector<WorkloadSlots> CountSlots(const std::vector<std::string>& keys) {
  std::map<std::string, std::size_t> count;
  for (const std::string& k : keys) ++count[k];
  std::vector<WorkloadSlots> out;
  for (const auto& [workload, n] : count) out.push_back({workload, n});
  return out;
}

WorkloadPlan WorkloadPlanOf(const Plan& plan) {
  const auto slots = [&](const std::vector<std::size_t>& pods) {
    std::vector<std::string> keys;
    for (std::size_t p : pods) keys.push_back(plan.workload_of.at(p));
    return CountSlots(keys);
  };
  WorkloadPlan out;
  for (const GpuReplay& g : plan.replay.gpus) out.groups.push_back(slots(g.pods));
  out.too_big = slots(plan.too_big);
  out.kept = slots(plan.kept_on_current_gpu());
  return out;
}

std::vector<WorkloadReplicas> GroupByWorkload(const Telemetry& telemetry, const std::vector<std::string>& keys) {
  std::map<std::string, std::vector<std::size_t>> pods;
  for (std::size_t i = 0; i < keys.size() && i < telemetry.pods.size(); ++i) pods[keys[i]].push_back(i);
  std::vector<WorkloadReplicas> out;
  for (auto& [workload, members] : pods) {
    // Most lives overlapping one sample: +1 at each start, -1 after each end.
    std::vector<int> delta(telemetry.samples + 1, 0);
    for (std::size_t p : members) {
      ++delta[telemetry.pods[p].first];
      --delta[telemetry.pods[p].last + 1];
    }
    int alive = 0, most = 0;
    for (int d : delta) most = std::max(most, alive += d);
    out.push_back({workload, std::move(members), static_cast<std::size_t>(most)});
  }
  return out;
}

PodSeries SlotEnvelope(const Telemetry& telemetry, const std::vector<std::size_t>& pods, std::size_t k,
                       const std::string& name) {
  PodSeries s{.pod = name,
              .fb_used_mib = std::vector<float>(telemetry.samples, 0.0f),
              .gpu_util_pct = std::vector<float>(telemetry.samples, 0.0f)};
  if (pods.empty()) return s;
  std::vector<const std::vector<float>*> fb, util;
  s.first = telemetry.samples;
  for (std::size_t p : pods) {
    fb.push_back(&telemetry.pods[p].fb_used_mib);
    util.push_back(&telemetry.pods[p].gpu_util_pct);
    s.first = std::min(s.first, telemetry.pods[p].first);
    s.last = std::max(s.last, telemetry.pods[p].last);
  }
  AddTopK(fb, k, s.fb_used_mib);
  AddTopK(util, k, s.gpu_util_pct);
  return s;
}

Result<WorkloadReplay> ReplayByWorkload(const Telemetry& telemetry, const std::vector<std::string>& keys,
                                        const WorkloadPlan& plan, double capacity_mib, double max_collision_share,
                                        double too_big_above_mib) {
  std::map<std::string, const WorkloadReplicas*> now;
  const std::vector<WorkloadReplicas> replicas = GroupByWorkload(telemetry, keys);
  for (const WorkloadReplicas& w : replicas) now[w.workload] = &w;
  std::map<std::string, std::size_t> planned;
  for (const auto& group : plan.groups)
    for (const WorkloadSlots& s : group) planned[s.workload] += s.replicas;
  for (const WorkloadSlots& s : plan.too_big) planned[s.workload] += s.replicas;
  for (const WorkloadSlots& s : plan.kept) planned[s.workload] += s.replicas;

  for (const WorkloadSlots& s : plan.too_big) {
    const auto it = now.find(s.workload);
    if (it == now.end()) continue;
    double peak = 0;
    for (std::size_t p : it->second->pods)
      for (float v : telemetry.pods[p].fb_used_mib) peak = std::max(peak, static_cast<double>(v));
    if (peak <= too_big_above_mib)
      return InvalidArgument("too_big_for_target_workloads: workload '{}' peaks at {} MiB, it fits in {} MiB",
                             s.workload, peak, too_big_above_mib);
  }

  WorkloadReplay out;
  Telemetry slots;  // one series per group entry: its workload's envelope
  slots.start_s = telemetry.start_s;
  slots.step_s = telemetry.step_s;
  slots.samples = telemetry.samples;
  std::vector<std::vector<std::size_t>> groups;
  for (const auto& group : plan.groups) {
    auto& members = groups.emplace_back();
    for (const WorkloadSlots& s : group) {
      const auto it = now.find(s.workload);
      members.push_back(slots.pods.size());
      slots.pods.push_back(SlotEnvelope(telemetry, it == now.end() ? std::vector<std::size_t>{} : it->second->pods,
                                        s.replicas, fmt::format("{} x{}", s.workload, s.replicas)));
    }
  }
  out.replay = ReplayColocation(slots, groups, capacity_mib, max_collision_share);
  for (const auto& [workload, n] : planned)
    if (!now.count(workload)) out.absent.push_back(workload);
  for (const WorkloadReplicas& w : replicas) {
    const auto it = planned.find(w.workload);
    const std::size_t slots_planned = it == planned.end() ? 0 : it->second;
    if (w.replicas <= slots_planned) continue;
    UnplannedWorkload u{.workload = w.workload, .replicas = w.replicas, .planned_slots = slots_planned, .pods = {}};
    for (std::size_t p : w.pods) u.pods.push_back(telemetry.pods[p].pod);
    out.unplanned.push_back(std::move(u));
  }
  return out;
}

void KeyPlanByWorkload(Plan& plan, const Telemetry& telemetry, const std::vector<KubePod>& pods) {
  plan.workload_of.clear();
  for (const std::string& name : plan.pod_names) plan.workload_of.push_back(WorkloadKeyOf(name, pods));
  const Result<WorkloadReplay> r =
      ReplayByWorkload(telemetry, plan.workload_of, WorkloadPlanOf(plan), plan.packing_capacity_mib,
                       plan.options.max_collision_share, plan.packing_capacity_mib);
  // The plan's too-big pods each peak above the packing capacity, so their workloads do too.
  assert(r.has_value());
  if (r) plan.workload_replay = r->replay;
}

}  // namespace gpufit
