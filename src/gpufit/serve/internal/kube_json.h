// Reading the API server's objects in the bind verb's checks (bind_check.cpp, pod_affinity.cpp):
// a field by JSON pointer that may be absent or of another type, a label, and one requirement
// of a selector (NodeSelectorRequirement, and LabelSelectorRequirement, whose operators In,
// NotIn, Exists and DoesNotExist mean the same: k8s.io/api/core/v1 types.go and
// k8s.io/apimachinery/pkg/apis/meta/v1 types.go).
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gpufit::serve::internal {

// `doc` at `pointer` ("/spec/nodeName"), or null when it is not there.
inline const nlohmann::json& ValueAt(const nlohmann::json& doc, const char* pointer) {
  static const nlohmann::json null;
  const nlohmann::json::json_pointer p(pointer);
  return doc.is_object() && doc.contains(p) ? doc.at(p) : null;
}

// `doc` at `pointer` when it is a string, else "".
inline std::string StringAt(const nlohmann::json& doc, const char* pointer) {
  const nlohmann::json& v = ValueAt(doc, pointer);
  return v.is_string() ? v.get<std::string>() : "";
}

// `doc` at `pointer` when it is of `type`, else an empty value of that type.
inline const nlohmann::json& At(const nlohmann::json& doc, const char* pointer, nlohmann::json::value_t type) {
  static const nlohmann::json empty_object = nlohmann::json::object(), empty_array = nlohmann::json::array();
  const nlohmann::json& v = ValueAt(doc, pointer);
  if (v.type() == type) return v;
  return type == nlohmann::json::value_t::array ? empty_array : empty_object;
}

// The label `key` of a labels map, nullopt when absent.
inline std::optional<std::string> LabelOf(const nlohmann::json& labels, const std::string& key) {
  if (!labels.is_object() || !labels.contains(key) || !labels[key].is_string()) return std::nullopt;
  return labels[key].get<std::string>();
}

inline std::optional<std::int64_t> Integer(const std::string& text) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

// One requirement ({"key", "operator", "values"}) against `value` (nullopt: the label or field is
// absent): In, NotIn (true when absent), Exists, DoesNotExist, and for nodes Gt and Lt (one
// value; label and value both integers, else false).
inline bool RequirementHolds(const nlohmann::json& requirement, const std::optional<std::string>& value) {
  const std::string op = requirement.value("operator", "");
  std::vector<std::string> values;
  for (const nlohmann::json& v : At(requirement, "/values", nlohmann::json::value_t::array))
    if (v.is_string()) values.push_back(v.get<std::string>());
  const auto in = [&] { return value && std::find(values.begin(), values.end(), *value) != values.end(); };
  if (op == "In") return in();
  if (op == "NotIn") return !in();
  if (op == "Exists") return value.has_value();
  if (op == "DoesNotExist") return !value.has_value();
  if (op == "Gt" || op == "Lt") {
    if (!value || values.size() != 1) return false;
    const std::optional<std::int64_t> have = Integer(*value), bound = Integer(values[0]);
    if (!have || !bound) return false;
    return op == "Gt" ? *have > *bound : *have < *bound;
  }
  return false;  // an operator the API server would have refused
}

}  // namespace gpufit::serve::internal
