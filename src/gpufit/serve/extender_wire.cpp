#include "gpufit/serve/extender_wire.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstring>

#include "gpufit/core/json_input.h"
#include "gpufit/core/text.h"
#include "gpufit/ingest/kube/kube_reader.h"

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

// The reader for every request (and for its errors): nlohmann over the whole body.
Result<ExtenderArgs> ParseWithNlohmann(std::string_view body, std::string_view source) {
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

// The member `key` of `object` by Member's rule; nullptr when absent or null.
const simdjson::dom::element* Member(const simdjson::dom::object& object, std::string_view key,
                                     simdjson::dom::element& slot) {
  bool found = false;
  for (const simdjson::dom::key_value_pair field : object) {
    if (field.key == key) {
      slot = field.value;
      found = true;
      break;
    }
    if (!found && SameKey(field.key, key)) {
      slot = field.value;
      found = true;  // an exact match later in the object still wins
    }
  }
  return found && !slot.is_null() ? &slot : nullptr;
}

// The fast reader (simdjson's DOM validates the whole body, then the Pod alone goes through
// nlohmann for kube_reader): a well-formed nodeCacheCapable request. Anything else, an error
// included, is nullopt, and the nlohmann reader answers (with its byte offset and JSON path).
std::optional<Result<ExtenderArgs>> ParseNodeNamesWithSimdjson(std::string_view body, std::string_view source) {
  thread_local simdjson::dom::parser parser;  // keeps its buffers between requests
  simdjson::dom::element doc;
  if (parser.parse(body.data(), body.size(), /*realloc_if_needed=*/true).get(doc) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  simdjson::dom::object object;
  if (doc.get_object().get(object) != simdjson::SUCCESS) return std::nullopt;
  simdjson::dom::element pod_slot, names_slot;
  const simdjson::dom::element* pod = Member(object, "Pod", pod_slot);
  const simdjson::dom::element* names = Member(object, "NodeNames", names_slot);
  simdjson::dom::array list;
  if (pod == nullptr || names == nullptr || names->get_array().get(list) != simdjson::SUCCESS) return std::nullopt;
  ExtenderArgs args;
  args.node_names.reserve(list.size());
  for (const simdjson::dom::element n : list) {
    std::string_view name;
    if (n.get_string().get(name) != simdjson::SUCCESS) return std::nullopt;
    args.node_names.emplace_back(name);
  }
  Result<Json> pod_json = ParseJson(simdjson::minify(*pod), source, /*any_thread=*/true);
  if (!pod_json) return std::nullopt;
  Result<KubePod> parsed = ParseKubePod(*pod_json, fmt::format("{}: .Pod", source));
  if (!parsed) return parsed.error();
  args.pod = std::move(*parsed);
  return args;
}

// Whether any of the 8 bytes of `x` must be escaped in a JSON string: a control character
// (below 0x20), a quote or a backslash. Each test is the classic "has a byte less than n" /
// "has a zero byte" word trick (Anderson, Bit Twiddling Hacks: "Determine if a word has a
// byte less than n", "... has a zero byte"); it may only err towards true, and
// AppendJsonString then looks byte by byte.
bool MayNeedEscape(std::uint64_t x) {
  constexpr std::uint64_t kOnes = ~std::uint64_t{0} / 255;  // 0x0101...01
  constexpr std::uint64_t kHighs = kOnes * 0x80;
  auto has_zero = [](std::uint64_t v) { return ((v - kOnes) & ~v & kHighs) != 0; };
  const bool below_space = ((x - kOnes * 0x20) & ~x & kHighs) != 0;
  return below_space || has_zero(x ^ (kOnes * '"')) || has_zero(x ^ (kOnes * '\\'));
}

// `s` as a JSON string (RFC 8259 section 7: quote, backslash and control characters escaped).
// `s` is UTF-8 that a JSON reader accepted, or gpufit's own text.
void AppendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  std::size_t i = 0;
  while (i + 8 <= s.size()) {  // runs of 8 plain bytes go at once
    std::uint64_t word = 0;
    std::memcpy(&word, s.data() + i, 8);
    if (MayNeedEscape(word)) break;
    i += 8;
  }
  std::size_t plain = 0;  // start of the run not yet copied
  for (; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.substr(plain, i - plain));
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default: out += fmt::format("\\u{:04x}", c);
    }
    plain = i + 1;
  }
  out.append(s.substr(plain));
  out.push_back('"');
}

void AppendFailedNodes(std::string& out, const ExtenderArgs& args, const std::vector<FailedNode>& failed) {
  out.push_back('{');
  for (std::size_t k = 0; k < failed.size(); ++k) {
    if (k > 0) out.push_back(',');
    AppendJsonString(out, args.node_names[failed[k].node]);
    out.push_back(':');
    AppendJsonString(out, failed[k].reason);
  }
  out.push_back('}');
}

}  // namespace

namespace {

// The pod is remembered by its UID and name until bind (extender.h, kMaxRemembered entries): a
// name or UID of any length would make that memory unbounded in bytes. The API server's are
// DNS-1123 subdomains (253 bytes at most) and RFC 4122 UUIDs (36 bytes); 128 leaves room.
constexpr std::size_t kMaxUidBytes = 128;

Result<ExtenderArgs> Checked(Result<ExtenderArgs> args, std::string_view source) {
  if (!args) return args;
  const KubePod& pod = args->pod;
  if (!IsDnsSubdomain(pod.namespace_name) || !IsDnsSubdomain(pod.name))
    return InvalidArgument("{}: Pod: namespace {} and name {} must be DNS-1123 subdomains", source,
                           QuoteForMessage(pod.namespace_name), QuoteForMessage(pod.name));
  if (pod.uid.size() > kMaxUidBytes)
    return InvalidArgument("{}: Pod: metadata.uid of {} bytes (at most {})", source, pod.uid.size(), kMaxUidBytes);
  return args;
}

}  // namespace

Result<ExtenderArgs> ParseExtenderArgs(std::string_view body, std::string_view source) {
  if (std::optional<Result<ExtenderArgs>> fast = ParseNodeNamesWithSimdjson(body, source))
    return Checked(std::move(*fast), source);
  return Checked(ParseWithNlohmann(body, source), source);
}

std::string WriteFilterResult(const ExtenderArgs& args, const FilterResult& result) {
  std::string out;
  if (args.full_nodes) {
    Json items = Json::array();
    for (const std::size_t i : result.kept) items.push_back(args.node_items[i]);
    out = R"({"Nodes":)";
    out += Json{{"apiVersion", "v1"}, {"kind", "NodeList"}, {"metadata", Json::object()}, {"items", std::move(items)}}
               .dump(-1, ' ', false, Json::error_handler_t::replace);
    out += R"(,"NodeNames":null)";
  } else {
    out.reserve(64 + 24 * args.node_names.size());
    out = R"({"Nodes":null,"NodeNames":[)";
    for (std::size_t k = 0; k < result.kept.size(); ++k) {
      if (k > 0) out.push_back(',');
      AppendJsonString(out, args.node_names[result.kept[k]]);
    }
    out.push_back(']');
  }
  out += R"(,"FailedNodes":)";
  AppendFailedNodes(out, args, result.failed);
  out += R"(,"FailedAndUnresolvableNodes":)";
  AppendFailedNodes(out, args, result.failed_and_unresolvable);
  out += R"(,"Error":""})";
  return out;
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
  std::string out;
  out.reserve(2 + 40 * priorities.size());
  out.push_back('[');
  for (std::size_t k = 0; k < priorities.size(); ++k) {
    out += k > 0 ? R"(,{"Host":)" : R"({"Host":)";
    AppendJsonString(out, priorities[k].host);
    out += R"(,"Score":)";
    char digits[24];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, priorities[k].score);
    out.append(digits, end);
    out.push_back('}');
  }
  out.push_back(']');
  return out;
}

Result<BindingArgs> ParseBindingArgs(std::string_view body, std::string_view source) {
  Result<Json> doc = ParseJson(body, source, /*any_thread=*/true);
  if (!doc) return doc.error();
  if (!doc->is_object())
    return InvalidArgument("{}: expected a JSON object (ExtenderBindingArgs), got {}", source, doc->type_name());
  BindingArgs args;
  const std::pair<const char*, std::string*> fields[] = {{"PodName", &args.pod_name},
                                                         {"PodNamespace", &args.pod_namespace},
                                                         {"PodUID", &args.pod_uid},
                                                         {"Node", &args.node}};
  for (const auto& [key, value] : fields) {
    const Json* v = Member(*doc, key);
    if (v == nullptr) continue;
    if (!v->is_string()) return InvalidArgument("{}: .{}: expected a string, got {}", source, key, v->type_name());
    *value = v->get<std::string>();
  }
  if (args.pod_name.empty()) return InvalidArgument("{}: .PodName: missing or empty", source);
  if (args.node.empty()) return InvalidArgument("{}: .Node: missing or empty", source);
  return args;
}

std::string WriteBindingResult(std::string_view error) {
  std::string out = R"({"Error":)";
  AppendJsonString(out, error);
  out.push_back('}');
  return out;
}

}  // namespace gpufit::serve
