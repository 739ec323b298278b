// What `gpufit apply` may change (issue 51): every object and field that `gpufit plan
// --emit-manifests` writes, and nothing else. A folder is an input anyone with write access to
// it (a CI artifact, a GitOps repository, a shared volume) can edit, and apply runs with
// rights the editor may lack; so each change is checked against this list, at apply and again
// at --revert, and a change outside it is refused with its file and JSON path: the whole run
// stops before anything is sent.
//
// The list follows the emitters of src/gpufit/plan/manifests (one row per file prefix):
//   workload-*       Deployment, StatefulSet, DaemonSet (strategic patch) or Job (manual), of a
//                    workload plan.json plans; only under spec.template:
//                      metadata.annotations  gpu-memory (KAI), gpufit.io/checkpoint-interval-seconds,
//                                            gpufit.io/switch-to-on-demand-after-seconds (training)
//                      metadata.labels       kai.scheduler/queue
//                      spec.schedulerName    hami-scheduler, kai-scheduler
//                      spec.nodeSelector     nvidia.com/gpu.product, nvidia.com/device-plugin.config,
//                                            the spot labels of Karpenter, EKS, GKE and AKS
//                      spec.tolerations      the GKE and AKS spot taints
//                      spec.affinity         required node affinity on the keys above and
//                                            nvidia.com/gpu.sharing-strategy
//                      spec.resourceClaims   gpufit-gpu -> gpufit-gpu-<n> (DRA MPS)
//                      spec.containers[] / initContainers[] by name:
//                        resources.limits/requests  nvidia.com/ resources only (gpu, gpu.shared,
//                                                   gpumem, gpucores, gpumem-percentage, mig-*)
//                        resources.claims          gpufit-gpu
//                        env                       CUDA_MPS_PINNED_DEVICE_MEM_LIMIT,
//                                                  GPUFIT_CHECKPOINT_INTERVAL_SECONDS
//                        args, command             the live list with --gpu-memory-utilization
//                                                  alone changed (CheckAgainstLive)
//   node-*           Node: metadata.labels nvidia.com/device-plugin.config, nvidia.com/mig.config,
//                    set to gpufit-* values
//   configmap-*      ConfigMap gpu-operator/gpufit-device-plugin-config or gpufit-mig-parted-config:
//                    data only
//   clusterpolicy-*  ClusterPolicy cluster-policy: spec.devicePlugin.config.name,
//                    spec.migManager.config.name/default, spec.mig.strategy
//   resourceclaim-*  ResourceClaim gpufit-gpu-<n> in a namespace plan.json plans: spec.devices
//   priorityclass-*  PriorityClass gpufit-inference or gpufit-night-lending: value at most
//                    100000, globalDefault false, preemptionPolicy, description
//   kueue-*          ResourceFlavor, ClusterQueue gpufit-night; LocalQueue default/gpufit-night
// Everything else (image, volumes, securityContext, serviceAccountName, hostPID, hostNetwork,
// another namespace or name, labels and annotations of the object itself, $patch directives)
// is refused. Values are checked where the emitters write fixed ones (scheduler names, label
// values, spot keys, PriorityClass fields); an undo (history.h) may set any value back at an
// allowed path, since it restores what was there.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "gpufit/apply/change_set.h"
#include "gpufit/apply/history.h"
#include "gpufit/core/result.h"

namespace gpufit::apply {

// kInvalidArgument "<where>: <path>: <why>" for the first field of `c.body` outside the list
// (paths as "spec.template.spec.containers[srv].image"), or an object of another kind,
// namespace or name than its file prefix allows. `planned_namespaces`: the namespaces of
// plan.json's workloads (a ResourceClaim elsewhere is refused); empty: not checked.
Result<void> CheckAllowed(const Change& c, const std::set<std::string>& planned_namespaces, const std::string& where);

// The checks that need the live object: a workload patch's args or command must be the live
// container's with only --gpu-memory-utilization changed (the list replaces the live one
// whole, so anything else in it would be a change gpufit did not plan).
Result<void> CheckAgainstLive(const Change& c, const nlohmann::json& live, const std::string& where);

// A change of a history record: its object and undo must be one gpufit apply makes (its file
// prefix's kinds, names and namespaces; an undo patch only at allowed paths, `$patch: delete`
// of list items it added included; a replace only of an object with the change's identity) and
// its recorded body must pass CheckAllowed.
Result<void> CheckUndo(const AppliedChange& a, const std::string& where);

}  // namespace gpufit::apply
