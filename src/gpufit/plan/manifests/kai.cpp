// KAI-Scheduler (NVIDIA/KAI-Scheduler, docs/gpu-sharing/README.md and gpu-memory.yaml):
// a pod asks for part of a GPU with the annotation `gpu-memory: "<MiB>"` (or `gpu-fraction`),
// is scheduled by `schedulerName: kai-scheduler` and names its queue with the label
// `kai.scheduler/queue`. GPU sharing must be on in the chart (global.gpuSharing=true). The
// scheduler reserves the memory on a GPU, so the gpu-memory of the pods placed on one GPU
// never add up to more than its memory; but, as its docs say, KAI does NOT enforce the
// limit at run time nor isolate memory between processes: a pod that allocates past its
// gpu-memory can still starve its neighbours. gpufit writes the planned cap (the envelope)
// and removes the pod's nvidia.com/gpu request, which would take a whole GPU.
#include <fmt/format.h>

#include "gpufit/plan/manifests/builder.h"
#include "gpufit/plan/manifests/caps.h"
#include "gpufit/plan/manifests/sharing_backend.h"

namespace gpufit::manifests {
namespace {

constexpr const char* kGpuMemoryAnnotation = "gpu-memory";
constexpr const char* kQueueLabel = "kai.scheduler/queue";
constexpr const char* kKaiScheduler = "kai-scheduler";

Result<void> EmitKai(Builder& b) {
  const Plan& plan = b.plan();
  const std::string queue = b.in().kai_queue.empty() ? "default-queue" : b.in().kai_queue;
  for (const auto& [key, s] : b.SharedWorkloads()) {
    const KubeContainer* c = b.GpuContainer(*s.example, key);
    if (c == nullptr) continue;
    const auto cap = static_cast<std::int64_t>(plan.memory_cap_mib.at(s.pods.front()));
    Patch& patch = b.PatchOf(key);
    patch.yaml["spec"]["template"]["metadata"]["annotations"][kGpuMemoryAnnotation] = std::to_string(cap);
    patch.yaml["spec"]["template"]["metadata"]["labels"][kQueueLabel] = queue;
    patch.yaml["spec"]["template"]["spec"]["schedulerName"] = kKaiScheduler;
    YAML::Node container;
    container["name"] = c->name;
    for (const char* side : {"limits", "requests"}) container["resources"][side][kGpuResource] = YAML::Node();
    Builder::AddContainer(patch, *c, container);
    patch.what.push_back(fmt::format("{}: \"{}\" (MiB) instead of {} on container {}; queue {}, {}",
                                     kGpuMemoryAnnotation, cap, kGpuResource, c->name, queue, kKaiScheduler));
    b.SelectTargetModel(patch);
    patch.why.push_back(CapReason(plan, s.pods));
  }
  b.Note(
      "kai: KAI-Scheduler reserves each pod's gpu-memory when it places pods, but does not enforce it at run time: a "
      "pod that allocates past its annotation can still starve its neighbours (KAI docs, GPU sharing)");
  return {};
}

std::optional<double> ReadKaiCap(const std::string& yaml) {
  const YAML::Node a = YAML::Load(yaml)["spec"]["template"]["metadata"]["annotations"][kGpuMemoryAnnotation];
  if (!a) return std::nullopt;
  return a.as<double>();
}

}  // namespace

extern const SharingBackend kKai;
const SharingBackend kKai = {
    .name = "kai",
    .memory_enforced_by = "KAI-Scheduler at placement only (gpu-memory reserved per GPU); nothing at run time",
    .compute_enforced_by = "nothing",
    .needs = "KAI-Scheduler with global.gpuSharing=true, and a queue (--kai-queue)",
    .caps_memory = true,
    .emit = EmitKai,
    .read_cap = ReadKaiCap,
};

}  // namespace gpufit::manifests
