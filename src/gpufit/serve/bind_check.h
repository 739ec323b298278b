// What the bind verb checks on the API server's own objects before it creates a Binding, so that
// a bind trusts the API server, not the caller: a filter request can be forged, the pod and the
// node read from the API server cannot.
//
// CheckPending: the pod is still to be bound, and is the pod the scheduler decided on:
//  * `.metadata.uid` equals the bind's PodUID (kube-scheduler always sends it; an empty PodUID is
//    refused), so a pod deleted and created again under the same name is not bound in its place;
//  * no `.metadata.deletionTimestamp`, no `.spec.schedulingGates` (the API server refuses a
//    Binding of a gated pod with 409, which would otherwise read as "may be bound"), no
//    `.spec.nodeName`, `.status.phase` Pending (or absent).
//
// CheckSchedulerName: the pod's `.spec.schedulerName` (absent: default-scheduler, the API
// server's default) is one of the profiles that call this extender: an authenticated caller
// must not bind a pod another scheduler (HAMi's, KAI's, Volcano's) owns (issue 51).
//
// CheckNodeAdmits: the node satisfies the pod's constraints as kube-scheduler's filters decide
// them (the parts gpufit's placement does not: GPU, CPU and memory room are the extender's):
//  * `.spec.nodeSelector`: every key is a node label with that value;
//  * `.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`: some
//    nodeSelectorTerm matches; a term matches when all its matchExpressions (on labels) and
//    matchFields (only `metadata.name`) do; a term with neither matches nothing. Operators: In,
//    NotIn (true when the label is absent), Exists, DoesNotExist, Gt and Lt (one value; label and
//    value both integers, else false).
//    Source: k8s.io/api/core/v1 types.go (NodeSelector, NodeSelectorTerm) and
//    k8s.io/component-helpers/scheduling/corev1/nodeaffinity (GetRequiredNodeAffinity: the
//    selector and the terms must both match).
//  * taints: every `.spec.taints` entry of effect NoSchedule or NoExecute is tolerated
//    (PreferNoSchedule is a preference); `.spec.unschedulable` is the taint
//    node.kubernetes.io/unschedulable:NoSchedule. A toleration tolerates a taint when its effect
//    is empty or the taint's, and its key is empty with operator Exists (every taint), or equals
//    the taint's key with operator Exists, or with operator Equal (the default) and an equal value.
//    Source: k8s.io/api/core/v1 toleration.go (ToleratesTaint), kube-scheduler's TaintToleration
//    and NodeUnschedulable filter plugins.
//
// Errors: kFailedPrecondition naming the pod, the node and the first constraint not met, e.g.
//   bind ml/p to gpu-node-3: the node's taint nvidia.com/gpu=reserved:NoSchedule is not tolerated
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/serve/extender_wire.h"

namespace gpufit::serve {

// `pod`: the v1 Pod the API server holds under the bind's namespace and name.
Result<void> CheckPending(const nlohmann::json& pod, const BindingArgs& args);

// `names`: the scheduler names this extender serves (ApiServerOptions::scheduler_names).
Result<void> CheckSchedulerName(const nlohmann::json& pod, const std::vector<std::string>& names,
                                const BindingArgs& args);

// `pod` and `node`: the v1 Pod and v1 Node the API server holds.
Result<void> CheckNodeAdmits(const nlohmann::json& pod, const nlohmann::json& node, const BindingArgs& args);

}  // namespace gpufit::serve
