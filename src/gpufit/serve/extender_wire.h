// The wire format of a Kubernetes scheduler extender: what kube-scheduler POSTs to
// `<urlPrefix>/<filterVerb>` and `<urlPrefix>/<prioritizeVerb>`, and what it decodes back.
//
// Source: k8s.io/kube-scheduler/extender/v1/types.go (ExtenderArgs, ExtenderFilterResult,
// FailedNodesMap, HostPriority, HostPriorityList, MinExtenderPriority = 0,
// MaxExtenderPriority = 10), summarised in ../shared/reference/formats.md (d). The Go structs
// have no json tags, so the keys are the Go field names as spelled there ("Pod", "Nodes",
// "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error", "Host", "Score"). Go's
// decoder matches keys case-insensitively; gpufit reads them the same way and writes Go's
// spelling.
//
// ExtenderBindingArgs and ExtenderBindingResult are the bind verb's request and answer.
//
//  * nodeCacheCapable: true  -> the request has NodeNames (Nodes null) and the filter answer
//    gives NodeNames back;
//  * nodeCacheCapable: false -> the request has Nodes (a v1 NodeList) and the answer gives
//    the kept Node objects back, unchanged and in the request's order.
//
// Errors (kInvalidArgument) name the request and the JSON path: malformed JSON (with the
// byte offset), a document past core/json_input.h's bounds, no Pod, neither Nodes nor
// NodeNames, a node name that is not a string, a Pod that kube_reader.h refuses, a Pod whose
// namespace or name is not a DNS-1123 subdomain or whose UID is above 128 bytes.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/kube_cluster.h"

namespace gpufit::serve {

inline constexpr std::int64_t kMinExtenderPriority = 0;
inline constexpr std::int64_t kMaxExtenderPriority = 10;

// ExtenderArgs.
struct ExtenderArgs {
  KubePod pod{};
  std::vector<std::string> node_names{};  // the candidates, in the request's order
  bool full_nodes = false;              // the request carried Nodes (not NodeNames)
  nlohmann::json node_items{};           // when full_nodes: the NodeList's items, as sent
};

// A node the filter refused, and why: FailedNodesMap's key and value.
struct FailedNode {
  std::size_t node = 0;       // index into ExtenderArgs::node_names
  std::string_view reason{};  // a placement filter's reason (plugin.h: text with static storage)
};

// ExtenderFilterResult, less the node lists (written from ExtenderArgs and these indices).
struct FilterResult {
  std::vector<std::size_t> kept{};                 // indices into ExtenderArgs::node_names
  std::vector<FailedNode> failed{};                  // FailedNodes: may fit once pods leave
  std::vector<FailedNode> failed_and_unresolvable{};  // preemption cannot help
  std::string request_from{};  // not on the wire: how the pod's request was taken (PodRequest::from), for the log
};

struct HostPriority {
  std::string host{};
  std::int64_t score = 0;  // kMinExtenderPriority..kMaxExtenderPriority
};

// ExtenderBindingArgs: kube-scheduler asks the extender to bind the pod (only when the
// extender's bindVerb is set; the extender then creates the v1 Binding itself).
struct BindingArgs {
  std::string pod_name{};
  std::string pod_namespace{};
  std::string pod_uid{};
  std::string node{};
};

// `source` starts every error message, e.g. "filter request". Thread-safe (the body is bounded
// by the server: it parses without core/json_input.h's process-wide out-of-memory reserve).
// A nodeCacheCapable request is read with simdjson (its DOM validates the whole body), the
// Pod alone with nlohmann; a request with Nodes, or one either reader refuses, with nlohmann,
// whose errors carry the byte offset. Keys match as Member does in both.
Result<ExtenderArgs> ParseExtenderArgs(std::string_view body, std::string_view source);

// The filter answer: the kept nodes in the form they came in (NodeNames or Nodes).
std::string WriteFilterResult(const ExtenderArgs& args, const FilterResult& result);
// An ExtenderFilterResult carrying only Error (kube-scheduler fails the pod's attempt).
std::string WriteFilterError(std::string_view error);
// HostPriorityList.
std::string WriteHostPriorityList(const std::vector<HostPriority>& priorities);

// ExtenderBindingArgs ("PodName", "PodNamespace", "PodUID", "Node"; keys as Member matches
// them). Errors (kInvalidArgument, naming the request and the key): malformed JSON, not an
// object, PodName or Node missing or empty, a value that is not a string. PodNamespace and
// PodUID may be absent (Go's zero value, "").
Result<BindingArgs> ParseBindingArgs(std::string_view body, std::string_view source);
// ExtenderBindingResult: {"Error": ""} when bound, else why not (kube-scheduler then
// forgets the pod's assumed placement and schedules it again).
std::string WriteBindingResult(std::string_view error);

}  // namespace gpufit::serve
