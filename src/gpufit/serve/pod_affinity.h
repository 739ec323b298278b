// The bind verb's check of the pod's own required inter-pod affinity and anti-affinity
// (issue 51: an authenticated caller could bind a pod next to the very pods its required
// anti-affinity keeps it from), decided as kube-scheduler's InterPodAffinity filter decides the
// incoming pod's terms (k8s.io/api/core/v1 types.go: PodAffinityTerm; kubernetes
// pkg/scheduler/framework/plugins/interpodaffinity/filtering.go):
//  * a term's pods: those of its `namespaces` and of the namespaces its `namespaceSelector`
//    selects; with neither, the pod's own namespace; an empty namespaceSelector ({}) selects
//    every namespace. Among them, those whose labels its `labelSelector` selects (matchLabels
//    and matchExpressions In, NotIn, Exists, DoesNotExist; a null selector selects none, an
//    empty one all), other than the pod itself.
//  * the topology: the target node's label `topologyKey`; a pod is "in it" when its node
//    (spec.nodeName) has that label with the same value.
//  * requiredDuringSchedulingIgnoredDuringExecution podAntiAffinity: no term's pod is in the
//    topology (a node without the label satisfies the term).
//  * requiredDuringSchedulingIgnoredDuringExecution podAffinity: every term has a pod in the
//    topology (a node without the label fails it), except that a term no pod anywhere matches
//    is satisfied when the pod matches it itself (the first pod of a group).
// Not checked here: other pods' required anti-affinity against this pod (the symmetric half,
// which would need every pod of the cluster at each bind; kube-scheduler's filter, which runs
// before the bind, checks it from its cache).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/serve/extender_wire.h"

namespace gpufit::serve {

// What the check must read from the API server for `pod`.
struct AffinityReads {
  bool any = false;                  // the pod has a required (anti-)affinity term
  bool every_namespace = false;      // a namespaceSelector: pods of every namespace, and the namespaces' labels
  std::set<std::string> namespaces;  // else: the pods of these
};
AffinityReads AffinityReadsOf(const nlohmann::json& pod);

struct AffinityView {
  std::vector<nlohmann::json> pods;                    // v1 Pods bound to a node (spec.nodeName set)
  std::map<std::string, nlohmann::json> node_labels;  // node name -> metadata.labels (the target's too)
  std::map<std::string, nlohmann::json> namespace_labels;  // namespace -> metadata.labels (namespaceSelector)
};

// kFailedPrecondition naming the pod, the node and the first term not satisfied, e.g.
//   bind ml/web-1 to gpu-3: its required pod anti-affinity (topologyKey kubernetes.io/hostname)
//   excludes the node: ml/web-0 runs there
Result<void> CheckPodAffinity(const nlohmann::json& pod, const std::string& node, const AffinityView& view,
                              const BindingArgs& args);

}  // namespace gpufit::serve
