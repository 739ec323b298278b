// What `gpufit apply` changes: the objects of a folder that `gpufit plan --emit-manifests` wrote,
// read back with the command its README.md gives for each file, checked against the plan.json
// they came from.
//
// A folder holds README.md (a table `| file | changes | why | apply |`) and one object per YAML
// file. The apply column says how each file is applied (plan/manifests/builder.cpp writes it):
//   `kubectl apply -f FILE`                          -> kApply: server-side apply of a full object;
//   `kubectl patch KIND NAME [-n NS] --type T ...`   -> kPatch: a patch of type T (strategic, merge)
//                                                       of a live object;
//   anything else (a Job's `kustomize: ...`)         -> kManual: listed, never applied (a Job's pod
//                                                       template is immutable once created).
// Each change belongs to the plan strategy that produced it, whose backtest verdict must be
// "held" (backtest/status.h) for apply to touch it:
//   kueue-*, priorityclass-*   -> "lending" (night lending);
//   every other file           -> "mig" when the plan's options.sharing is mig, else "colocation"
//                                 (the memory caps and the sharing set-up they need).
// Errors (kInvalidArgument, naming the file and line): a README row whose file is missing, a
// file that is not one object with apiVersion, kind and metadata.name, an apply command that is
// none of the above, an object or a field that gpufit never changes (allow_list.h, naming the
// file and the JSON path).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpufit/core/result.h"

namespace gpufit::apply {

// One Kubernetes object by its coordinates.
struct ObjectRef {
  std::string api_version;  // "apps/v1", "v1", "scheduling.k8s.io/v1"
  std::string kind;         // "Deployment"
  std::string ns;           // "" for a cluster-scoped object
  std::string name;
  // The REST path of the object: /apis/apps/v1/namespaces/genai/deployments/sd-web (the plural
  // is the kind in lower case plus "s", "es" after s/x/ch/sh, "ies" after a consonant and y: the
  // rule of every kind gpufit emits; NetworkPolicy -> networkpolicies).
  std::string Path() const;
  // Its collection: /apis/apps/v1/namespaces/genai/deployments.
  std::string CollectionPath() const;
  // "Deployment genai/sd-web", "PriorityClass gpufit-inference".
  std::string Display() const;
  // The workload key plan.json uses: "deployment/genai/sd-web".
  std::string WorkloadKey() const;
};

struct Change {
  enum class Method { kApply, kPatch, kManual };
  std::string file;  // file name in the folder
  ObjectRef ref;
  Method method = Method::kManual;
  std::string patch_type;  // kPatch: "strategic" or "merge"
  nlohmann::json body;     // the file's object
  std::string strategy;    // "colocation", "mig" or "lending"
  std::string what;        // the README's "changes" cell
  bool workload = false;   // a patch of a pod template's owner (Deployment, StatefulSet, DaemonSet)
};

// The workloads plan.json plans: each pods[].workload key of the form "kind/namespace/name"
// ("deployment/genai/sd-web"), once, in the plan's order; empty for a plan made from telemetry
// alone (it names pods only).
std::vector<std::string> PlannedWorkloads(const nlohmann::json& plan);

// Whether `plan` is a plan.json of gpufit plan (it has backtest.status); kInvalidArgument naming
// `where` otherwise.
Result<void> CheckPlanJson(const nlohmann::json& plan, const std::string& where);

// The changes of `dir` in the README's order of application: full objects and patches of
// cluster objects (ConfigMaps, ClusterPolicy, ResourceClaims, node labels, lending) first, then
// workloads, each part by file name.
Result<std::vector<Change>> ReadChanges(const std::filesystem::path& dir, const nlohmann::json& plan);

// The YAML of one emitted file as JSON (a quoted scalar is a string; plain ones are null, bool,
// integer or number where they read as one). `where` names the file in errors.
Result<nlohmann::json> YamlToJson(const std::string& text, const std::string& where);

}  // namespace gpufit::apply
