#include "gpufit/pipeline/sharing.h"

#include <algorithm>
#include <cctype>

#include "gpufit/ingest/kube/kube_reader.h"
#include "gpufit/ingest/kube/node_sharing.h"
#include "gpufit/plan/kube_manifests.h"
#include "gpufit/plan/manifests/sharing_backend.h"
#include "gpufit/plan/workload_keys.h"

namespace gpufit::pipeline {

Result<void> ApplySharing(PlanInputs& in, const GpuCatalog& catalog, const Telemetry* telemetry) {
  const std::optional<std::vector<KubeNode>>& nodes = in.nodes;
  const std::optional<std::vector<KubePod>>& pods = in.pods;
  if (!in.kai_queue.empty() && in.sharing != "kai") return InvalidArgument("--kai-queue applies to --sharing kai only");
  // A label value (Kubernetes: at most 63 characters, alphanumerics, '-', '_', '.' inside).
  const auto label_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!in.kai_queue.empty() &&
      (in.kai_queue.size() > 63 || !label_char(in.kai_queue.front()) || !label_char(in.kai_queue.back()) ||
       !std::all_of(in.kai_queue.begin(), in.kai_queue.end(),
                    [&](char c) { return label_char(c) || c == '-' || c == '_' || c == '.'; })))
    return InvalidArgument(
        "--kai-queue '{}' is not a valid label value (at most 63 letters, digits, '-', '_', '.', "
        "starting and ending with a letter or digit)",
        in.kai_queue);
  if (in.sharing.empty()) {
    in.sharing = "time-slicing";
    if (nodes) {
      const Result<SharingChoice> choice = ChooseSharing(*nodes, pods ? &*pods : nullptr);
      if (!choice) return InvalidArgument("{}: {}", in.nodes_label, choice.error().message);
      in.sharing = choice->backend;
      if (in.note) in.note("--sharing " + in.sharing + ", from the nodes (" + choice->why + ")");
    }
  }
  in.options.replicas_apart = in.replicas_apart != "off";
  // HAMi hands out at most its registered devmem and count per GPU: the plan keeps to both.
  if (in.sharing == "hami" && nodes) {
    const Result<GpuModel> target = catalog.Find(in.options.target_gpu);
    const Result<HamiLimits> hami =
        HamiLimitsOf(*nodes, target ? NormalizedGpuProduct(target->name) : std::string(), NormalizedGpuProduct);
    if (!hami) return InvalidArgument("{}: {}", in.nodes_label, hami.error().message);
    if (hami->pods > 0) {
      in.options.max_pods_per_gpu = static_cast<std::size_t>(hami->pods);
      if (target && hami->memory_mib < target->memory.value)
        in.reserve_mib = std::max<std::int64_t>(in.reserve_mib, target->memory.value - hami->memory_mib);
      if (in.note) in.note("hami: " + hami->basis + "; the plan keeps to both");
    }
  }
  if (in.compute_caps && in.sharing != "hami") return InvalidArgument("--compute-caps applies to --sharing hami only");
  const Result<const manifests::SharingBackend*> backend = manifests::FindSharingBackend(in.sharing);
  in.options.sharing = in.sharing;
  in.options.mig_isolation = in.sharing == "mig" || in.mig_alternative;
  in.options.memory_caps = backend && (*backend)->caps_memory;
  in.options.whole_workloads = in.sharing == "dra-mps";
  if (in.options.memory_caps && in.emit_manifests && !pods)
    return InvalidArgument("--sharing {} --emit-manifests needs --pods: the caps go into each pod's workload",
                           in.sharing);
  // Pods whose spec asks for several GPUs or MIG instances are kept whole (optimize/multi_gpu.h).
  if (telemetry != nullptr && pods) {
    for (const PodSeries& p : telemetry->pods)
      if (const KubePod* k = FindKubePod(*pods, p.pod)) in.options.spec_devices[p.pod] = k->GpuDevices();
  }
  // Each pod's workload: the caps of one pod template, and replicas kept apart.
  if (telemetry != nullptr && pods) {
    for (const PodSeries& p : telemetry->pods) in.options.workload_by_pod[p.pod] = WorkloadKeyOf(p.pod, *pods);
  }
  return {};
}

}  // namespace gpufit::pipeline
