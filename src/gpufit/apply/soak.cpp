#include "gpufit/apply/soak.h"

#include <fmt/format.h>

#include <cmath>

#include "gpufit/apply/internal/json_path.h"
#include "gpufit/core/rfc3339.h"
#include "gpufit/ingest/kube/k8s_quantity.h"

namespace gpufit::apply {

using Json = nlohmann::json;

namespace {

using internal::Str;

const Json& Items(const Json& pods) {
  static const Json kNone = Json::array();
  return pods.is_object() && pods.contains("items") && pods["items"].is_array() ? pods["items"] : kNone;
}

std::string PodName(const Json& pod) {
  return Str(pod, {"metadata", "namespace"}) + "/" + Str(pod, {"metadata", "name"});
}

std::string Key(const Json& pod, const std::string& container) {
  const std::string uid = Str(pod, {"metadata", "uid"});
  return (uid.empty() ? PodName(pod) : uid) + "/" + container;
}

template <class F>
void EachContainer(const Json& pod, F f) {
  if (!pod.contains("status") || !pod["status"].is_object()) return;
  for (const char* list : {"initContainerStatuses", "containerStatuses"})
    if (pod["status"].contains(list) && pod["status"][list].is_array())
      for (const Json& c : pod["status"][list])
        if (c.is_object()) f(c);
}

double Stamp(const std::string& text) {
  Result<double> t = ParseRfc3339(text);
  return t ? *t : 0;
}

// ": <the PodScheduled condition's message>" when the pod has one.
std::string Condition(const Json& pod) {
  if (!pod.contains("status") || !pod["status"].contains("conditions") || !pod["status"]["conditions"].is_array())
    return "";
  for (const Json& c : pod["status"]["conditions"])
    if (Str(c, {"type"}) == "PodScheduled" && !Str(c, {"message"}).empty()) return ": " + Str(c, {"message"});
  return "";
}

}  // namespace

RestartBaseline Baseline(const Json& pods) {
  RestartBaseline b;
  for (const Json& pod : Items(pods))
    EachContainer(pod, [&](const Json& c) {
      b[Key(pod, Str(c, {"name"}))] =
          c.contains("restartCount") && c["restartCount"].is_number_integer() ? c["restartCount"].get<long>() : 0;
    });
  return b;
}

std::vector<Breach> FindBreaches(const Json& pods, const RestartBaseline& baseline, double since_s, double now_s,
                                 double pending_s) {
  std::vector<Breach> out;
  for (const Json& pod : Items(pods)) {
    const std::string name = PodName(pod);
    if (Str(pod, {"status", "phase"}) == "Pending") {
      const double created = Stamp(Str(pod, {"metadata", "creationTimestamp"}));
      const double since = std::max(created, since_s);
      if (created > 0 && now_s - since > pending_s)
        out.push_back({.pod = name,
                       .container = "",
                       .reason = "Pending",
                       .detail = fmt::format("Pending for {:.0f} s (more than {:.0f} s){}", now_s - since, pending_s,
                                             Condition(pod)),
                       .at_s = since + pending_s});
    }
    EachContainer(pod, [&](const Json& c) {
      const std::string container = Str(c, {"name"});
      for (const char* state : {"state", "lastState"}) {
        if (Str(c, {state, "terminated", "reason"}) != "OOMKilled") continue;
        const double finished = Stamp(Str(c, {state, "terminated", "finishedAt"}));
        if (finished < since_s) continue;
        out.push_back({.pod = name,
                       .container = container,
                       .reason = "OOMKilled",
                       .detail = fmt::format("container {} OOMKilled at {} (exit code {})", container,
                                             Str(c, {state, "terminated", "finishedAt"}),
                                             c[state]["terminated"].value("exitCode", 0)),
                       .at_s = finished});
        return;
      }
      const long count =
          c.contains("restartCount") && c["restartCount"].is_number_integer() ? c["restartCount"].get<long>() : 0;
      const auto it = baseline.find(Key(pod, container));
      const long before = it == baseline.end() ? 0 : it->second;
      if (count > before) {
        const std::string why = Str(c, {"lastState", "terminated", "reason"});
        out.push_back({.pod = name,
                       .container = container,
                       .reason = "restarted",
                       .detail = fmt::format("container {} restarted {} time(s) since the wave began{}", container,
                                             count - before, why.empty() ? std::string() : " (last: " + why + ")"),
                       .at_s = std::max(since_s, Stamp(Str(c, {"lastState", "terminated", "finishedAt"})))});
      }
    });
  }
  return out;
}

std::vector<Breach> MemoryAtCap(const Json& pods, const std::map<std::string, double>& used_mib, double now_s) {
  std::vector<Breach> out;
  for (const Json& pod : Items(pods)) {
    const auto used = used_mib.find(PodName(pod));
    if (used == used_mib.end() || !pod.contains("spec") || !pod["spec"].contains("containers")) continue;
    long cap = 0;
    for (const Json& c : pod["spec"]["containers"]) {
      // A count of MiB, in the API server's canonical spelling of a quantity (30000 is "30k").
      const Result<double> limit = ParseQuantity(Str(c, {"resources", "limits", "nvidia.com/gpumem"}));
      if (limit && *limit > 0) cap += std::lround(*limit);
    }
    if (cap <= 0 || used->second < static_cast<double>(cap)) continue;
    out.push_back({.pod = used->first,
                   .container = "",
                   .reason = "at its GPU memory cap",
                   .detail = fmt::format("{:.0f} MiB of GPU memory in use, its nvidia.com/gpumem cap is {} MiB",
                                         used->second, cap),
                   .at_s = now_s});
  }
  return out;
}

}  // namespace gpufit::apply
