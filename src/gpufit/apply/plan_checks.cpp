#include "gpufit/apply/plan_checks.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "gpufit/apply/internal/json_path.h"

namespace gpufit::apply {

using Json = nlohmann::json;
using internal::Str;
using kube_api::KubeClient;

namespace {

std::string ApiVersionOfWorkload(const std::string& kind) { return kind == "job" ? "batch/v1" : "apps/v1"; }

// "deployment/ns/name" -> its ObjectRef.
ObjectRef WorkloadRef(const std::string& key) {
  const auto a = key.find('/'), b = key.find('/', a + 1);
  const std::string kind = key.substr(0, a);
  static const std::map<std::string, std::string> kKinds = {
      {"deployment", "Deployment"}, {"statefulset", "StatefulSet"}, {"daemonset", "DaemonSet"}};
  return {.api_version = ApiVersionOfWorkload(kind),
          .kind = kKinds.count(kind) != 0 ? kKinds.at(kind) : kind,
          .ns = key.substr(a + 1, b - a - 1),
          .name = key.substr(b + 1)};
}

}  // namespace

Result<void> CheckHeld(const Json& plan, const std::vector<Change>& changes, const std::string& plan_path) {
  std::map<std::string, std::vector<std::string>> files;
  for (const Change& c : changes)
    if (c.method != Change::Method::kManual) files[c.strategy].push_back(c.file);
  for (const auto& [strategy, list] : files) {
    const Json& status = plan["backtest"]["status"];
    const std::string verdict = Str(status, {strategy.c_str(), "status"});
    if (verdict == "held") continue;
    std::string names;
    for (std::size_t i = 0; i < list.size() && i < 3; ++i) names += (i == 0 ? "" : ", ") + list[i];
    if (list.size() > 3) names += fmt::format(" and {} more", list.size() - 3);
    return FailedPrecondition(
        "{}: the {} strategy {} its backtest ({}); gpufit apply applies only strategies that held. Its files: {}. "
        "Plan again on more telemetry, or remove those files from the folder",
        plan_path, strategy, verdict.empty() ? std::string("has no verdict in") : verdict,
        Str(status, {strategy.c_str(), "why"}).empty() ? std::string("no reason given")
                                                       : Str(status, {strategy.c_str(), "why"}),
        names);
  }
  return {};
}

Result<void> CheckFolderOfPlan(const Json& plan, const std::vector<Change>& changes, const std::string& plan_path) {
  const std::vector<std::string> keys = PlannedWorkloads(plan);
  const std::set<std::string> planned(keys.begin(), keys.end());
  for (const Change& c : changes) {
    if (!c.file.starts_with("workload-") || planned.contains(c.ref.WorkloadKey())) continue;
    if (planned.empty())
      return InvalidArgument(
          "{} patches {}, but {} names no workload (pods[].workload): a plan made without the cluster's pods "
          "(--pods or --kubeconfig) cannot show it is of this cluster; plan again with them",
          c.file, c.ref.WorkloadKey(), plan_path);
    return InvalidArgument("{} patches {}, which {} does not plan: the folder is of another plan", c.file,
                           c.ref.WorkloadKey(), plan_path);
  }
  return {};
}

Result<void> CheckWorkloads(const KubeClient& kube, const Json& plan, const std::string& plan_path) {
  for (const std::string& key : PlannedWorkloads(plan)) {
    const std::string kind = key.substr(0, key.find('/'));
    if (kind != "deployment" && kind != "statefulset" && kind != "daemonset") continue;
    const ObjectRef ref = WorkloadRef(key);
    Result<Json> live = kube.Get(ref.Path());
    if (!live && live.error().code == Code::kNotFound)
      return NotFound(
          "{}: its workload {} is not in the cluster at {}: the plan is of another cluster, or the "
          "workload is gone; plan again on this cluster",
          plan_path, key, kube.connection().server);
    if (!live) return live.error();
  }
  return {};
}

// Whether a PodDisruptionBudget of the workload's namespace selecting its pods allows no
// disruption now: its name and why, else "".
Result<std::string> BlockingPdb(const KubeClient& kube, const ObjectRef& ref, const Json& live) {
  Result<Json> pdbs = kube.Get(fmt::format("/apis/policy/v1/namespaces/{}/poddisruptionbudgets", ref.ns));
  if (!pdbs) return pdbs.error();
  const Json labels = live.contains("spec") && live["spec"].contains("template") &&
                              live["spec"]["template"].contains("metadata") &&
                              live["spec"]["template"]["metadata"].contains("labels")
                          ? live["spec"]["template"]["metadata"]["labels"]
                          : Json::object();
  for (const Json& pdb : (*pdbs)["items"]) {
    const Json sel = pdb.contains("spec") && pdb["spec"].contains("selector") ? pdb["spec"]["selector"] : Json();
    if (!sel.is_object() || !sel.contains("matchLabels") || !sel["matchLabels"].is_object()) continue;
    bool selects = !sel["matchLabels"].empty();
    for (const auto& [k, v] : sel["matchLabels"].items()) selects &= labels.contains(k) && labels[k] == v;
    if (!selects) continue;
    const Json status = pdb.contains("status") ? pdb["status"] : Json::object();
    if (!status.contains("disruptionsAllowed"))
      return fmt::format("PodDisruptionBudget {} has no status yet", Str(pdb, {"metadata", "name"}));
    if (status["disruptionsAllowed"].is_number_integer() && status["disruptionsAllowed"].get<long>() <= 0)
      return fmt::format("PodDisruptionBudget {} allows no disruption now ({} healthy, {} desired)",
                         Str(pdb, {"metadata", "name"}), status.value("currentHealthy", 0),
                         status.value("desiredHealthy", 0));
  }
  return std::string();
}

}  // namespace gpufit::apply
