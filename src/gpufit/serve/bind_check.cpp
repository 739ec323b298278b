#include "gpufit/serve/bind_check.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <string>

#include "gpufit/core/text.h"
#include "gpufit/serve/internal/kube_json.h"

namespace gpufit::serve {
namespace {

using Json = nlohmann::json;
using internal::At;
using internal::StringAt;

bool TermMatches(const Json& term, const Json& labels, const std::string& node_name) {
  const Json& expressions = At(term, "/matchExpressions", Json::value_t::array);
  const Json& fields = At(term, "/matchFields", Json::value_t::array);
  if (expressions.empty() && fields.empty()) return false;  // an empty term matches no objects
  for (const Json& r : expressions) {
    if (!internal::RequirementHolds(r, internal::LabelOf(labels, r.value("key", "")))) return false;
  }
  for (const Json& r : fields) {
    std::optional<std::string> value;
    if (r.value("key", "") == "metadata.name") value = node_name;
    if (!internal::RequirementHolds(r, value)) return false;
  }
  return true;
}

bool Tolerates(const Json& toleration, const std::string& key, const std::string& value, const std::string& effect) {
  const std::string t_effect = toleration.value("effect", "");
  if (!t_effect.empty() && t_effect != effect) return false;
  const std::string t_key = toleration.value("key", "");
  const std::string op = toleration.value("operator", "Equal");
  if (t_key.empty()) return op == "Exists";
  if (t_key != key) return false;
  if (op == "Exists") return true;
  return (op == "Equal" || op.empty()) && toleration.value("value", "") == value;
}

}  // namespace

Result<void> CheckPending(const Json& pod, const BindingArgs& args) {
  const std::string who = fmt::format("bind {}/{}", args.pod_namespace, args.pod_name);
  if (args.pod_uid.empty())
    return FailedPrecondition("{}: the bind request has no PodUID (kube-scheduler always sends one)", who);
  const std::string uid = StringAt(pod, "/metadata/uid");
  if (uid != args.pod_uid)
    return FailedPrecondition("{}: the API server's pod has UID {}, the bind request {} (not the pod scheduled)", who,
                              QuoteForMessage(uid), QuoteForMessage(args.pod_uid));
  if (!StringAt(pod, "/metadata/deletionTimestamp").empty())
    return FailedPrecondition("{}: the pod is being deleted", who);
  if (const Json& gates = At(pod, "/spec/schedulingGates", Json::value_t::array); !gates.empty())
    return FailedPrecondition("{}: the pod has {} scheduling gates (it is not to be scheduled yet)", who, gates.size());
  if (const std::string node = StringAt(pod, "/spec/nodeName"); !node.empty())
    return FailedPrecondition("{}: the pod is already bound to {}", who, QuoteForMessage(node));
  if (const std::string phase = StringAt(pod, "/status/phase"); !phase.empty() && phase != "Pending")
    return FailedPrecondition("{}: the pod is {}, not Pending", who, QuoteForMessage(phase));
  return {};
}

Result<void> CheckSchedulerName(const Json& pod, const std::vector<std::string>& names, const BindingArgs& args) {
  std::string name = StringAt(pod, "/spec/schedulerName");
  if (name.empty()) name = "default-scheduler";
  if (std::find(names.begin(), names.end(), name) != names.end()) return {};
  return FailedPrecondition("bind {}/{}: the pod's schedulerName is {}, not one this extender serves ({}: serve "
                            "--scheduler-name)",
                            args.pod_namespace, args.pod_name, QuoteForMessage(name), fmt::format("{}", fmt::join(names, ", ")));
}

Result<void> CheckNodeAdmits(const Json& pod, const Json& node, const BindingArgs& args) {
  const std::string who = fmt::format("bind {}/{} to {}", args.pod_namespace, args.pod_name, args.node);
  const Json& labels = At(node, "/metadata/labels", Json::value_t::object);
  for (const auto& [key, want] : At(pod, "/spec/nodeSelector", Json::value_t::object).items()) {
    const bool has = labels.contains(key) && labels[key].is_string();
    if (!has || !want.is_string() || labels[key] != want)
      return FailedPrecondition("{}: the pod's nodeSelector {}={} does not match the node ({})", who,
                                QuoteForMessage(key), QuoteForMessage(want.is_string() ? want.get<std::string>() : ""),
                                has ? "label " + QuoteForMessage(labels[key].get<std::string>()) : "no such label");
  }
  const Json::json_pointer required("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution");
  if (pod.contains(required) && pod.at(required).is_object()) {
    const Json& terms = At(pod.at(required), "/nodeSelectorTerms", Json::value_t::array);
    bool any = false;
    for (const Json& term : terms) any = any || (term.is_object() && TermMatches(term, labels, args.node));
    if (!any)
      return FailedPrecondition("{}: no term of the pod's required node affinity matches the node ({} terms)", who,
                                terms.size());
  }
  const Json& tolerations = At(pod, "/spec/tolerations", Json::value_t::array);
  const auto tolerated = [&](const std::string& key, const std::string& value, const std::string& effect) {
    for (const Json& t : tolerations)
      if (t.is_object() && Tolerates(t, key, value, effect)) return true;
    return false;
  };
  if (At(node, "/spec", Json::value_t::object).value("unschedulable", false) &&
      !tolerated("node.kubernetes.io/unschedulable", "", "NoSchedule"))
    return FailedPrecondition("{}: the node is unschedulable (cordoned)", who);
  for (const Json& taint : At(node, "/spec/taints", Json::value_t::array)) {
    if (!taint.is_object()) continue;
    const std::string effect = taint.value("effect", "");
    if (effect != "NoSchedule" && effect != "NoExecute") continue;
    const std::string key = taint.value("key", ""), value = taint.value("value", "");
    if (!tolerated(key, value, effect))
      return FailedPrecondition("{}: the node's taint {}{}:{} is not tolerated", who, QuoteForMessage(key),
                                value.empty() ? "" : "=" + QuoteForMessage(value), effect);
  }
  return {};
}

}  // namespace gpufit::serve
