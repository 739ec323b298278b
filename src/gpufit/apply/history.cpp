#include "gpufit/apply/history.h"

#include <set>

#include "gpufit/apply/internal/json_path.h"
#include "gpufit/core/rfc3339.h"

namespace gpufit::apply {

using Json = nlohmann::json;

std::string RunConfigMapName(const std::string& run) { return "gpufit-apply-" + run; }

Json RunConfigMap(const RunRecord& r, const std::string& ns) {
  Json changes = Json::array();
  for (const AppliedChange& c : r.changes)
    changes.push_back(
        {{"file", c.file},
         {"object",
          {{"apiVersion", c.ref.api_version}, {"kind", c.ref.kind}, {"namespace", c.ref.ns}, {"name", c.ref.name}}},
         {"method", c.method},
         {"patch_type", c.patch_type},
         {"wave", c.wave},
         {"applied_at", c.applied_at_s > 0 ? Json(FormatRfc3339(c.applied_at_s)) : Json(nullptr)},
         {"reverted_at", c.reverted_at_s > 0 ? Json(FormatRfc3339(c.reverted_at_s)) : Json(nullptr)},
         {"undo_kind", c.undo_kind},
         {"undo", c.undo},
         {"diff", c.diff}});
  const Json record = {{"run", r.run},         {"started", FormatRfc3339(r.started_s)},
                       {"plan", r.plan},       {"state", r.state},
                       {"verdict", r.verdict}, {"changes", changes},
                       {"skipped", r.skipped}};
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", RunConfigMapName(r.run)},
            {"namespace", ns},
            {"labels", {{"app.kubernetes.io/managed-by", "gpufit"}, {"gpufit.io/apply-run", r.run}}},
            {"annotations", {{"gpufit.io/started", FormatRfc3339(r.started_s)}, {"gpufit.io/state", r.state}}}}},
          {"data", {{"run.json", record.dump(1)}}}};
}

Result<RunRecord> ReadRunConfigMap(const Json& configmap, const std::string& where) {
  if (internal::Str(configmap, {"metadata", "labels", "app.kubernetes.io/managed-by"}) != "gpufit")
    return InvalidArgument("{}: not labelled app.kubernetes.io/managed-by=gpufit: not a run of gpufit apply", where);
  if (!configmap.contains("data") || !configmap["data"].is_object() || !configmap["data"].contains("run.json"))
    return InvalidArgument("{}: no data[\"run.json\"]: not a run of gpufit apply", where);
  try {
    const Json j = Json::parse(configmap.at("data").at("run.json").get<std::string>());
    RunRecord r;
    r.run = j.at("run").get<std::string>();
    Result<double> started = ParseRfc3339(j.at("started").get<std::string>());
    if (!started) return InvalidArgument("{}: started: {}", where, started.error().message);
    r.started_s = *started;
    r.plan = j.at("plan").get<std::string>();
    r.state = j.at("state").get<std::string>();
    r.verdict = j.at("verdict").get<std::string>();
    for (const Json& c : j.at("changes")) {
      AppliedChange a;
      a.file = c.at("file").get<std::string>();
      const Json& o = c.at("object");
      a.ref = {.api_version = o.at("apiVersion").get<std::string>(),
               .kind = o.at("kind").get<std::string>(),
               .ns = o.at("namespace").get<std::string>(),
               .name = o.at("name").get<std::string>()};
      a.method = c.at("method").get<std::string>();
      a.patch_type = c.at("patch_type").get<std::string>();
      a.wave = c.at("wave").get<int>();
      if (c.at("applied_at").is_string()) {
        Result<double> at = ParseRfc3339(c["applied_at"].get<std::string>());
        if (!at) return InvalidArgument("{}: {}: applied_at: {}", where, a.file, at.error().message);
        a.applied_at_s = *at;
      }
      if (c.at("reverted_at").is_string()) {
        Result<double> at = ParseRfc3339(c["reverted_at"].get<std::string>());
        if (!at) return InvalidArgument("{}: {}: reverted_at: {}", where, a.file, at.error().message);
        a.reverted_at_s = *at;
      }
      a.undo_kind = c.at("undo_kind").get<std::string>();
      // Only what a run of gpufit apply can have changed, and undone the way it undoes it: a
      // history edited by someone else must not make --revert delete or patch anything else.
      static const std::set<std::string> kPatched = {"Deployment", "StatefulSet", "DaemonSet", "Node", "ClusterPolicy"};
      static const std::set<std::string> kApplied = {"ConfigMap",      "ResourceClaim", "PriorityClass",
                                                     "ResourceFlavor", "ClusterQueue",  "LocalQueue"};
      const bool patched = kPatched.contains(a.ref.kind), applied = kApplied.contains(a.ref.kind);
      if (!(patched && a.undo_kind == "patch") &&
          !(applied && (a.undo_kind == "delete" || a.undo_kind == "replace" || a.undo_kind == "patch")))
        return InvalidArgument("{}: change {} undoes {} by '{}': not a change gpufit apply makes (edited history?)",
                               where, a.file, a.ref.Display(), a.undo_kind);
      a.undo = c.at("undo");
      a.diff = c.at("diff").get<std::vector<std::string>>();
      r.changes.push_back(std::move(a));
    }
    r.skipped = j.at("skipped").get<std::vector<std::string>>();
    return r;
  } catch (const Json::exception& e) {
    return InvalidArgument("{}: data[\"run.json\"] is not a run record of gpufit apply: {}", where, e.what());
  }
}

}  // namespace gpufit::apply
