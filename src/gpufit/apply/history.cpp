#include "gpufit/apply/history.h"

#include "gpufit/apply/allow_list.h"
#include "gpufit/apply/history_seal.h"
#include "gpufit/apply/internal/json_path.h"
#include "gpufit/core/rfc3339.h"

namespace gpufit::apply {

using Json = nlohmann::json;

std::string RunConfigMapName(const std::string& run) { return "gpufit-apply-" + run; }

Json RunConfigMap(const RunRecord& r, const std::string& ns, const std::string& key) {
  Json changes = Json::array();
  for (const AppliedChange& c : r.changes)
    changes.push_back(
        {{"file", c.file},
         {"object",
          {{"apiVersion", c.ref.api_version}, {"kind", c.ref.kind}, {"namespace", c.ref.ns}, {"name", c.ref.name}}},
         {"method", c.method},
         {"patch_type", c.patch_type},
         {"wave", c.wave},
         {"intended_at", c.intended_at_s > 0 ? Json(FormatRfc3339(c.intended_at_s)) : Json(nullptr)},
         {"applied_at", c.applied_at_s > 0 ? Json(FormatRfc3339(c.applied_at_s)) : Json(nullptr)},
         {"reverted_at", c.reverted_at_s > 0 ? Json(FormatRfc3339(c.reverted_at_s)) : Json(nullptr)},
         {"undo_kind", c.undo_kind},
         {"undo", c.undo},
         {"body", c.body},
         {"diff", c.diff}});
  const Json record = {{"run", r.run},         {"started", FormatRfc3339(r.started_s)},
                       {"plan", r.plan},       {"state", r.state},
                       {"verdict", r.verdict}, {"changes", changes},
                       {"skipped", r.skipped}};
  const std::string name = RunConfigMapName(r.run), text = record.dump(1);
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata",
           {{"name", name},
            {"namespace", ns},
            {"labels", {{"app.kubernetes.io/managed-by", "gpufit"}, {"gpufit.io/apply-run", r.run}}},
            {"annotations",
             {{"gpufit.io/started", FormatRfc3339(r.started_s)},
              {"gpufit.io/state", r.state},
              {kSealAnnotation, Seal(key, name, text)}}}}},
          {"data", {{"run.json", text}}}};
}

Result<RunRecord> ReadRunConfigMap(const Json& configmap, const std::string& where, const std::string& key) {
  if (internal::Str(configmap, {"metadata", "labels", "app.kubernetes.io/managed-by"}) != "gpufit")
    return InvalidArgument("{}: not labelled app.kubernetes.io/managed-by=gpufit: not a run of gpufit apply", where);
  if (!configmap.contains("data") || !configmap["data"].is_object() || !configmap["data"].contains("run.json"))
    return InvalidArgument("{}: no data[\"run.json\"]: not a run of gpufit apply", where);
  if (!configmap["data"]["run.json"].is_string())
    return InvalidArgument("{}: data[\"run.json\"] is not text: not a run of gpufit apply", where);
  const std::string name = internal::Str(configmap, {"metadata", "name"});
  const std::string text = configmap["data"]["run.json"].get<std::string>();
  if (!SealMatches(key, name, text, internal::Str(configmap, {"metadata", "annotations", kSealAnnotation})))
    return InvalidArgument(
        "{}: its seal (annotation {}) does not match its record: written or edited by someone other than gpufit "
        "apply; nothing is reverted from it",
        where, kSealAnnotation);
  try {
    const Json j = Json::parse(text);
    RunRecord r;
    r.run = j.at("run").get<std::string>();
    if (RunConfigMapName(r.run) != name)
      return InvalidArgument("{}: holds the record of run {}, not its own", where, r.run);
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
      if (c.contains("intended_at") && c["intended_at"].is_string()) {
        Result<double> at = ParseRfc3339(c["intended_at"].get<std::string>());
        if (!at) return InvalidArgument("{}: {}: intended_at: {}", where, a.file, at.error().message);
        a.intended_at_s = *at;
      }
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
      a.undo = c.at("undo");
      a.body = c.contains("body") ? c["body"] : Json();
      a.diff = c.at("diff").get<std::vector<std::string>>();
      // Only what a run of gpufit apply can have changed, undone the way it undoes it: even a
      // sealed record must not make --revert touch anything else.
      if (Result<void> ok = CheckUndo(a, fmt::format("{}: change {}", where, a.file)); !ok) return ok.error();
      r.changes.push_back(std::move(a));
    }
    r.skipped = j.at("skipped").get<std::vector<std::string>>();
    return r;
  } catch (const Json::exception& e) {
    return InvalidArgument("{}: data[\"run.json\"] is not a run record of gpufit apply: {}", where, e.what());
  }
}

}  // namespace gpufit::apply
