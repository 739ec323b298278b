#include "gpufit/apply/run_lock.h"

#include <fmt/format.h>

#include "gpufit/apply/internal/json_path.h"
#include "gpufit/core/rfc3339.h"

namespace gpufit::apply {

using Json = nlohmann::json;
using internal::Str;

RunLock::~RunLock() {
  if (!held_) return;
  Result<Json> r = kube_.Delete(Path());
  if (!r && r.error().code != Code::kNotFound) env_.log("note: the run's lock was not released: " + r.error().message);
}

Result<std::string> RunLock::Acquire(const std::string& run) {
  run_ = run;
  Result<Json> made = kube_.Create(Collection(), Object(""));
  if (made) return Took(*made);
  if (made.error().code != Code::kFailedPrecondition || made.error().message.find(" 409") == std::string::npos)
    return made.error();
  Result<Json> live = kube_.Get(Path());
  if (!live) return live.error();
  const std::string holder = Str(*live, {"data", "run"});
  Result<double> renewed = ParseRfc3339(Str(*live, {"data", "renewed"}));
  const double age = renewed ? env_.now() - *renewed : kStaleS + 1;
  if (age <= kStaleS)
    return fmt::format("another run ({}) is in progress: ConfigMap {}/{} renewed {:.0f} s ago", holder,
                       o_.history_namespace, kName, age);
  env_.log(fmt::format("taking over the lock of run {}, not renewed for {:.0f} s", holder, age));
  Result<Json> taken = kube_.Replace(Path(), Object(Str(*live, {"metadata", "resourceVersion"})));
  if (!taken) return fmt::format("another run took the lock first: {}", taken.error().message);
  return Took(*taken);
}

Result<void> RunLock::Renew() {
  Result<Json> r = kube_.Replace(Path(), Object(version_));
  if (!r)
    return Error{r.error().code, fmt::format("the run's lock {}/{}: {}", o_.history_namespace, kName, r.error().message)};
  version_ = Str(*r, {"metadata", "resourceVersion"});
  return {};
}

std::string RunLock::Collection() const {
  return fmt::format("/api/v1/namespaces/{}/configmaps", o_.history_namespace);
}

std::string RunLock::Path() const { return Collection() + "/" + kName; }

Json RunLock::Object(const std::string& version) const {
  Json o = {{"apiVersion", "v1"},
            {"kind", "ConfigMap"},
            {"metadata",
             {{"name", kName},
              {"namespace", o_.history_namespace},
              {"labels", {{"app.kubernetes.io/managed-by", "gpufit"}}}}},
            {"data", {{"run", run_}, {"renewed", FormatRfc3339(env_.now())}}}};
  if (!version.empty()) o["metadata"]["resourceVersion"] = version;
  return o;
}

std::string RunLock::Took(const Json& object) {
  held_ = true;
  version_ = Str(object, {"metadata", "resourceVersion"});
  return "";
}

}  // namespace gpufit::apply
