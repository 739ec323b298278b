#include "gpufit/serve/extender_wire.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "gpufit/core/json_input.h"
#include "gpufit/ingest/kube_reader.h"

namespace gpufit::serve {
namespace {

using Json = nlohmann::json;

bool SameKey(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// The member `key` of `object`, matched as Go's encoding/json does (exact first, then
// case-insensitively); nullptr when absent or null.
const Json* Member(const Json& object, std::string_view key) {
  if (const auto it = object.find(key); it != object.end()) return it->is_null() ? nullptr : &*it;
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (SameKey(it.key(), key)) return it->is_null() ? nullptr : &*it;
  }
  return nullptr;
}

}  // namespace

Result<ExtenderArgs> ParseExtenderArgs(std::string_view body, std::string_view source) {
  Result<Json> doc = ParseJson(body, source, /*any_thread=*/true);  // many requests parse at once
  if (!doc) return doc.error();
  if (!doc->is_object()) return InvalidArgument("{}: expected a JSON object (ExtenderArgs), got {}", source, doc->type_name());
  ExtenderArgs args;
  const Json* pod = Member(*doc, "Pod");
  if (pod == nullptr) return InvalidArgument("{}: .Pod: missing", source);
  Result<KubePod> parsed = ParseKubePod(*pod, fmt::format("{}: .Pod", source));
  if (!parsed) return parsed.error();
  args.pod = std::move(*parsed);

  if (const Json* names = Member(*doc, "NodeNames"); names != nullptr) {
    if (!names->is_array()) return InvalidArgument("{}: .NodeNames: expected an array, got {}", source, names->type_name());
    for (std::size_t i = 0; i < names->size(); ++i) {
      const Json& n = (*names)[i];
      if (!n.is_string()) return InvalidArgument("{}: .NodeNames[{}]: expected a string, got {}", source, i, n.type_name());
      args.node_names.push_back(n.get<std::string>());
    }
    return args;
  }
  const Json* nodes = Member(*doc, "Nodes");
  if (nodes == nullptr) return InvalidArgument("{}: neither .NodeNames nor .Nodes is set", source);
  Result<std::vector<KubeNode>> list = ParseKubeNodes(*nodes, fmt::format("{}: .Nodes", source));
  if (!list) return list.error();
  args.full_nodes = true;
  for (const KubeNode& n : *list) args.node_names.push_back(n.name);
  const Json* items = Member(*nodes, "items");
  args.node_items = items != nullptr ? *items : Json::array({*nodes});  // a list, or one Node
  if (args.node_items.size() != args.node_names.size()) {
    return InvalidArgument("{}: .Nodes: {} items, {} of them Nodes", source, args.node_items.size(),
                           args.node_names.size());
  }
  return args;
}

std::string WriteFilterResult(const ExtenderArgs& args, const FilterResult& result) {
  Json out;
  if (args.full_nodes) {
    Json items = Json::array();
    for (const std::size_t i : result.kept) items.push_back(args.node_items[i]);
    out["Nodes"] = Json{{"apiVersion", "v1"}, {"kind", "NodeList"}, {"metadata", Json::object()}, {"items", std::move(items)}};
    out["NodeNames"] = nullptr;
  } else {
    Json names = Json::array();
    for (const std::size_t i : result.kept) names.push_back(args.node_names[i]);
    out["Nodes"] = nullptr;
    out["NodeNames"] = std::move(names);
  }
  out["FailedNodes"] = result.failed;
  out["FailedAndUnresolvableNodes"] = result.failed_and_unresolvable;
  out["Error"] = "";
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string WriteFilterError(std::string_view error) {
  const Json out{{"Nodes", nullptr},
                 {"NodeNames", nullptr},
                 {"FailedNodes", Json::object()},
                 {"FailedAndUnresolvableNodes", Json::object()},
                 {"Error", error}};
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string WriteHostPriorityList(const std::vector<HostPriority>& priorities) {
  Json out = Json::array();
  for (const HostPriority& p : priorities) out.push_back(Json{{"Host", p.host}, {"Score", p.score}});
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace gpufit::serve
