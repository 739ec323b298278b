// Which GPU sharing system runs on a node, read from what each system writes on its nodes.
// gpufit's emitters (plan/manifests/) write only for nodes of their own system, and
// `plan --emit-manifests` picks the back end from these when --sharing is not given.
//
// Evidence, first match wins (sources with each rule):
//  * hami: the node annotation `hami.io/node-nvidia-register` that HAMi's device plugin
//    writes (Project-HAMi/HAMi pkg/device/nvidia/device.go, the RegisterAnnos key). HAMi
//    advertises only `nvidia.com/gpu` in allocatable, physical GPUs x deviceSplitCount
//    (default 10; pkg/device-plugin/nvidiadevice/nvinternal/rm/devices.go GetPluginDevices),
//    so gpumem in allocatable is NOT its mark. Formats of the annotation, by release:
//      - up to v2.4.x: "id,count,devmem,devcore,type,numa,health:" per GPU (pkg/util/util.go
//        EncodeNodeDevices, v2.4.1 L158-165; DecodeNodeDevices requires 7 fields);
//      - v2.5.0 to v2.7.x: "id,count,devmem,devcore,type,numa,health,index,mode:" (v2.6.0
//        pkg/util/util.go L187-213; v2.7.0 pkg/device/devices.go L243), mode hami-core|mig|mps;
//      - v2.8.0 on: a JSON array of DeviceInfo (pkg/device/devices.go L98-112: id, index,
//        count, devmem, devcore, type, numa, mode, health, ...; every field omitempty, so an
//        absent health is false and an absent index or numa is 0).
//    Each entry ends with ':' in the string formats, the last one too. devmem is MiB, devcore
//    percent (100 = the whole GPU); type is "NVIDIA-" + the NVML name before v2.8
//    ("NVIDIA-NVIDIA A100-SXM4-80GB", "NVIDIA-Tesla T4"), the NVML name itself from v2.8
//    when it starts with "NVIDIA".
//  * dra: GPUs published by the NVIDIA DRA driver (driver gpu.nvidia.com, device attribute
//    type "gpu"; NVIDIA/k8s-dra-driver-gpu cmd/gpu-kubelet-plugin deviceinfo.go), from
//    ResourceSlices in the nodes file (KubeNode::dra_gpus).
//  * kai: a pod bound to the node that shares a GPU through KAI-Scheduler, by its annotation
//    `gpu-fraction` or `gpu-memory` (NVIDIA/KAI-Scheduler pkg/common/constants/constants.go).
//    KAI marks no node: sharing is a cluster-wide switch of its Config (global.gpuSharing).
//  * mig: GFD's `nvidia.com/mig.strategy` single or mixed, or `nvidia.com/mig.config` set to
//    a config other than all-disabled (NVIDIA device plugin / GPU Operator).
//  * time-slicing / mps: GFD's `nvidia.com/gpu.sharing-strategy` (k8s-device-plugin
//    v0.15.0+, internal/lm/resource.go), or `nvidia.com/gpu.replicas` above 1 on older GFD.
//  * device-plugin: any other node with NVIDIA GPUs (capacity nvidia.com/gpu, or a
//    nvidia.com/gpu.product label): whole GPUs through the NVIDIA device plugin.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/core/units.h"
#include "gpufit/model/kube_cluster.h"

namespace gpufit {

inline constexpr const char* kHamiRegisterAnnotation = "hami.io/node-nvidia-register";

// One GPU as HAMi registers it.
struct HamiDevice {
  std::string uuid;
  int split_count = 0;  // how many pods may share it (deviceSplitCount)
  MiB memory{};         // devmem: MiB HAMi hands out on it
  int cores = 0;        // devcore: percent, 100 = whole GPU
  std::string type;     // e.g. "NVIDIA-NVIDIA A100-SXM4-80GB"
  bool healthy = false;
  std::string mode;  // hami-core, mig or mps ("hami-core" in the 7-field format)
};

// The GPUs of a register annotation in any of the three formats above. kInvalidArgument
// naming the entry and field for a malformed value.
Result<std::vector<HamiDevice>> DecodeHamiRegister(const std::string& value);

// The product name of a HAMi type, without the "NVIDIA-" HAMi prefixes before v2.8:
// "NVIDIA-NVIDIA A100-SXM4-80GB" -> "NVIDIA A100-SXM4-80GB"; "NVIDIA-Tesla T4" -> "Tesla T4".
std::string HamiProduct(const std::string& type);

struct NodeSharing {
  // "hami", "dra", "kai", "mig", "time-slicing", "mps", "device-plugin", or "" (no GPU).
  std::string system{};
  std::string evidence{};  // what on the node says so, e.g. "annotation hami.io/node-nvidia-register (4 GPUs)"
  int physical_gpus = 0;   // GPUs, not the shares a sharing system advertises
  std::string product{};   // the GPU product name where the system says it
};

// The pods that share a GPU through KAI-Scheduler (annotation gpu-fraction or gpu-memory):
// what SharingOfNode needs of a cluster's pods, filtered once.
std::vector<KubePod> KaiSharingPods(const std::vector<KubePod>& pods);

// The node's system by the rules above. `pods` (or null): the cluster's pods, for KAI (pass
// KaiSharingPods of them when asking for many nodes: each call walks the list).
// kInvalidArgument naming the node and annotation for a HAMi annotation that does not decode.
Result<NodeSharing> SharingOfNode(const KubeNode& node, const std::vector<KubePod>* pods);

// What HAMi hands out per GPU on the nodes (the smallest over their registered GPUs whose
// product normalizes to `product_key` by `normalize`, or over all when none does): the
// memory (devmem, MiB) and the pods (count) one GPU takes. Zero when no node is HAMi's.
struct HamiLimits {
  std::int64_t memory_mib = 0;
  int pods = 0;
  std::string basis;  // e.g. "4 HAMi GPUs of NVIDIA A100-SXM4-80GB: devmem 30000 MiB, count 2"
};
Result<HamiLimits> HamiLimitsOf(const std::vector<KubeNode>& nodes, const std::string& product_key,
                                std::string (*normalize)(const std::string&));

// The --sharing back end (plan/manifests/sharing_backend.h) that serves a system: hami ->
// hami, dra -> dra-mps, kai -> kai, every NVIDIA device plugin system -> time-slicing.
std::string BackendOfSystem(const std::string& system);

// The back end for a cluster whose --sharing is not given: the one serving the most
// physical GPUs among the nodes (ties: hami, dra-mps, kai, time-slicing); time-slicing
// without GPU nodes. `why` counts nodes and GPUs per back end. Errors: SharingOfNode's.
struct SharingChoice {
  std::string backend;
  std::string why;  // e.g. "hami: 2 nodes, 8 GPUs; time-slicing: 1 node, 4 GPUs"
};
Result<SharingChoice> ChooseSharing(const std::vector<KubeNode>& nodes, const std::vector<KubePod>* pods);

}  // namespace gpufit
