// Time-slicing (NVIDIA device plugin, sharing.timeSlicing): each GPU advertised `replicas`
// times. Nothing enforces memory: the scheduler, not gpufit, picks which pods share a GPU,
// and a pod can take all of its memory. What limits the damage (device plugin docs,
// "Shared Access to GPUs with CUDA Time-Slicing"):
//  * renameByDefault: true: shared GPUs are advertised as nvidia.com/gpu.shared, so only
//    the pods patched to ask for it land on them, and cost tools (OpenCost/Kubecost) see a
//    resource of its own instead of billing each sharing pod a whole nvidia.com/gpu;
//  * failRequestsGreaterThanOne: true: a pod asking for 2 replicas (which would not be 2
//    GPUs' worth) is refused instead of silently sharing.
// Formats: ../shared/reference/formats.md (f).
#include <fmt/format.h>

#include "gpufit/plan/manifests/builder.h"
#include "gpufit/plan/manifests/sharing_backend.h"

namespace gpufit::manifests {
namespace {

constexpr const char* kSharedResource = "nvidia.com/gpu.shared";

Result<void> EmitTimeSlicing(Builder& b) {
  const Plan& plan = b.plan();
  std::size_t shared_gpus = 0, replicas = 0;
  for (const GpuReplay& g : plan.replay.gpus) {
    if (g.pods.size() < 2) continue;
    ++shared_gpus;
    replicas = std::max(replicas, g.pods.size());
  }
  if (shared_gpus == 0) {
    b.Note("co-location: no GPU is shared, so no time-slicing configuration is needed");
    return {};
  }
  std::vector<const KubeNode*> chosen;
  if (b.in().nodes == nullptr) {
    b.NoteOnce(fmt::format("no --nodes file: label {} nodes of {} with {}={} yourself", shared_gpus, plan.target.id,
                           kDevicePluginConfigLabel, kTimeSlicingConfig));
  } else {
    std::size_t gpus = 0;
    for (const KubeNode* n : b.TargetNodes(kDevicePluginConfigLabel, kTimeSlicingConfig, true)) {
      if (gpus >= shared_gpus) break;
      chosen.push_back(n);
      gpus += static_cast<std::size_t>(n->gpu_count);
    }
    if (chosen.empty()) {
      b.Note(
          fmt::format("time-slicing: no schedulable {} node without MIG in --nodes for the {} shared GPUs; nothing "
                      "written for it",
                      plan.target.id, shared_gpus));
      return {};
    }
    if (gpus < shared_gpus)
      b.Note(fmt::format("the cluster has {} usable {} GPUs for the {} shared ones: add {}", gpus, plan.target.id,
                         shared_gpus, shared_gpus - gpus));
  }

  YAML::Node config;
  config["version"] = "v1";
  config["flags"]["migStrategy"] = "none";
  config["sharing"]["timeSlicing"]["renameByDefault"] = Plain(true);
  config["sharing"]["timeSlicing"]["failRequestsGreaterThanOne"] = Plain(true);
  YAML::Node resource;
  resource["name"] = kGpuResource;
  resource["replicas"] = Plain(replicas);
  config["sharing"]["timeSlicing"]["resources"].push_back(resource);
  b.ConfigMap(kDevicePluginConfigMap, kTimeSlicingConfig, Emit(config),
              fmt::format("NVIDIA device plugin config {}: each GPU advertised {} times as {} (renameByDefault; "
                          "failRequestsGreaterThanOne)",
                          kTimeSlicingConfig, replicas, kSharedResource),
              fmt::format("{} GPUs are shared by up to {} pods each; the replay found {} memory overflows and a worst "
                          "collision share of {:.2f}%",
                          shared_gpus, replicas, plan.replay.memory_overflows, 100 * plan.replay.max_collision_share));
  const std::set<std::string> foreign = b.ForeignConfigs(kDevicePluginConfigLabel, kTimeSlicingConfig, "");
  if (foreign.empty()) {
    b.ClusterPolicy("devicePlugin", kDevicePluginConfigMap, "", false);
  } else {
    b.Note(fmt::format(
        "nodes already use device plugin configs ({}) from the ConfigMap the ClusterPolicy names: add the {} key of "
        "configmap-{}-{}.yaml to that ConfigMap instead (no ClusterPolicy patch is written)",
        Join({foreign.begin(), foreign.end()}), kTimeSlicingConfig, kGpuOperatorNamespace, kDevicePluginConfigMap));
  }
  std::size_t gpus = 0;
  for (const KubeNode* n : chosen) {
    gpus += static_cast<std::size_t>(n->gpu_count);
    b.NodeLabel(
        *n, kDevicePluginConfigLabel, kTimeSlicingConfig,
        fmt::format("hosts shared {} GPUs ({} of {})", plan.target.id, std::min(gpus, shared_gpus), shared_gpus));
  }

  for (const auto& [key, s] : b.SharedWorkloads()) {
    const KubeContainer* c = b.GpuContainer(*s.example, key);
    if (c == nullptr) continue;
    Patch& patch = b.PatchOf(key);
    patch.yaml["spec"]["template"]["spec"]["nodeSelector"][kDevicePluginConfigLabel] = kTimeSlicingConfig;
    YAML::Node container;
    container["name"] = c->name;
    for (const char* side : {"limits", "requests"}) {
      container["resources"][side][kGpuResource] = YAML::Node(YAML::NodeType::Null);
      container["resources"][side][kSharedResource] = "1";
    }
    Builder::AddContainer(patch, *c, container);
    patch.what.push_back(fmt::format("container {}: {}: 1 on time-sliced GPUs ({}={})", c->name, kSharedResource,
                                     kDevicePluginConfigLabel, kTimeSlicingConfig));
    b.SelectTargetModel(patch);
    std::vector<std::string> names;
    for (std::size_t p : s.pods) names.push_back(plan.pod_names[p]);
    patch.why.push_back(fmt::format(
        "{} of its pods {} a GPU in the plan ({}); the largest summed peak of those GPUs is {:.0f} of {:.0f} MiB",
        names.size(), names.size() == 1 ? "shares" : "share", Join(names), s.peak_mib, plan.capacity_mib));
  }
  b.Note(
      "time-slicing enforces NO memory limit: the scheduler, not gpufit, picks which pods share each GPU, and one pod "
      "can take a GPU's whole memory and kill its neighbours. The replay checked the plan's groups only. Use "
      "--sharing hami or dra-mps (enforced caps) or mig (hardware isolation) where that matters");
  return {};
}

}  // namespace

extern const SharingBackend kTimeSlicing;
const SharingBackend kTimeSlicing = {
    .name = "time-slicing",
    .memory_enforced_by = "nothing",
    .compute_enforced_by = "nothing (CUDA time slices)",
    .needs = "NVIDIA GPU Operator (device plugin with a config ConfigMap)",
    .caps_memory = false,
    .emit = EmitTimeSlicing,
    .read_cap = [](const std::string&) -> std::optional<double> { return std::nullopt; },
};

}  // namespace gpufit::manifests
