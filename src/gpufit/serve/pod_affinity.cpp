#include "gpufit/serve/pod_affinity.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "gpufit/serve/internal/kube_json.h"

namespace gpufit::serve {

namespace {

using Json = nlohmann::json;

using internal::LabelOf;
using internal::StringAt;
using internal::ValueAt;

// A metav1.LabelSelector against `labels`: null selects nothing, {} everything.
bool Selects(const Json& selector, const Json& labels) {
  if (!selector.is_object()) return false;
  for (const auto& [k, v] : ValueAt(selector, "/matchLabels").items())
    if (!v.is_string() || LabelOf(labels, k) != v.get<std::string>()) return false;
  for (const Json& e : internal::At(selector, "/matchExpressions", Json::value_t::array))
    if (!internal::RequirementHolds(e, LabelOf(labels, e.value("key", "")))) return false;
  return true;
}

// Whether `term` (a PodAffinityTerm of a pod in namespace `own`) covers namespace `ns`.
bool CoversNamespace(const Json& term, const std::string& own, const std::string& ns, const AffinityView& view) {
  const Json& names = ValueAt(term, "/namespaces");
  const Json& selector = ValueAt(term, "/namespaceSelector");
  if ((!names.is_array() || names.empty()) && selector.is_null()) return ns == own;
  if (names.is_array())
    for (const Json& n : names)
      if (n.is_string() && n.get<std::string>() == ns) return true;
  if (!selector.is_object()) return false;
  const auto it = view.namespace_labels.find(ns);
  return Selects(selector, it != view.namespace_labels.end() ? it->second : Json::object());
}

bool MatchesTerm(const Json& term, const std::string& own, const Json& other, const AffinityView& view) {
  return CoversNamespace(term, own, StringAt(other, "/metadata/namespace"), view) &&
         Selects(ValueAt(term, "/labelSelector"), ValueAt(other, "/metadata/labels"));
}

const Json& Terms(const Json& pod, const std::string& kind) {
  const std::string pointer = "/spec/affinity/" + kind + "/requiredDuringSchedulingIgnoredDuringExecution";
  return internal::At(pod, pointer.c_str(), Json::value_t::array);
}

}  // namespace

AffinityReads AffinityReadsOf(const Json& pod) {
  AffinityReads r;
  const std::string own = StringAt(pod, "/metadata/namespace");
  for (const char* kind : {"podAffinity", "podAntiAffinity"})
    for (const Json& term : Terms(pod, kind)) {
      r.any = true;
      if (ValueAt(term, "/namespaceSelector").is_object()) r.every_namespace = true;
      const Json& names = ValueAt(term, "/namespaces");
      if (names.is_array() && !names.empty()) {
        for (const Json& n : names)
          if (n.is_string()) r.namespaces.insert(n.get<std::string>());
      } else if (!ValueAt(term, "/namespaceSelector").is_object()) {
        r.namespaces.insert(own);
      }
    }
  return r;
}

Result<void> CheckPodAffinity(const Json& pod, const std::string& node, const AffinityView& view,
                              const BindingArgs& args) {
  const std::string who = fmt::format("bind {}/{} to {}", args.pod_namespace, args.pod_name, node);
  const std::string own = StringAt(pod, "/metadata/namespace");
  const std::string uid = StringAt(pod, "/metadata/uid");
  const auto node_labels = [&](const std::string& name) {
    const auto it = view.node_labels.find(name);
    return it != view.node_labels.end() ? it->second : Json::object();
  };
  const Json target = node_labels(node);
  // The pods of `term` in the target's topology (its key's value on the target: `value`).
  const auto in_topology = [&](const Json& term, const std::string& key, const std::string& value) -> const Json* {
    for (const Json& other : view.pods) {
      if (!uid.empty() && StringAt(other, "/metadata/uid") == uid) continue;
      if (!MatchesTerm(term, own, other, view)) continue;
      if (LabelOf(node_labels(StringAt(other, "/spec/nodeName")), key) == value) return &other;
    }
    return nullptr;
  };
  for (const Json& term : Terms(pod, "podAntiAffinity")) {
    const std::string key = StringAt(term, "/topologyKey");
    const std::optional<std::string> value = LabelOf(target, key);
    if (!value) continue;
    if (const Json* there = in_topology(term, key, *value))
      return FailedPrecondition("{}: its required pod anti-affinity (topologyKey {}) excludes the node: {}/{} runs in "
                                "{}={}",
                                who, key, StringAt(*there, "/metadata/namespace"), StringAt(*there, "/metadata/name"),
                                key, *value);
  }
  for (const Json& term : Terms(pod, "podAffinity")) {
    const std::string key = StringAt(term, "/topologyKey");
    const std::optional<std::string> value = LabelOf(target, key);
    if (value && in_topology(term, key, *value) != nullptr) continue;
    // The first pod of a group: no pod anywhere matches, and the pod matches its own term.
    const bool anywhere = std::any_of(view.pods.begin(), view.pods.end(), [&](const Json& other) {
      return (uid.empty() || StringAt(other, "/metadata/uid") != uid) && MatchesTerm(term, own, other, view);
    });
    if (!anywhere && MatchesTerm(term, own, pod, view)) continue;
    return FailedPrecondition("{}: its required pod affinity (topologyKey {}) is not met there: {}", who, key,
                              value ? fmt::format("no pod it asks for runs in {}={}", key, *value)
                                    : fmt::format("the node has no label {}", key));
  }
  return {};
}

}  // namespace gpufit::serve
