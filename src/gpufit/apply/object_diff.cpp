#include "gpufit/apply/object_diff.h"

#include <fmt/format.h>

namespace gpufit::apply {

using Json = nlohmann::json;

namespace {

bool NamedList(const Json& j) {
  if (!j.is_array() || j.empty()) return false;
  for (const Json& e : j)
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string()) return false;
  return true;
}

const Json kEmptyObject = Json::object();
const Json kEmptyArray = Json::array();

void DiffAt(const std::string& path, const Json* a, const Json* b, std::vector<std::string>& out) {
  auto join = [&](const std::string& k) { return path.empty() ? k : path + "." + k; };
  if (a != nullptr && b != nullptr && a->is_object() && b->is_object()) {
    for (const auto& [k, v] : a->items()) DiffAt(join(k), &v, b->contains(k) ? &(*b)[k] : nullptr, out);
    for (const auto& [k, v] : b->items())
      if (!a->contains(k)) DiffAt(join(k), nullptr, &v, out);
    return;
  }
  if (a != nullptr && b != nullptr && a->is_array() && b->is_array()) {
    if (NamedList(*a) && NamedList(*b)) {
      auto find = [](const Json& list, const Json& name) -> const Json* {
        for (const Json& e : list)
          if (e["name"] == name) return &e;
        return nullptr;
      };
      for (const Json& e : *a) DiffAt(path + "[" + e["name"].get<std::string>() + "]", &e, find(*b, e["name"]), out);
      for (const Json& e : *b)
        if (find(*a, e["name"]) == nullptr) DiffAt(path + "[" + e["name"].get<std::string>() + "]", nullptr, &e, out);
      return;
    }
    for (std::size_t i = 0; i < std::max(a->size(), b->size()); ++i)
      DiffAt(fmt::format("{}[{}]", path, i), i < a->size() ? &(*a)[i] : nullptr, i < b->size() ? &(*b)[i] : nullptr,
             out);
    return;
  }
  if (a == nullptr && b == nullptr) return;
  if (a == nullptr) {
    if (b->is_object() || b->is_array()) return DiffAt(path, b->is_object() ? &kEmptyObject : &kEmptyArray, b, out);
    out.push_back(fmt::format("+ {}: {}", path, b->dump()));
  } else if (b == nullptr) {
    if (a->is_object() || a->is_array()) return DiffAt(path, a, a->is_object() ? &kEmptyObject : &kEmptyArray, out);
    out.push_back(fmt::format("- {}: {}", path, a->dump()));
  } else if (*a != *b) {
    out.push_back(fmt::format("~ {}: {} -> {}", path, a->dump(), b->dump()));
  }
}

// The patchMergeKey of the lists of a pod template (k8s.io/api/core/v1/types.go), "" for none.
std::string MergeKey(const std::string& field) {
  for (const char* f :
       {"containers", "initContainers", "ephemeralContainers", "volumes", "env", "resourceClaims", "imagePullSecrets"})
    if (field == f) return "name";
  if (field == "volumeMounts") return "mountPath";
  if (field == "ports") return "containerPort";
  return "";
}

Json Inverse(const Json& saved, const Json& patch, bool strategic) {
  Json out = Json::object();
  for (const auto& [k, v] : patch.items()) {
    if (k.starts_with("$")) continue;  // a directive of the patch, not a field
    const bool had = saved.is_object() && saved.contains(k);
    if (!had) {
      if (!v.is_null()) out[k] = nullptr;
      continue;
    }
    const Json& s = saved[k];
    const std::string key = strategic ? MergeKey(k) : "";
    if (v.is_object() && s.is_object()) {
      Json inner = Inverse(s, v, strategic);
      if (!inner.empty()) out[k] = std::move(inner);
    } else if (!key.empty() && v.is_array() && s.is_array()) {
      Json list = Json::array();
      for (const Json& e : v) {
        if (!e.is_object() || !e.contains(key)) continue;
        const Json* before = nullptr;
        for (const Json& se : s)
          if (se.is_object() && se.contains(key) && se[key] == e[key]) before = &se;
        if (before == nullptr) {
          list.push_back({{key, e[key]}, {"$patch", "delete"}});
        } else {
          Json inner = Inverse(*before, e, strategic);
          inner[key] = e[key];
          list.push_back(std::move(inner));
        }
      }
      if (!list.empty()) out[k] = std::move(list);
    } else {
      out[k] = s;
    }
  }
  return out;
}

}  // namespace

Json WithoutServerFields(Json object) {
  if (!object.is_object()) return object;
  object.erase("status");
  if (object.contains("metadata") && object["metadata"].is_object()) {
    Json& meta = object["metadata"];
    for (const char* k : {"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"}) meta.erase(k);
    if (meta.contains("annotations") && meta["annotations"].is_object()) {
      meta["annotations"].erase("deployment.kubernetes.io/revision");
      if (meta["annotations"].empty()) meta.erase("annotations");
    }
  }
  return object;
}

std::vector<std::string> Diff(const Json& before, const Json& after) {
  std::vector<std::string> out;
  const Json a = WithoutServerFields(before), b = WithoutServerFields(after);
  DiffAt("", &a, &b, out);
  return out;
}

Json InversePatch(const Json& saved, const Json& patch, bool strategic) { return Inverse(saved, patch, strategic); }

}  // namespace gpufit::apply
