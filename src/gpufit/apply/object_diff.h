// What a change does to a live object, and how to undo it.
//
// Diff: the leaves that differ between two versions of an object (the live one and the server's
// dry-run of the change), as `kubectl diff` would show them but one line per leaf:
//   "~ spec.template.spec.schedulerName: \"default-scheduler\" -> \"hami-scheduler\""
//   "+ spec.template.spec.containers[sd].resources.limits.nvidia.com/gpumem: \"60330\""
//   "- spec.template.spec.containers[sd].resources.limits.nvidia.com/gpu: \"1\""
// Lists of objects with a `name` are matched by name ([sd]), others by index ([0]). What the
// server keeps for itself is left out: status and metadata's uid, resourceVersion, generation,
// creationTimestamp, managedFields and the deployment.kubernetes.io/revision annotation.
//
// InversePatch: the patch of the same type that, applied after `patch` to the object that was
// `saved` before it, gives back `saved`'s values at every place `patch` touched:
//   * a key the patch sets that `saved` lacked -> null (deleted);
//   * a key it sets that `saved` had -> `saved`'s value (objects recursed into);
//   * strategic merge only: a list the API merges by a key (containers, initContainers,
//     volumes, env, resourceClaims and imagePullSecrets by name, volumeMounts by mountPath, ports by
//     containerPort: the patchMergeKey of k8s.io/api/core/v1/types.go) is recursed into element by
//     element; an element the patch added gets {"<key>": ..., "$patch": "delete"}
//     (https://github.com/kubernetes/community/blob/master/contributors/devel/sig-api-machinery/strategic-merge-patch.md);
//     any other list is replaced whole, so its inverse is `saved`'s list.
// A merge patch (RFC 7386) replaces every list whole.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpufit::apply {

std::vector<std::string> Diff(const nlohmann::json& before, const nlohmann::json& after);

// `object` as a user wrote it: without status and the metadata the server keeps for itself (the
// fields Diff leaves out). What `gpufit apply` saves to put an object back.
nlohmann::json WithoutServerFields(nlohmann::json object);

// `strategic`: a strategic merge patch (else an RFC 7386 merge patch).
nlohmann::json InversePatch(const nlohmann::json& saved, const nlohmann::json& patch, bool strategic);

}  // namespace gpufit::apply
