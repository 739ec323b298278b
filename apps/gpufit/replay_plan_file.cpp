#include "replay_plan_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "gpufit/core/json_input.h"
#include "gpufit/core/text.h"

namespace gpufit::cli {
namespace {

// The member `key` of `plan` in place (an empty array when absent), not a copy as
// json::value makes: a copy loses the JSON pointer that errors name.
const json& Member(const json& plan, const char* key) {
  static const json empty = json::array();
  const auto it = plan.find(key);
  return it == plan.end() ? empty : *it;
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

}  // namespace

// "[json.exception.type_error.302] (/options/reserve_mib) type must be number, but is string"
// as "options.reserve_mib: type must be number, but is string" (the diagnostics' JSON pointer;
// "/groups/3/pods" is written groups[3].pods).
std::string FieldError(const json::exception& e) {
  std::string_view text = e.what();
  if (const std::size_t end = text.find("] "); text.substr(0, 1) == "[" && end != std::string_view::npos)
    text.remove_prefix(end + 2);
  std::string field;
  if (const std::size_t close = text.find(") "); text.substr(0, 2) == "(/" && close != std::string_view::npos) {
    for (const std::string& step : SplitList(text.substr(2, close - 2), '/')) {
      const bool index = std::all_of(step.begin(), step.end(), [](char c) { return c >= '0' && c <= '9'; });
      field += index ? "[" + step + "]" : (field.empty() ? "" : ".") + step;
    }
    text.remove_prefix(close + 2);
  }
  if (field.empty()) field = "top level";
  return Excerpt(fmt::format("{}: {}", field, text), 300);
}

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
  for (const auto& name : Member(plan, "too_big_for_target")) {
    const Result<std::size_t> pod = find(name, "too_big_for_target");
    if (!pod) return pod.error();
    const auto& fb = tel.pods[*pod].fb_used_mib;
    if (*std::max_element(fb.begin(), fb.end()) <= l.capacity - l.margin)
      return InvalidArgument("{}: too_big_for_target: pod '{}' fits in {} MiB", plan_path, name.get<std::string>(),
                             l.capacity - l.margin);
  }
  // CPU-starved pods keep their own current GPU: alone, nothing to replay.
  for (const auto& name : Member(plan, "kept_on_current_gpu")) {
    const Result<std::size_t> pod = find(name, "kept_on_current_gpu");
    if (!pod) return pod.error();
  }
  for (std::size_t i = 0; i < placed.size(); ++i) {
    if (placed[i] == 0)
      return InvalidArgument("{}: pod '{}' of {} is in no group", plan_path, tel.pods[i].pod, telemetry_path);
  }
  return groups;
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
    Result<std::vector<WorkloadSlots>> s = ReadSlots(list, key, Member(plan, field).size(), plan_path);
    if (!s) return s.error();
    *into = std::move(*s);
  }
  return out;
}

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
  for (const json& p : Member(plan, "pods"))
    if (p.contains("workload") && p["workload"].is_string() && caps.by_pod.count(p.at("pod").get<std::string>()))
      caps.by_workload[p["workload"].get<std::string>()] = caps.by_pod.at(p["pod"].get<std::string>());
  return std::optional<Caps>(std::move(caps));
}

}  // namespace gpufit::cli
