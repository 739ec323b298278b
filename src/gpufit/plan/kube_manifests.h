// `plan --emit-manifests DIR`: the Kubernetes objects that carry a plan out, one object per
// file, each with apiVersion, kind and metadata.name, and a README saying what each file
// changes and why.
//
// What is emitted (formats: ../shared/reference/formats.md (e) MIG, (f) time-slicing,
// (g) capacity labels, (h) pods):
//  * Co-location through one sharing back end (plan/manifests/sharing_backend.h, one file
//    each under plan/manifests/): time-slicing, mig, hami, kai or dra-mps. Those that cap
//    memory write each pod's planned cap (Plan::memory_cap_mib) and are checked after
//    writing: the caps read back from the patches equal the plan's and add up to at most
//    capacity_mib on every planned GPU (plan/manifests/caps.h), else kInternal.
//  * Co-location by time-slicing (the plan's groups of two or more pods on one GPU):
//      - ConfigMap gpu-operator/gpufit-device-plugin-config holding the NVIDIA device
//        plugin config `gpufit-time-slicing` (version v1, sharing.timeSlicing.resources:
//        nvidia.com/gpu with replicas = the largest group);
//      - a Node patch per node that hosts shared GPUs: label
//        nvidia.com/device-plugin.config=gpufit-time-slicing (nodes of the target GPU model,
//        from --nodes, by GFD's nvidia.com/gpu.product, those already labelled first);
//        renameByDefault (shared GPUs are advertised as nvidia.com/gpu.shared) and
//        failRequestsGreaterThanOne;
//      - a strategic-merge patch per workload whose pods share a GPU:
//        spec.template.spec.nodeSelector nvidia.com/device-plugin.config: gpufit-time-slicing,
//        and its GPU container asks for nvidia.com/gpu.shared instead of nvidia.com/gpu.
//  * MIG isolation (plan --sharing mig) instead of time-slicing:
//      - ConfigMap gpu-operator/gpufit-mig-parted-config, key config.yaml: a mig-parted file
//        (version v1) with one config per node, `gpufit-<node>`, listing each GPU index's
//        mig-devices (GPUs left over: mig-enabled false); without --nodes, the plan's
//        layouts by name with devices: all;
//      - a Node patch per node: label nvidia.com/mig.config=gpufit-<node>;
//      - a workload patch replacing nvidia.com/gpu (set to null, which deletes it in a
//        strategic merge patch) by nvidia.com/mig-<profile>: 1 in limits and requests of
//        the one container that asks for the GPU (initContainers for sidecars); every
//        replica gets the smallest profile that holds the workload's largest need (one pod
//        template serves them all), and the layout above is planned for exactly those
//        profiles (PlanMigLayouts with MigWorkload::profile), one instance per replica.
//  * Both: a ClusterPolicy patch (nvidia.com/v1, cluster-policy) naming the ConfigMap
//    (spec.devicePlugin.config.name / spec.migManager.config.name); when the target GPU
//    model differs from the current one, the workload patches also select it with
//    nodeSelector nvidia.com/gpu.product (the value GFD gives the target's nodes).
//  * Training (plan --training-jobs): per job found among the pods' owners, a patch with
//    the job's node selector, tolerations, required node affinity, checkpoint annotations
//    and environment (plan/training_plan.h). Jobs found running in the cluster
//    (training/cluster_jobs.h) get a note instead: a Job's pod template is immutable, so
//    their labels apply to the next submission.
//  * Night lending (optimize/time_multiplex.h), with a window and lendable GPUs:
//      - PriorityClass gpufit-inference (value 100000): inference pods preempt lent work;
//      - PriorityClass gpufit-night-lending (value -100, preemptionPolicy Never): lent jobs
//        never preempt anything and go first;
//      - Kueue (kueue.x-k8s.io/v1beta1) ResourceFlavor gpufit-night, ClusterQueue
//        gpufit-night (nominalQuota nvidia.com/gpu = the lendable GPUs, stopPolicy Hold:
//        its README row says when to patch it to None and to HoldAndDrain), LocalQueue
//        default/gpufit-night.
//    Sources: kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/,
//    kueue.sigs.k8s.io/docs/concepts/cluster_queue/ (stopPolicy since Kueue v0.6).
//  * Pods on several GPUs or MIG instances (Plan::multi_gpu): a patch that keeps them off
//    shared nodes (required node affinity nvidia.com/gpu.sharing-strategy NotIn [time-slicing,
//    mps]; per back end, plan/manifests/whole_gpus.cpp), and an "ask for 1" note where all
//    their MIG instances but one stayed idle.
// Workloads are the pods' top-level owners (model/kube_cluster.h): Deployment, StatefulSet,
// DaemonSet, ReplicaSet, Job. A telemetry pod "ns/pod" or "ns/pod[i]" is matched to the
// pods file by namespace/name. What cannot be emitted (no --pods, a pod missing from it, a
// bare Pod, an unknown owner kind, too few nodes of the target model) becomes a note.
// File names are stable: workload-<namespace>-<kind>-<name>.yaml, node-<name>.yaml,
// configmap-<namespace>-<name>.yaml, clusterpolicy-<name>.yaml, priorityclass-<name>.yaml,
// kueue-<kind>-<name>.yaml.
#pragma once

#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/optimize/time_multiplex.h"
#include "gpufit/plan/plan.h"
#include "gpufit/plan/training_plan.h"

namespace gpufit {

inline constexpr const char* kDevicePluginConfigLabel = "nvidia.com/device-plugin.config";
inline constexpr const char* kMigConfigLabel = "nvidia.com/mig.config";
inline constexpr const char* kGpuProductLabel = "nvidia.com/gpu.product";
inline constexpr const char* kGpuResource = "nvidia.com/gpu";
inline constexpr const char* kTimeSlicingConfig = "gpufit-time-slicing";
inline constexpr const char* kGpuOperatorNamespace = "gpu-operator";
inline constexpr const char* kDevicePluginConfigMap = "gpufit-device-plugin-config";
inline constexpr const char* kMigPartedConfigMap = "gpufit-mig-parted-config";

struct ManifestFile {
  std::string name;   // file name
  std::string yaml;   // one object
  std::string apply;  // the command that applies it
  std::string what;   // what it changes
  std::string why;    // the plan's evidence
};

struct Manifests {
  std::vector<ManifestFile> files;  // by name
  std::vector<std::string> notes;   // what could not be emitted, and why
};

struct ManifestInputs {
  const Plan* colocation = nullptr;              // plan from telemetry, or null
  const TrainingPlan* training = nullptr;        // or null
  const std::vector<KubeNode>* nodes = nullptr;  // --nodes, or null
  const std::vector<KubePod>* pods = nullptr;    // --pods, or null
  const TimeMultiplexPlan* lending = nullptr;    // night lending of the fleet, or null
  std::string sharing{};    // a back end's name; "" = mig when the plan has a MIG layout, else time-slicing
  std::string kai_queue{};  // kai: the queue label's value ("" = default-queue)
  // hami: also cap compute (nvidia.com/gpucores), each workload at its pods' largest p99 duty
  // cycle x (1 + the plan's headroom), where a GPU's caps fit in 100% (plan/manifests/hami.cpp).
  bool compute_caps = false;
};

// The objects for the plan. Errors: kInternal for a plan the MIG catalog does not know;
// those of PlanMigLayouts (kFailedPrecondition) when the per-workload MIG layout has no plan.
Result<Manifests> BuildManifests(const ManifestInputs& in);

// README.md for the folder: how to apply, then a table of files (these and `extra`, e.g.
// the inference autoscalers: name -> what), then the notes.
std::string ManifestsReadme(const Manifests& m, const std::vector<std::pair<std::string, std::string>>& extra);

// The GFD product label's GPU name without vendor prefix and sharing suffixes, upper case:
// "NVIDIA-H100-80GB-HBM3", "NVIDIA H100 80GB HBM3" and "NVIDIA-H100-80GB-HBM3-SHARED" all
// give "H100-80GB-HBM3"; "-MIG-<profile>" (single strategy) is dropped too.
std::string NormalizedGpuProduct(const std::string& product);

}  // namespace gpufit
