// Pods on several GPUs or MIG instances (Plan::multi_gpu, optimize/multi_gpu.h) keep their
// devices whole: their workload patches keep them off nodes where a "GPU" may be a share of
// one device, so that two of them can never be replicas of the same GPU.
//  * Every back end: required node affinity nvidia.com/gpu.sharing-strategy NotIn
//    [time-slicing, mps]. GPU feature discovery labels every node whose NVIDIA device plugin
//    shares its GPUs (time-slicing or MPS replicas) with that label (k8s-device-plugin README,
//    "Catalog of Labels"; ../shared/reference/formats.md (f)); a node without the label matches
//    NotIn (Kubernetes node affinity: NotIn also matches a node that lacks the label).
//  * time-slicing: also nvidia.com/device-plugin.config NotIn [gpufit-time-slicing], the
//    nodes gpufit's own ConfigMap time-slices, before GPU feature discovery relabels them.
//  * hami: HAMi's device plugin shares every GPU of its nodes and sets no such label; its own
//    mechanism is exclusive use: nvidia.com/gpucores: 100 on the GPU container makes
//    hami-scheduler give each of the pod's GPUs to it alone, never placing it on a card that
//    already has tasks nor another task on its cards (HAMi docs, "Scheduling Failures",
//    ExclusiveDeviceAllocateConflict, v2.9.0), with nvidia.com/gpumem-percentage: 100.
//  * kai, dra-mps: the affinity above. Their shared GPUs go to pods through a gpu-memory
//    annotation (KAI) or a shared ResourceClaim (DRA), which a whole nvidia.com/gpu request
//    does not ask for.
//  * mig: the affinity above; MIG instances are hardware partitions, so several of them are
//    several devices.
// A pod where all MIG instances but one stayed idle also gets a note: ask for 1.
#include <fmt/format.h>

#include "gpufit/plan/manifests/builder.h"
#include "gpufit/plan/manifests/emitters.h"

namespace gpufit::manifests {

inline constexpr const char* kSharingStrategyLabel = "nvidia.com/gpu.sharing-strategy";

void EmitWholeGpus(Builder& b, const std::string& backend) {
  std::set<WorkloadKey> done;
  for (const MultiGpuPod& m : b.plan().multi_gpu) {
    if (m.ask_for_one) b.Note(fmt::format("pod {}: {}", m.pod, m.ask_for_one->text));
    const auto w = b.OwnerOf(b.plan().pod_names[m.series.front()]);
    if (!w || !done.insert(w->first).second) continue;
    Patch& patch = b.PatchOf(w->first);
    Builder::RequireNode(patch, kSharingStrategyLabel, "NotIn", {"time-slicing", "mps"});
    std::string what =
        fmt::format("kept off shared GPUs: node affinity {} NotIn [time-slicing, mps]", kSharingStrategyLabel);
    if (backend == "time-slicing") {
      Builder::RequireNode(patch, kDevicePluginConfigLabel, "NotIn", {kTimeSlicingConfig});
      what += fmt::format(", {} NotIn [{}]", kDevicePluginConfigLabel, kTimeSlicingConfig);
    }
    if (backend == "hami") {
      if (const KubeContainer* c = b.GpuContainer(*w->second, w->first)) {
        YAML::Node container;
        container["name"] = c->name;
        container["resources"]["limits"]["nvidia.com/gpucores"] = "100";
        container["resources"]["limits"]["nvidia.com/gpumem-percentage"] = "100";
        // HAMi takes an absolute nvidia.com/gpumem over the percentage when a container has both:
        // one the pod already asks for would still cap it, so the patch deletes it (null).
        if (c->resources.devices.contains("nvidia.com/gpumem"))
          for (const char* side : {"limits", "requests"})
            container["resources"][side]["nvidia.com/gpumem"] = YAML::Node(YAML::NodeType::Null);
        Builder::AddContainer(patch, *c, container);
        what += fmt::format(
            "; container {}: nvidia.com/gpucores 100, nvidia.com/gpumem-percentage 100 (HAMi: each "
            "of its GPUs exclusive)",
            c->name);
      }
    }
    patch.what.push_back(what);
    patch.why.push_back(fmt::format("pod {} holds {} devices ({}): its GPUs stay whole, never replicas of one GPU",
                                    m.pod, m.devices, m.evidence));
  }
}

}  // namespace gpufit::manifests
