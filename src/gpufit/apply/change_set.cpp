#include "gpufit/apply/change_set.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "gpufit/apply/allow_list.h"
#include "gpufit/apply/internal/json_path.h"
#include "gpufit/core/yaml_nesting.h"

namespace gpufit::apply {

namespace fs = std::filesystem;
using Json = nlohmann::json;

namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string Plural(const std::string& kind) {
  const std::string k = Lower(kind);
  if (k.ends_with("s") || k.ends_with("x") || k.ends_with("ch") || k.ends_with("sh")) return k + "es";
  if (k.size() > 1 && k.back() == 'y' && std::string("aeiou").find(k[k.size() - 2]) == std::string::npos)
    return k.substr(0, k.size() - 1) + "ies";
  return k + "s";
}

Json ScalarToJson(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted: a string whatever it reads as
  if (s == "~" || s == "null" || s.empty()) return nullptr;
  if (s == "true") return true;
  if (s == "false") return false;
  static const std::regex integer(R"(-?[0-9]+)");
  static const std::regex number(R"(-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?)");
  if (std::regex_match(s, integer)) return std::stoll(s);
  if (std::regex_match(s, number)) return std::stod(s);
  return s;
}

Json NodeToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      Json out = Json::object();
      for (const auto& kv : n) out[kv.first.as<std::string>()] = NodeToJson(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      Json out = Json::array();
      for (const auto& v : n) out.push_back(NodeToJson(v));
      return out;
    }
    case YAML::NodeType::Scalar:
      return ScalarToJson(n);
    default:
      return nullptr;
  }
}

// The cells of a Markdown table row, `\|` kept inside a cell.
std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cur;
  for (std::size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cur += '|';
      ++i;
    } else if (line[i] == '|') {
      cells.push_back(cur);
      cur.clear();
    } else {
      cur += line[i];
    }
  }
  for (std::string& c : cells) {
    const auto b = c.find_first_not_of(' '), e = c.find_last_not_of(' ');
    c = b == std::string::npos ? "" : c.substr(b, e - b + 1);
    if (c.size() >= 2 && c.front() == '`' && c.back() == '`') c = c.substr(1, c.size() - 2);
  }
  return cells;
}

bool IsWorkloadKind(const std::string& kind) {
  return kind == "Deployment" || kind == "StatefulSet" || kind == "DaemonSet";
}

// The README's order: ConfigMaps, ClusterPolicy, ResourceClaims, node labels, then workloads
// (lending's PriorityClasses and Kueue objects before the workloads that name them).
int Rank(const Change& c) {
  int rank = 0;
  for (const char* prefix : {"configmap-", "clusterpolicy-", "resourceclaim-", "node-", "priorityclass-", "kueue-"}) {
    if (c.file.starts_with(prefix)) return rank;
    ++rank;
  }
  return rank;
}

}  // namespace

std::string ObjectRef::CollectionPath() const {
  const std::string group = api_version.find('/') == std::string::npos ? "/api/" + api_version : "/apis/" + api_version;
  return ns.empty() ? fmt::format("{}/{}", group, Plural(kind))
                    : fmt::format("{}/namespaces/{}/{}", group, ns, Plural(kind));
}

std::string ObjectRef::Path() const { return CollectionPath() + "/" + name; }

std::string ObjectRef::Display() const { return ns.empty() ? kind + " " + name : kind + " " + ns + "/" + name; }

std::string ObjectRef::WorkloadKey() const { return Lower(kind) + "/" + ns + "/" + name; }

Result<Json> YamlToJson(const std::string& text, const std::string& where) {
  if (Result<void> ok = CheckYamlNesting(text, where); !ok) return ok.error();
  try {
    const std::vector<YAML::Node> docs = YAML::LoadAll(text);
    std::vector<YAML::Node> objects;
    for (const YAML::Node& d : docs)
      if (d.IsDefined() && !d.IsNull()) objects.push_back(d);
    if (objects.size() != 1)
      return InvalidArgument("{}: {} YAML documents; an emitted file holds one object", where, objects.size());
    Json j = NodeToJson(objects[0]);
    if (!j.is_object()) return InvalidArgument("{}: not a YAML mapping", where);
    return j;
  } catch (const YAML::Exception& e) {
    return InvalidArgument("{}: line {}: {}", where, e.mark.line + 1, e.msg);
  }
}

std::vector<std::string> PlannedWorkloads(const Json& plan) {
  std::vector<std::string> keys;
  std::set<std::string> seen;
  if (plan.contains("pods") && plan["pods"].is_array())
    for (const Json& p : plan["pods"])
      if (const std::string key = internal::Str(p, {"workload"});
          std::count(key.begin(), key.end(), '/') == 2 && seen.insert(key).second)
        keys.push_back(key);
  return keys;
}

Result<void> CheckPlanJson(const Json& plan, const std::string& where) {
  if (!plan.is_object() || !plan.contains("backtest") || !plan["backtest"].is_object() ||
      !plan["backtest"].contains("status") || !plan["backtest"]["status"].is_object())
    return InvalidArgument("{}: no backtest.status: not a plan.json of gpufit plan", where);
  return {};
}

Result<std::vector<Change>> ReadChanges(const fs::path& dir, const Json& plan) {
  const fs::path readme = dir / "README.md";
  std::ifstream in(readme);
  if (!in)
    return NotFound("{}: cannot read it (the folder that gpufit plan --emit-manifests wrote has a README.md)",
                    readme.string());
  const bool mig = internal::Str(plan, {"options", "sharing"}) == "mig";
  std::set<std::string> planned_namespaces;
  for (const std::string& key : PlannedWorkloads(plan))
    planned_namespaces.insert(key.substr(key.find('/') + 1, key.rfind('/') - key.find('/') - 1));
  static const std::regex patch_cmd(
      R"(kubectl patch (\S+) (\S+)(?: -n (\S+))? --type (strategic|merge) --patch-file (\S+))");
  static const std::regex apply_cmd(R"(kubectl apply -f (\S+))");
  std::vector<Change> changes;
  std::string line;
  int number = 0;
  bool in_table = false;
  while (std::getline(in, line)) {
    ++number;
    const std::string where = fmt::format("{}:{}", readme.string(), number);
    if (line.starts_with("| file |")) {
      in_table = true;
      continue;
    }
    if (!in_table || !line.starts_with("| `")) {
      if (in_table && !line.starts_with("|")) in_table = false;
      continue;
    }
    const std::vector<std::string> cells = Cells(line);
    if (cells.size() != 4) return InvalidArgument("{}: a row of {} cells; the table has 4", where, cells.size());
    Change c;
    c.file = cells[0];
    c.what = cells[1];
    if (c.file.find('/') != std::string::npos || c.file.starts_with("."))
      return InvalidArgument("{}: file '{}' is not a name in the folder", where, c.file);
    std::smatch m;
    if (std::regex_match(cells[3], m, patch_cmd)) {
      c.method = Change::Method::kPatch;
      c.patch_type = m[4];
      if (m[5] != c.file) return InvalidArgument("{}: the command patches with {}, not {}", where, m[5].str(), c.file);
    } else if (std::regex_match(cells[3], m, apply_cmd)) {
      c.method = Change::Method::kApply;
      if (m[1] != c.file) return InvalidArgument("{}: the command applies {}, not {}", where, m[1].str(), c.file);
    } else if (cells[3].starts_with("kustomize:")) {
      c.method = Change::Method::kManual;
    } else {
      return InvalidArgument("{}: apply command '{}' is not `kubectl apply -f`, `kubectl patch` nor kustomize", where,
                             cells[3]);
    }
    const fs::path file = dir / c.file;
    std::ifstream f(file);
    if (!f) return NotFound("{}: names {}, which cannot be read", where, file.string());
    std::stringstream text;
    text << f.rdbuf();
    Result<Json> body = YamlToJson(text.str(), file.string());
    if (!body) return body.error();
    c.body = std::move(*body);
    c.ref = {.api_version = internal::Str(c.body, {"apiVersion"}),
             .kind = internal::Str(c.body, {"kind"}),
             .ns = internal::Str(c.body, {"metadata", "namespace"}),
             .name = internal::Str(c.body, {"metadata", "name"})};
    if (c.ref.api_version.empty() || c.ref.kind.empty() || c.ref.name.empty())
      return InvalidArgument("{}: no apiVersion, kind or metadata.name", file.string());
    if (Result<void> ok = CheckAllowed(c, planned_namespaces, file.string()); !ok) return ok.error();
    c.workload = c.method == Change::Method::kPatch && IsWorkloadKind(c.ref.kind);
    c.strategy = c.file.starts_with("kueue-") || c.file.starts_with("priorityclass-") ? "lending"
                 : mig                                                                ? "mig"
                                                                                      : "colocation";
    changes.push_back(std::move(c));
  }
  std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
    return std::make_pair(Rank(a), a.file) < std::make_pair(Rank(b), b.file);
  });
  return changes;
}

}  // namespace gpufit::apply
