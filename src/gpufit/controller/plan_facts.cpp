#include "gpufit/controller/plan_facts.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace gpufit::controller {
namespace {

using nlohmann::json;

std::string WorkloadKey(const json& pod) {
  if (const auto w = pod.find("workload"); w != pod.end() && w->is_string()) return w->get<std::string>();
  const std::string name = pod.at("pod").get<std::string>();
  return "pod/" + name.substr(0, name.find_first_of("[@"));
}

std::string VerdictOf(const json& doc, const std::string& strategy) {
  const json* status = doc.contains("summary") ? &doc["summary"] : nullptr;
  if (status == nullptr || !status->contains("status") || !(*status)["status"].is_object()) return "not tested";
  const json& all = (*status)["status"];
  const auto it = all.find(strategy);
  if (it == all.end() || !it->is_object() || !it->contains("status")) return "not tested";
  return (*it)["status"].get<std::string>();
}

}  // namespace

Result<PlanFacts> ReadPlanFacts(const std::string& plan_json, const std::string& what) {
  const json doc = json::parse(plan_json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return InvalidArgument("{}: not a plan.json (not a JSON object)", what);
  if (doc.value("schema_version", 0) != 1)
    return InvalidArgument("{}: schema_version must be 1, got {}", what,
                           doc.contains("schema_version") ? doc["schema_version"].dump() : "none");
  PlanFacts facts;
  if (!doc.contains("pods")) return facts;  // training or inference sections alone
  try {
    const json& totals = doc.at("totals");
    facts.gpus_before = totals.at("gpus_before").get<std::int64_t>();
    facts.gpus_after = totals.at("gpus_after").get<std::int64_t>();
    facts.usd_per_month_before = totals.at("usd_per_month_before").get<double>();
    facts.usd_per_month_after = totals.at("usd_per_month_after").get<double>();
    facts.usd_per_month_saved = totals.at("usd_per_month_saved").get<double>();
    std::map<std::string, double> fitted;
    if (doc.contains("workload_profiles") && doc["workload_profiles"].is_object())
      for (const json& w : doc["workload_profiles"].at("workloads"))
        fitted[w.at("workload").get<std::string>()] = w.at("memory_peak_mib").get<double>();
    std::map<std::string, WorkloadFacts> by_key;
    const json& groups = doc.at("groups");
    for (const json& pod : doc.at("pods")) {
      const std::string name = pod.at("pod").get<std::string>();
      const std::string key = WorkloadKey(pod);
      facts.workload_of[name] = key;
      WorkloadFacts& w = by_key[key];
      w.workload = key;
      w.pods.push_back(name);
      std::int64_t cap = pod.at("right_sizing").at("required_mib").get<std::int64_t>();
      std::string strategy = "kept";
      if (const json& g = pod.at("group"); g.is_number_integer()) {
        strategy = "colocation";
        const json& group = groups.at(g.get<std::size_t>());
        if (const auto caps = group.find("memory_caps_mib"); caps != group.end()) {
          const json& members = group.at("pods");
          for (std::size_t i = 0; i < members.size(); ++i)
            if (members[i].get<std::string>() == name) cap = caps->at(i).get<std::int64_t>();
        }
      } else if (!pod.at("right_sizing").at("recommended_gpu").is_null() &&
                 std::find(doc.at("kept_on_current_gpu").begin(), doc.at("kept_on_current_gpu").end(), name) ==
                     doc.at("kept_on_current_gpu").end()) {
        strategy = "right_sizing";
      }
      w.cap_mib = std::max(w.cap_mib, cap);
      // A workload whose pods were placed apart takes the strategy that changes the most.
      if (w.strategy.empty() || strategy == "colocation" || (strategy == "right_sizing" && w.strategy == "kept"))
        w.strategy = strategy;
    }
    for (auto& [key, w] : by_key) {
      w.fitted_peak_mib = fitted.contains(key) ? fitted[key] : 0;
      w.verdict = w.strategy == "kept" ? "not tested" : VerdictOf(doc, w.strategy);
      facts.workloads.push_back(std::move(w));
    }
  } catch (const json::exception& e) {
    return InvalidArgument("{}: not a plan.json of schema_version 1: {}", what, e.what());
  }
  return facts;
}

}  // namespace gpufit::controller
