#include "gpufit/serve/pod_affinity.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace gpufit::serve {

namespace {

using Json = nlohmann::json;

const Json& Field(const Json& j, std::initializer_list<const char*> path) {
  static const Json null;
  const Json* at = &j;
  for (const char* k : path) {
    if (!at->is_object() || !at->contains(k)) return null;
    at = &(*at)[k];
  }
  return *at;
}

std::string Text(const Json& j, std::initializer_list<const char*> path) {
  const Json& v = Field(j, path);
  return v.is_string() ? v.get<std::string>() : "";
}

std::optional<std::string> Label(const Json& labels, const std::string& key) {
  if (!labels.is_object() || !labels.contains(key) || !labels[key].is_string()) return std::nullopt;
  return labels[key].get<std::string>();
}

// A metav1.LabelSelector against `labels`: null selects nothing, {} everything.
bool Selects(const Json& selector, const Json& labels) {
  if (!selector.is_object()) return false;
  for (const auto& [k, v] : Field(selector, {"matchLabels"}).items())
    if (Label(labels, k) != (v.is_string() ? std::optional<std::string>(v.get<std::string>()) : std::nullopt))
      return false;
  const Json& expressions = Field(selector, {"matchExpressions"});
  if (!expressions.is_array()) return true;
  for (const Json& e : expressions) {
    const std::optional<std::string> have = Label(labels, Text(e, {"key"}));
    const std::string op = Text(e, {"operator"});
    bool in = false;
    for (const Json& v : Field(e, {"values"}))
      if (have && v.is_string() && v.get<std::string>() == *have) in = true;
    const bool ok = op == "In"             ? in
                    : op == "NotIn"        ? !in
                    : op == "Exists"       ? have.has_value()
                    : op == "DoesNotExist" ? !have.has_value()
                                           : false;
    if (!ok) return false;
  }
  return true;
}

// Whether `term` (a PodAffinityTerm of a pod in namespace `own`) covers namespace `ns`.
bool CoversNamespace(const Json& term, const std::string& own, const std::string& ns, const AffinityView& view) {
  const Json& names = Field(term, {"namespaces"});
  const Json& selector = Field(term, {"namespaceSelector"});
  if ((!names.is_array() || names.empty()) && selector.is_null()) return ns == own;
  if (names.is_array())
    for (const Json& n : names)
      if (n.is_string() && n.get<std::string>() == ns) return true;
  if (!selector.is_object()) return false;
  const auto it = view.namespace_labels.find(ns);
  return Selects(selector, it != view.namespace_labels.end() ? it->second : Json::object());
}

bool MatchesTerm(const Json& term, const std::string& own, const Json& other, const AffinityView& view) {
  return CoversNamespace(term, own, Text(other, {"metadata", "namespace"}), view) &&
         Selects(Field(term, {"labelSelector"}), Field(other, {"metadata", "labels"}));
}

const Json& Terms(const Json& pod, const char* kind) {
  return Field(pod, {"spec", "affinity", kind, "requiredDuringSchedulingIgnoredDuringExecution"});
}

}  // namespace

AffinityReads AffinityReadsOf(const Json& pod) {
  AffinityReads r;
  const std::string own = Text(pod, {"metadata", "namespace"});
  for (const char* kind : {"podAffinity", "podAntiAffinity"})
    for (const Json& term : Terms(pod, kind)) {
      r.any = true;
      if (Field(term, {"namespaceSelector"}).is_object()) r.every_namespace = true;
      const Json& names = Field(term, {"namespaces"});
      if (names.is_array() && !names.empty()) {
        for (const Json& n : names)
          if (n.is_string()) r.namespaces.insert(n.get<std::string>());
      } else if (!Field(term, {"namespaceSelector"}).is_object()) {
        r.namespaces.insert(own);
      }
    }
  return r;
}

Result<void> CheckPodAffinity(const Json& pod, const std::string& node, const AffinityView& view,
                              const BindingArgs& args) {
  const std::string who = fmt::format("bind {}/{} to {}", args.pod_namespace, args.pod_name, node);
  const std::string own = Text(pod, {"metadata", "namespace"});
  const std::string uid = Text(pod, {"metadata", "uid"});
  const auto node_labels = [&](const std::string& name) {
    const auto it = view.node_labels.find(name);
    return it != view.node_labels.end() ? it->second : Json::object();
  };
  const Json target = node_labels(node);
  // The pods of `term` in the target's topology (its key's value on the target: `value`).
  const auto in_topology = [&](const Json& term, const std::string& key, const std::string& value) -> const Json* {
    for (const Json& other : view.pods) {
      if (!uid.empty() && Text(other, {"metadata", "uid"}) == uid) continue;
      if (!MatchesTerm(term, own, other, view)) continue;
      if (Label(node_labels(Text(other, {"spec", "nodeName"})), key) == value) return &other;
    }
    return nullptr;
  };
  for (const Json& term : Terms(pod, "podAntiAffinity")) {
    const std::string key = Text(term, {"topologyKey"});
    const std::optional<std::string> value = Label(target, key);
    if (!value) continue;
    if (const Json* there = in_topology(term, key, *value))
      return FailedPrecondition("{}: its required pod anti-affinity (topologyKey {}) excludes the node: {}/{} runs in "
                                "{}={}",
                                who, key, Text(*there, {"metadata", "namespace"}), Text(*there, {"metadata", "name"}),
                                key, *value);
  }
  for (const Json& term : Terms(pod, "podAffinity")) {
    const std::string key = Text(term, {"topologyKey"});
    const std::optional<std::string> value = Label(target, key);
    if (value && in_topology(term, key, *value) != nullptr) continue;
    // The first pod of a group: no pod anywhere matches, and the pod matches its own term.
    const bool anywhere = std::any_of(view.pods.begin(), view.pods.end(), [&](const Json& other) {
      return (uid.empty() || Text(other, {"metadata", "uid"}) != uid) && MatchesTerm(term, own, other, view);
    });
    if (!anywhere && MatchesTerm(term, own, pod, view)) continue;
    return FailedPrecondition("{}: its required pod affinity (topologyKey {}) is not met there: {}", who, key,
                              value ? fmt::format("no pod it asks for runs in {}={}", key, *value)
                                    : fmt::format("the node has no label {}", key));
  }
  return {};
}

}  // namespace gpufit::serve
