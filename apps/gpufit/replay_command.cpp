#include "replay_command.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli_common.h"
#include "gpufit/ingest/kube_reader.h"
#include "gpufit/plan/replay.h"
#include "gpufit/plan/workload_keys.h"
#include "telemetry_source.h"

namespace gpufit::cli {
namespace {

using nlohmann::json;

struct ReplayFlags {
  TelemetrySource telemetry;
  std::string plan, catalog, pods;
  Output output;
};

// What a replay checks against, from the catalog and the plan's options.
struct Limits {
  double capacity = 0;  // target memory - reserve, MiB
  double margin = 0;    // memory_envelope.margin_mib
  double share = 0;     // max_collision_share
};

// Throws json::exception on a missing or mistyped field (the caller names the file).
Result<Limits> ReadLimits(const json& plan, const GpuCatalog& catalog, const std::string& plan_path) {
  Limits l;
  if (plan.at("schema_version") != 1) return InvalidArgument("{}: schema_version must be 1", plan_path);
  const auto& options = plan.at("options");
  const Result<GpuModel> target = catalog.Find(options.at("target_gpu").get<std::string>());
  if (!target) return InvalidArgument("{}: options.target_gpu: {}", plan_path, target.error().message);
  if (!options.at("reserve_mib").is_number_integer())
    return InvalidArgument("{}: options.reserve_mib must be a whole number of MiB", plan_path);
  const auto reserve = options.at("reserve_mib").get<std::int64_t>();
  if (reserve < 0 || reserve >= target->memory.value)
    return InvalidArgument("{}: options.reserve_mib must be in [0, {}), got {}", plan_path, target->memory.value,
                           reserve);
  l.capacity = static_cast<double>(target->memory.value - reserve);
  if (plan.contains("capacity_mib") && plan["capacity_mib"].get<double>() != l.capacity)
    return InvalidArgument("{}: capacity_mib {} is not {}'s {} MiB minus reserve_mib {}", plan_path,
                           plan["capacity_mib"].get<double>(), target->id, target->memory.value, reserve);
  if (plan.contains("memory_envelope")) {
    l.margin = plan["memory_envelope"].at("margin_mib").get<double>();
    if (!(l.margin >= 0 && l.margin < l.capacity))
      return InvalidArgument("{}: memory_envelope.margin_mib must be in [0, {}), got {}", plan_path, l.capacity,
                             l.margin);
  }
  l.share = options.at("max_collision_share").get<double>();
  if (!(l.share >= 0 && l.share <= 1))
    return InvalidArgument("{}: options.max_collision_share must be in [0, 1], got {}", plan_path, l.share);
  return l;
}

// By name: every pod of the telemetry placed exactly once. Throws json::exception.
Result<std::vector<std::vector<std::size_t>>> GroupsByName(const json& plan, const Telemetry& tel, const Limits& l,
                                                           const std::string& plan_path,
                                                           const std::string& telemetry_path) {
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < tel.pods.size(); ++i) index[tel.pods[i].pod] = i;
  std::vector<int> placed(tel.pods.size(), 0);
  auto find = [&](const json& name, const std::string& where) -> Result<std::size_t> {
    const auto it = index.find(name.get<std::string>());
    if (it == index.end())
      return InvalidArgument(
          "{}: {}: pod '{}' is not in {}{}", plan_path, where, name.get<std::string>(), telemetry_path,
          plan.contains("too_big_for_target_workloads") && !plan["too_big_for_target_workloads"].is_null()
              ? " (the plan names workloads: give --pods to match pods by workload)"
              : "");
    if (placed[it->second]++ > 0) return InvalidArgument("{}: pod '{}' is placed twice", plan_path, it->first);
    return it->second;
  };
  std::vector<std::vector<std::size_t>> groups;
  for (const auto& g : plan.at("groups")) {
    auto& group = groups.emplace_back();
    for (const auto& name : g.at("pods")) {
      const Result<std::size_t> pod = find(name, fmt::format("group {}", groups.size() - 1));
      if (!pod) return pod.error();
      group.push_back(*pod);
    }
  }
  for (const auto& name : plan.value("too_big_for_target", json::array())) {
    const Result<std::size_t> pod = find(name, "too_big_for_target");
    if (!pod) return pod.error();
    const auto& fb = tel.pods[*pod].fb_used_mib;
    if (*std::max_element(fb.begin(), fb.end()) <= l.capacity - l.margin)
      return InvalidArgument("{}: too_big_for_target: pod '{}' fits in {} MiB", plan_path, name.get<std::string>(),
                             l.capacity - l.margin);
  }
  // CPU-starved pods keep their own current GPU: alone, nothing to replay.
  for (const auto& name : plan.value("kept_on_current_gpu", json::array())) {
    const Result<std::size_t> pod = find(name, "kept_on_current_gpu");
    if (!pod) return pod.error();
  }
  for (std::size_t i = 0; i < placed.size(); ++i) {
    if (placed[i] == 0)
      return InvalidArgument("{}: pod '{}' of {} is in no group", plan_path, tel.pods[i].pod, telemetry_path);
  }
  return groups;
}

// One workload list of the plan (`where` names it); `pods` is the matching list of pod names,
// whose length the replicas must add up to. Throws json::exception.
Result<std::vector<WorkloadSlots>> ReadSlots(const json* list, const std::string& where, std::size_t pods,
                                             const std::string& plan_path) {
  if (list == nullptr || list->is_null())
    return InvalidArgument(
        "{}: {} is missing: the plan was made without --pods, so it names pods, not workloads; make it again with "
        "gpufit plan --pods PODS.json, or replay without --pods",
        plan_path, where);
  if (!list->is_array()) return InvalidArgument("{}: {} must be a list", plan_path, where);
  std::vector<WorkloadSlots> out;
  std::size_t total = 0;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const json& e = (*list)[i];
    if (!e.is_object() || !e.contains("workload") || !e["workload"].is_string() ||
        e["workload"].get<std::string>().empty())
      return InvalidArgument("{}: {}[{}].workload must be a non-empty string", plan_path, where, i);
    if (!e.contains("replicas") || !e["replicas"].is_number_integer() || e["replicas"].get<std::int64_t>() < 1)
      return InvalidArgument("{}: {}[{}].replicas must be a whole number >= 1", plan_path, where, i);
    const WorkloadSlots s{e["workload"].get<std::string>(), e["replicas"].get<std::size_t>()};
    if (std::any_of(out.begin(), out.end(), [&](const WorkloadSlots& o) { return o.workload == s.workload; }))
      return InvalidArgument("{}: {}: workload '{}' is listed twice", plan_path, where, s.workload);
    total += s.replicas;
    out.push_back(s);
  }
  if (total != pods)
    return InvalidArgument("{}: {}: the replicas add up to {}, but the plan lists {} pods there", plan_path, where,
                           total, pods);
  return out;
}

// The plan's groups and own-GPU lists by workload. Throws json::exception.
Result<WorkloadPlan> ReadWorkloadPlan(const json& plan, const std::string& plan_path) {
  WorkloadPlan out;
  const json& groups = plan.at("groups");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const json* list = groups[g].contains("workloads") ? &groups[g]["workloads"] : nullptr;
    Result<std::vector<WorkloadSlots>> s =
        ReadSlots(list, fmt::format("groups[{}].workloads", g), groups[g].at("pods").size(), plan_path);
    if (!s) return s.error();
    out.groups.push_back(std::move(*s));
  }
  for (auto [field, into] :
       {std::pair{"too_big_for_target", &out.too_big}, std::pair{"kept_on_current_gpu", &out.kept}}) {
    const std::string key = std::string(field) + "_workloads";
    const json* list = plan.contains(key) ? &plan[key] : nullptr;
    Result<std::vector<WorkloadSlots>> s = ReadSlots(list, key, plan.value(field, json::array()).size(), plan_path);
    if (!s) return s.error();
    *into = std::move(*s);
  }
  return out;
}

// A plan for a back end that caps memory (memory_envelope.memory_caps): each pod's cap, by
// pod name and by workload key (pods[].workload, with --pods). Throws json::exception.
struct Caps {
  std::map<std::string, double> by_pod, by_workload;
};
Result<std::optional<Caps>> ReadCaps(const json& plan, const std::string& plan_path) {
  if (!plan.contains("memory_envelope") || !plan["memory_envelope"].value("memory_caps", false))
    return std::optional<Caps>();
  Caps caps;
  const json& groups = plan.at("groups");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const std::string where = fmt::format("groups[{}].memory_caps_mib", g);
    if (!groups[g].contains("memory_caps_mib") || !groups[g]["memory_caps_mib"].is_array())
      return InvalidArgument("{}: {}: missing (memory_envelope.memory_caps is true)", plan_path, where);
    const json& list = groups[g]["memory_caps_mib"];
    if (list.size() != groups[g].at("pods").size())
      return InvalidArgument("{}: {}: {} caps for {} pods", plan_path, where, list.size(), groups[g]["pods"].size());
    for (std::size_t i = 0; i < list.size(); ++i) {
      const double cap = list[i].is_number() ? list[i].get<double>() : -1;
      if (!(cap > 0 && std::isfinite(cap)))
        return InvalidArgument("{}: {}[{}] must be a positive number of MiB", plan_path, where, i);
      caps.by_pod[groups[g]["pods"][i].get<std::string>()] = cap;
    }
  }
  for (const json& p : plan.value("pods", json::array()))
    if (p.contains("workload") && p["workload"].is_string() && caps.by_pod.count(p.at("pod").get<std::string>()))
      caps.by_workload[p["workload"].get<std::string>()] = caps.by_pod.at(p["pod"].get<std::string>());
  return std::optional<Caps>(std::move(caps));
}

int Run(ReplayFlags& f) {
  const Result<GpuCatalog> catalog = LoadCatalog(f.catalog);
  if (!catalog) return Fail(catalog.error());
  std::ifstream in(f.plan);
  if (!in) return Fail(NotFound("{}: cannot open the plan file", f.plan));
  json plan;
  try {
    plan = json::parse(in);
  } catch (const json::exception& e) {
    return Fail(InvalidArgument("{}: not valid JSON: {}", f.plan, e.what()));
  }
  if (!f.telemetry.given()) return Fail(InvalidArgument("replay: give --telemetry or --prometheus"));
  std::optional<std::vector<KubePod>> pods;
  if (!f.pods.empty()) {
    Result<std::vector<KubePod>> p = ReadKubePods(f.pods);
    if (!p) return Fail(p.error());
    pods = std::move(*p);
  }
  const Result<Telemetry> tel = LoadTelemetry(f.telemetry, NowSeconds());
  if (!tel) return Fail(tel.error());
  const std::string& telemetry_path = f.telemetry.name;
  Replay r;
  std::optional<CapReplay> over_cap;
  json unplanned = json::array(), absent = json::array(), not_in_pods = json::array();
  std::string md_extra;
  try {
    const Result<Limits> limits = ReadLimits(plan, *catalog, f.plan);
    if (!limits) return Fail(limits.error());
    const Result<std::optional<Caps>> caps = ReadCaps(plan, f.plan);
    if (!caps) return Fail(caps.error());
    std::vector<std::optional<double>> cap_of(tel->pods.size());
    if (!pods) {
      const Result<std::vector<std::vector<std::size_t>>> groups =
          GroupsByName(plan, *tel, *limits, f.plan, telemetry_path);
      if (!groups) return Fail(groups.error());
      r = ReplayColocation(*tel, *groups, limits->capacity, limits->share);
      if (*caps)
        for (std::size_t i = 0; i < tel->pods.size(); ++i)
          if (const auto it = (*caps)->by_pod.find(tel->pods[i].pod); it != (*caps)->by_pod.end())
            cap_of[i] = it->second;
    } else {
      const Result<WorkloadPlan> wplan = ReadWorkloadPlan(plan, f.plan);
      if (!wplan) return Fail(wplan.error());
      std::vector<std::string> keys;
      for (const PodSeries& p : tel->pods) {
        keys.push_back(WorkloadKeyOf(p.pod, *pods));
        if (FindKubePod(*pods, p.pod) == nullptr && keys.back().starts_with("pod/")) not_in_pods.push_back(p.pod);
      }
      const Result<WorkloadReplay> w =
          ReplayByWorkload(*tel, keys, *wplan, limits->capacity, limits->share, limits->capacity - limits->margin);
      if (!w) return Fail(InvalidArgument("{}: {}", f.plan, w.error().message));
      r = w->replay;
      if (*caps)
        for (std::size_t i = 0; i < tel->pods.size(); ++i)
          if (const auto it = (*caps)->by_workload.find(keys[i]); it != (*caps)->by_workload.end())
            cap_of[i] = it->second;
      for (const UnplannedWorkload& u : w->unplanned) {
        unplanned.push_back({{"workload", u.workload},
                             {"replicas", u.replicas},
                             {"planned_slots", u.planned_slots},
                             {"unplanned_replicas", u.replicas - u.planned_slots},
                             {"pods", u.pods}});
        md_extra += fmt::format("- unplanned: {} ({} replicas, {} planned slots): {}\n", u.workload, u.replicas,
                                u.planned_slots, fmt::join(u.pods, ", "));
      }
      for (const std::string& a : w->absent) {
        absent.push_back(a);
        md_extra += fmt::format("- absent (its slots stay empty): {}\n", a);
      }
      if (!not_in_pods.empty())
        md_extra +=
            fmt::format("- {} telemetry pods are not in {} and were matched by name\n", not_in_pods.size(), f.pods);
    }
    if (*caps) over_cap = ReplayCaps(*tel, cap_of);
  } catch (const json::exception& e) {
    return Fail(InvalidArgument("{}: {}", f.plan, e.what()));
  }
  const bool safe = r.safe && (!over_cap || over_cap->samples_over == 0);
  if (over_cap)
    for (const std::string& p : over_cap->pods) md_extra += fmt::format("- over its memory cap: {}\n", p);
  json j = {
      {"gpus", r.gpus.size()}, {"memory_overflows", r.memory_overflows}, {"max_collision_share", r.max_collision_share},
      {"safe", safe},          {"matching", pods ? "workload" : "pod"},  {"unplanned", unplanned},
      {"absent", absent},      {"pods_not_in_pods_file", not_in_pods}};
  if (over_cap) {
    // Plans for hami, kai, dra-mps: each pod runs under its own cap.
    j["cap_overflow_samples"] = over_cap->samples_over;
    j["over_cap"] = over_cap->pods;
  }
  std::string md = fmt::format(
      "Replay of {} against {}{}: {} GPUs, {} memory overflows{}, worst collision share {:.2f}% -> {}\n", f.plan,
      telemetry_path, pods ? fmt::format(" by workload ({})", f.pods) : std::string(), r.gpus.size(),
      r.memory_overflows,
      over_cap ? fmt::format(", {} samples of a pod over its memory cap", over_cap->samples_over) : std::string(),
      100 * r.max_collision_share, safe ? "safe" : "UNSAFE");
  md += md_extra;
  const int rc = Emit(f.output, "replay", j.dump(2) + "\n", md);
  return rc != 0 ? rc : (safe ? 0 : 3);
}

}  // namespace

void AddReplayCommand(CLI::App& app, int& rc) {
  auto f = std::make_shared<ReplayFlags>();
  CLI::App* cmd = app.add_subcommand("replay", "replay telemetry against a plan.json; exit 3 if unsafe");
  AddTelemetrySourceOptions(cmd, f->telemetry);
  cmd->add_option("--plan", f->plan, "plan.json written by gpufit plan")->required();
  cmd->add_option("--catalog", f->catalog, "GPU catalog YAML the plan was made with (default: embedded)");
  cmd->add_option("--pods", f->pods,
                  "kubectl get pods -A -o json of the replayed period: match pods to the plan by workload (a plan "
                  "made with plan --pods), so renamed pods after a rollout still match");
  AddOutputOptions(cmd, f->output);
  cmd->callback([f, &rc] { rc = Run(*f); });
}

}  // namespace gpufit::cli
