// HAMi (Project-HAMi/HAMi, CNCF): GPU sharing with hard limits enforced inside the
// container by HAMi-core (CUDA API interception). Per container, in resources.limits
// (HAMi README, "Hard Limit on Device Memory" and the vGPU examples):
//   nvidia.com/gpu: 1          one vGPU
//   nvidia.com/gpumem: <MiB>   device memory the container may allocate
//   nvidia.com/gpucores: <%>   share of the GPU's streaming multiprocessors
// and spec.schedulerName: hami-scheduler, the scheduler the HAMi Helm chart installs (its
// webhook sets it too). HAMi's scheduler reserves gpumem and gpucores on a device: the
// gpumem of the pods on one GPU never add up to more than its memory, and their gpucores to
// more than 100.
//
// gpufit writes each pod's planned cap (Plan::memory_cap_mib, the envelope) as gpumem. The
// GPU's 100% is split among the pods of each planned GPU in proportion to their p99 duty
// cycle (at least 1% each); a workload on several GPUs takes its smallest share, so every
// GPU's gpucores stay within 100. A pod then runs at most its share while the GPU is shared
// (HAMi's default core-utilisation policy), which the collision rule of the plan allowed
// for 1% of samples: its p99 need is what the split protects.
#include <fmt/format.h>

#include <cmath>

#include "gpufit/plan/manifests/builder.h"
#include "gpufit/plan/manifests/caps.h"
#include "gpufit/plan/manifests/sharing_backend.h"

namespace gpufit::manifests {
namespace {

constexpr const char* kGpuMem = "nvidia.com/gpumem";
constexpr const char* kGpuCores = "nvidia.com/gpucores";
constexpr const char* kHamiScheduler = "hami-scheduler";

Result<void> EmitHami(Builder& b) {
  const Plan& plan = b.plan();
  const std::vector<int> cores = ComputeShares(plan);
  for (const auto& [key, s] : b.SharedWorkloads()) {
    const KubeContainer* c = b.GpuContainer(*s.example, key);
    if (c == nullptr) continue;
    const auto cap = static_cast<std::int64_t>(plan.memory_cap_mib.at(s.pods.front()));
    int share = 100;
    for (std::size_t p : WorkloadPods(b, key)) share = std::min(share, cores[p]);
    Patch& patch = b.PatchOf(key);
    patch.yaml["spec"]["template"]["spec"]["schedulerName"] = kHamiScheduler;
    YAML::Node container;
    container["name"] = c->name;
    container["resources"]["limits"][kGpuResource] = "1";
    container["resources"]["limits"][kGpuMem] = std::to_string(cap);
    container["resources"]["limits"][kGpuCores] = std::to_string(share);
    Builder::AddContainer(patch, *c, container);
    patch.what.push_back(fmt::format("container {}: {} {} MiB, {} {}% (HAMi, {})", c->name, kGpuMem, cap, kGpuCores,
                                     share, kHamiScheduler));
    b.SelectTargetModel(patch);
    patch.why.push_back(CapReason(plan, s.pods));
  }
  return {};
}

std::optional<double> ReadHamiCap(const std::string& yaml) {
  const YAML::Node spec = YAML::Load(yaml)["spec"]["template"]["spec"];
  for (const char* list : {"containers", "initContainers"})
    for (const YAML::Node& c : spec[list])
      if (c["resources"]["limits"][kGpuMem]) return c["resources"]["limits"][kGpuMem].as<double>();
  return std::nullopt;
}

}  // namespace

extern const SharingBackend kHami;
const SharingBackend kHami = {
    .name = "hami",
    .memory_enforced_by = "HAMi-core in the container: allocations past nvidia.com/gpumem fail (hard limit)",
    .compute_enforced_by = "HAMi-core: nvidia.com/gpucores percent of the SMs while shared",
    .needs = "HAMi (Helm chart: hami-scheduler, device plugin, webhook) instead of the NVIDIA device plugin",
    .caps_memory = true,
    .emit = EmitHami,
    .read_cap = ReadHamiCap,
};

}  // namespace gpufit::manifests
