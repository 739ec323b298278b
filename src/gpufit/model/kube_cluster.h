// A live Kubernetes cluster as `kubectl get nodes -o json` and `kubectl get pods -A -o json`
// print it: what each node has and what each pod asks for. ingest/kube/kube_reader.h reads it.
//
// Units: CPU in millicores, host memory in MiB (rounded up from the Kubernetes quantity),
// devices (extended resources such as `nvidia.com/gpu`, `nvidia.com/mig-1g.10gb`) as whole
// counts keyed by resource name, times in Unix seconds.
// Every member has a default, so a designated initializer may name only some.
//
// Sources (../shared/reference/formats.md sections (e) to (h)):
//  - Pod fields: https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/
//  - Node fields: https://kubernetes.io/docs/reference/kubernetes-api/cluster-resources/node-v1/
//  - Extended resources (whole numbers, requests == limits):
//    https://kubernetes.io/docs/tasks/configure-pod-container/extended-resource/
//  - Effective pod request with init and sidecar containers:
//    https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/
//  - MIG resources and GFD labels:
//    https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-operator-mig.html
//  - Time-slicing labels: https://github.com/NVIDIA/k8s-device-plugin (README, "Catalog of Labels")
//  - Spot labels: Karpenter, EKS, GKE and AKS docs listed in formats.md (g).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpufit/core/units.h"

namespace gpufit {

// Whether `name` is a DNS-1123 subdomain, Kubernetes' rule for object and namespace names
// (k8s.io/apimachinery/pkg/util/validation IsDNS1123Subdomain): 1-253 of lower-case letters,
// digits, '-' and '.', starting and ending with a letter or digit.
inline bool IsDnsSubdomain(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  const auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(name.front()) || !alnum(name.back())) return false;
  return std::all_of(name.begin(), name.end(), [&](char c) { return alnum(c) || c == '-' || c == '.'; });
}

// One container's `.resources`. When only a limit is set for cpu or memory, the request
// is the limit (Kubernetes defaulting), so `*_request` is set whenever `*_limit` is.
struct ContainerResources {
  std::optional<MilliCpu> cpu_request{}, cpu_limit{};
  std::optional<MiB> memory_request{}, memory_limit{};
  // Extended resources (any `<domain>/<name>` resource, e.g. `nvidia.com/gpu`,
  // `nvidia.com/mig-3g.40gb`): the count from limits, else from requests. Kubernetes
  // does not overcommit them, so requests and limits are equal when both are given.
  std::map<std::string, int> devices{};

  // Whether it holds an NVIDIA GPU or MIG instance (`nvidia.com/gpu`, `nvidia.com/mig-*`).
  bool HoldsGpu() const {
    for (const auto& [name, count] : devices)
      if (count > 0 && (name == "nvidia.com/gpu" || name.starts_with("nvidia.com/mig-"))) return true;
    return false;
  }
};

struct KubeContainer {
  // kApp: `.spec.containers[]`. kInit: `.spec.initContainers[]`, runs to completion
  // before the app containers. kSidecar: an init container with `restartPolicy: Always`
  // (native sidecar, Kubernetes 1.29+): starts in init order and runs beside the app.
  enum class Kind { kApp, kInit, kSidecar };
  std::string name{};
  std::string image{};
  std::vector<std::string> command{}, args{};  // `.command`, `.args` (a patch of args replaces the list)
  ContainerResources resources{};
  Kind kind = Kind::kApp;
};

// The pod's top-level workload, from its controller ownerReference (`controller: true`,
// else the first one):
//  - a ReplicaSet named `<deployment>-<pod-template-hash>` (the hash from the pod's
//    `pod-template-hash` label) becomes {"Deployment", "<deployment>"}; a ReplicaSet
//    whose name does not match stays {"ReplicaSet", name};
//  - StatefulSet, DaemonSet, Job and any other kind are kept as they are (a Job made by a
//    CronJob stays a Job: the pod alone does not say which CronJob);
//  - no ownerReference: {"Pod", <the pod's own name>}.
struct WorkloadRef {
  std::string kind{};
  std::string name{};
  auto operator<=>(const WorkloadRef&) const = default;
};

namespace internal {

// The effective pod request of one resource, given each container's request `of(c)`:
// max(sum over app containers and sidecars, peak over init containers), where an init
// container's peak includes the sidecars started before it, and a sidecar's peak is the
// sidecars started so far including itself. This is kube-scheduler's rule (resourcehelper
// PodRequests); see https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/
// `containers` holds init containers first, in spec order.
template <class F>
std::int64_t EffectivePodRequest(const std::vector<KubeContainer>& containers, F of) {
  std::int64_t sum = 0, sidecars = 0, init_peak = 0;
  for (const KubeContainer& c : containers) {
    const std::int64_t r = of(c);
    switch (c.kind) {
      case KubeContainer::Kind::kApp:
        sum += r;
        break;
      case KubeContainer::Kind::kSidecar:
        sum += r;
        sidecars += r;
        init_peak = std::max(init_peak, sidecars);
        break;
      case KubeContainer::Kind::kInit:
        init_peak = std::max(init_peak, r + sidecars);
        break;
    }
  }
  return std::max(sum, init_peak);
}

}  // namespace internal

struct KubePod {
  std::string namespace_name{};  // `.metadata.namespace` ("default" when absent)
  std::string name{};            // `.metadata.name`
  std::string uid{};             // `.metadata.uid`; joins with dcgm-exporter `pod_uid`
  std::string node_name{};       // `.spec.nodeName`; empty until the pod is bound
  std::string phase{};           // `.status.phase`: Pending, Running, Succeeded, Failed, Unknown
  std::string qos_class{};       // `.status.qosClass`: Guaranteed, Burstable, BestEffort
  std::map<std::string, std::string> labels{};
  std::map<std::string, std::string> annotations{};  // `.metadata.annotations`
  // Init containers and sidecars first, in `.spec.initContainers` order, then the app
  // containers in `.spec.containers` order.
  std::vector<KubeContainer> containers{};
  WorkloadRef owner{};
  std::optional<double> created_s{};                   // `.metadata.creationTimestamp`, Unix seconds
  std::optional<double> deleted_s{};                   // `.metadata.deletionTimestamp` (terminating), Unix seconds
  std::optional<double> started_s{};                   // `.status.startTime` (bound and started), Unix seconds
  std::map<std::string, std::string> node_selector{};  // `.spec.nodeSelector`
  // `.spec.overhead` (RuntimeClass pod overhead), added to the effective request.
  MilliCpu overhead_cpu{};
  MiB overhead_memory{};
  // The pod's end, Unix seconds: with `.status.phase` Succeeded or Failed, the latest
  // `.status.containerStatuses[].state.terminated.finishedAt` (as kube-state-metrics'
  // kube_pod_completion_time); nullopt for other phases or without one.
  std::optional<double> finished_s{};

  // "namespace/name", unique in a cluster.
  std::string Key() const { return namespace_name + "/" + name; }

  // What the scheduler reserves for the pod: internal::EffectivePodRequest of the
  // container requests (absent = 0), plus the pod overhead.
  MilliCpu CpuRequest() const {
    return MilliCpu{internal::EffectivePodRequest(
               containers, [](const KubeContainer& c) { return c.resources.cpu_request.value_or(MilliCpu{}).value; })} +
           overhead_cpu;
  }
  MiB MemoryRequest() const {
    return MiB{internal::EffectivePodRequest(
               containers, [](const KubeContainer& c) { return c.resources.memory_request.value_or(MiB{}).value; })} +
           overhead_memory;
  }
  // The count of one extended resource (e.g. "nvidia.com/gpu") the pod holds, by the same
  // rule: app containers and sidecars add up, init containers take the max.
  int Devices(const std::string& resource) const {
    return static_cast<int>(internal::EffectivePodRequest(containers, [&](const KubeContainer& c) -> std::int64_t {
      const auto it = c.resources.devices.find(resource);
      return it == c.resources.devices.end() ? 0 : it->second;
    }));
  }
  // The GPUs and MIG instances the pod holds: nvidia.com/gpu plus every nvidia.com/mig-<profile>,
  // each by Devices().
  int GpuDevices() const {
    std::set<std::string> resources;
    for (const KubeContainer& c : containers)
      for (const auto& [resource, count] : c.resources.devices)
        if (resource == "nvidia.com/gpu" || resource.starts_with("nvidia.com/mig-")) resources.insert(resource);
    int n = 0;
    for (const std::string& r : resources) n += Devices(r);
    return n;
  }
  // The MIG profile of the one MIG instance the pod holds ("1g.10gb"; "1g.10gb+me" from
  // nvidia.com/mig-1g.10gb.me: the device plugin writes '+' as '.', ../shared/reference/
  // mig_profiles.yaml), or "" when it holds none, several, or a whole GPU beside it.
  std::string MigProfile() const {
    if (GpuDevices() != 1) return "";
    for (const KubeContainer& c : containers)
      for (const auto& [resource, count] : c.resources.devices)
        if (count > 0 && resource.starts_with("nvidia.com/mig-")) {
          std::string profile = resource.substr(std::string_view("nvidia.com/mig-").size());
          // "<c>g.<m>gb" then an optional ".<extension>" (me, gfx, ...): that dot was a '+'.
          if (const auto first = profile.find('.'); first != std::string::npos)
            if (const auto second = profile.find('.', first + 1); second != std::string::npos) profile[second] = '+';
          return profile;
        }
    return "";
  }
};

// A node taint (`.spec.taints[]`), e.g. {"kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule"}.
struct NodeTaint {
  std::string key{};
  std::string value{};
  std::string effect{};  // NoSchedule, PreferNoSchedule or NoExecute
  auto operator<=>(const NodeTaint&) const = default;
};

struct KubeNode {
  std::string name{};
  MilliCpu cpu_capacity{}, cpu_allocatable{};  // `.status.capacity.cpu`, `.status.allocatable.cpu`
  MiB memory_capacity{}, memory_allocatable{};
  // Extended resources in `.status.capacity` / `.status.allocatable` (names with a '/':
  // `nvidia.com/gpu`, `nvidia.com/mig-1g.10gb`, `nvidia.com/gpu.shared`, ...). pods,
  // ephemeral-storage and hugepages-* are not kept.
  std::map<std::string, int> devices_capacity{}, devices_allocatable{};
  std::map<std::string, std::string> labels{};
  std::map<std::string, std::string> annotations{};  // `.metadata.annotations` (HAMi registers its GPUs there)
  std::vector<NodeTaint> taints{};
  bool unschedulable = false;  // `.spec.unschedulable` (cordoned)
  // GPUs the NVIDIA DRA driver publishes for this node: devices of driver gpu.nvidia.com with
  // attribute type "gpu" in the ResourceSlices of the nodes file (`kubectl get
  // nodes,resourceslices -o json`), and the productName of the first; 0 / "" without.
  int dra_gpus = 0;
  std::string dra_product{};

  // From GPU feature discovery labels (formats.md (e), (f)); empty / 0 when absent.
  std::string gpu_product{};        // `nvidia.com/gpu.product`, e.g. "NVIDIA-H100-80GB-HBM3"
  std::optional<MiB> gpu_memory{};  // `nvidia.com/gpu.memory` (per GPU, MiB)
  int gpu_count = 0;                // `nvidia.com/gpu.count` label, else capacity `nvidia.com/gpu`
  // "spot", "on-demand", "reserved" or "" (unknown), from the first label present of
  // `karpenter.sh/capacity-type`, `eks.amazonaws.com/capacityType` (SPOT, ON_DEMAND,
  // CAPACITY_BLOCK -> reserved), `cloud.google.com/gke-spot` or `gke-preemptible` ("true"
  // -> spot), `kubernetes.azure.com/scalesetpriority` (spot; regular -> on-demand).
  std::string capacity_type{};
  std::string mig_strategy{};      // `nvidia.com/mig.strategy`: single, mixed, or ""
  std::string mig_config{};        // `nvidia.com/mig.config`: the mig-parted config name, or ""
  std::string sharing_strategy{};  // `nvidia.com/gpu.sharing-strategy`: none, time-slicing, mps, or ""
  // `nvidia.com/gpu.replicas`: the replicas per GPU under time-slicing or MPS (GFD writes the
  // config's replicas, k8s-device-plugin internal/lm/resource.go getReplicas), 0 when absent.
  int gpu_replicas = 0;
};

struct KubeCluster {
  std::vector<KubeNode> nodes{};  // by name
  std::vector<KubePod> pods{};    // by Key()
};

}  // namespace gpufit
