// Readers of `kubectl get nodes -o json` and `kubectl get pods -A -o json`.
//
// A file holds a list (`kind` List, NodeList or PodList, with `items`) or one object
// (`kind` Node or Pod). An item without `kind` is accepted (the API server's own lists
// omit it); an item of the wrong kind is an error. Quantities go through k8s_quantity.h;
// see model/kube_cluster.h for the fields kept, their units and the rules applied
// (requests default to limits, extended resources take limits, the workload owner).
//
// Errors name the file, the item and the JSON path of the field:
//   pods.json: items[3] (ml/llm-ft-0): .spec.containers[1].resources.requests.cpu: quantity 'abc': ...
// kNotFound for a missing file (or a directory), kInvalidArgument otherwise: malformed JSON
// (with the byte offset), JSON past core/json_input.h's bounds (256 MiB, 100 levels deep, a
// number beyond a double), wrong kind, a missing `.metadata.name` or `.spec.containers`, a field of
// the wrong JSON type, a bad or negative quantity, a request above its limit, extended
// resource requests != limits, a bad timestamp or a duplicate name. Missing optional
// fields are fine.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/kube_cluster.h"

namespace gpufit {

// The nodes of the file, sorted by name (names are unique). A List may also hold
// ResourceSlices (`kubectl get nodes,resourceslices -o json`): those of the NVIDIA DRA driver
// (gpu.nvidia.com) are counted onto their node (KubeNode::dra_gpus); others are ignored.
Result<std::vector<KubeNode>> ReadKubeNodes(const std::string& path);

// The pods of the file, sorted by Key() (namespace/name, unique).
Result<std::vector<KubePod>> ReadKubePods(const std::string& path);

// ReadKubeNodes and ReadKubePods on a document already in memory (the live cluster of
// ingest/kube_api/live_cluster.h); `where` starts every error message in place of the file.
Result<std::vector<KubeNode>> ParseKubeNodeList(nlohmann::json doc, const std::string& where);
Result<std::vector<KubePod>> ParseKubePodList(const nlohmann::json& doc, const std::string& where);

// The same rules on JSON already in memory (a scheduler extender's request, kube-scheduler's
// ExtenderArgs): one Pod object (with `kind` Pod, or none, as Go clients encode it), or a
// NodeList / List / single Node (in the document's order). `where` starts every error message, e.g. "filter request:
// .Pod".
Result<KubePod> ParseKubePod(const nlohmann::json& pod, const std::string& where);
Result<std::vector<KubeNode>> ParseKubeNodes(const nlohmann::json& nodes, const std::string& where);

// "spot", "on-demand", "reserved" or "" from a node's provisioner labels, the first present
// of (formats.md (g)): karpenter.sh/capacity-type (spot, on-demand, reserved),
// eks.amazonaws.com/capacityType (SPOT, ON_DEMAND, CAPACITY_BLOCK -> reserved),
// cloud.google.com/gke-spot or gke-preemptible ("true" -> spot),
// kubernetes.azure.com/scalesetpriority (spot; regular -> on-demand). KubeNode::capacity_type.
std::string CapacityTypeOfLabels(const std::map<std::string, std::string>& labels);

}  // namespace gpufit
