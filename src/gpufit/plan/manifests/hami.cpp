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
// gpufit writes each pod's planned cap (Plan::memory_cap_mib, the envelope) as gpumem.
//
// Compute is left uncapped unless asked (--compute-caps): a hard gpucores cap binds all the
// time, also when the GPU's other pods are idle, so a cap at a pod's usual share starves it
// at every burst (an interactive pod capped at its 2% p99 would get 2% of the SMs all day).
// Asked, each workload's gpucores is its pods' largest p99 duty cycle x (1 + the plan's
// headroom), rounded up, at most 100: never below what the pod used at its 99th percentile.
// HAMi's scheduler keeps a GPU's gpucores within 100, so where the caps of one planned GPU
// add up to more, the workloads on it are left uncapped, with a note naming the GPU.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "gpufit/plan/manifests/builder.h"
#include "gpufit/plan/manifests/caps.h"
#include "gpufit/plan/manifests/sharing_backend.h"

namespace gpufit::manifests {
namespace {

constexpr const char* kGpuMem = "nvidia.com/gpumem";
constexpr const char* kGpuCores = "nvidia.com/gpucores";
constexpr const char* kHamiScheduler = "hami-scheduler";

// Per workload, its gpucores with --compute-caps (absent: uncapped).
std::map<WorkloadKey, int> ComputeCaps(Builder& b, const std::map<WorkloadKey, Builder::Shared>& shared) {
  const Plan& plan = b.plan();
  std::map<WorkloadKey, int> cores;
  std::map<std::size_t, WorkloadKey> key_of;  // pod -> its patched workload
  for (const auto& [key, s] : shared) {
    double p99 = 0;
    for (std::size_t p : WorkloadPods(b, key)) {
      p99 = std::max(p99, plan.profiles[p].gpu_util_pct.p99);
      key_of[p] = key;
    }
    cores[key] = std::clamp(static_cast<int>(std::ceil(p99 * (1 + plan.options.headroom) - 1e-9)), 1, 100);
  }
  std::set<WorkloadKey> refused;
  for (std::size_t g = 0; g < plan.replay.gpus.size(); ++g) {
    int sum = 0;
    std::set<WorkloadKey> on;
    for (std::size_t p : plan.replay.gpus[g].pods)
      if (const auto k = key_of.find(p); k != key_of.end()) {
        sum += cores[k->second];
        on.insert(k->second);
      }
    if (sum <= 100) continue;
    refused.insert(on.begin(), on.end());
    b.Note(
        fmt::format("--compute-caps: planned GPU {} would need {}% of its compute (p99 x (1 + {:g}) per pod), more "
                    "than the 100% HAMi hands out; its workloads get no nvidia.com/gpucores",
                    g, sum, plan.options.headroom));
  }
  for (const WorkloadKey& k : refused) cores.erase(k);
  return cores;
}

Result<void> EmitHami(Builder& b) {
  const Plan& plan = b.plan();
  const std::map<WorkloadKey, Builder::Shared> shared = b.SharedWorkloads();
  const std::map<WorkloadKey, int> cores = b.in().compute_caps ? ComputeCaps(b, shared) : std::map<WorkloadKey, int>{};
  if (!b.in().compute_caps && !shared.empty())
    b.Note(
        "hami: compute is not capped (no nvidia.com/gpucores): a hard cap binds even while the GPU's other pods "
        "idle; --compute-caps caps each workload at its p99 duty cycle plus the headroom");
  for (const auto& [key, s] : shared) {
    const KubeContainer* c = b.GpuContainer(*s.example, key);
    if (c == nullptr) continue;
    const auto cap = static_cast<std::int64_t>(plan.memory_cap_mib.at(s.pods.front()));
    Patch& patch = b.PatchOf(key);
    patch.yaml["spec"]["template"]["spec"]["schedulerName"] = kHamiScheduler;
    YAML::Node container;
    container["name"] = c->name;
    container["resources"]["limits"][kGpuResource] = "1";
    container["resources"]["limits"][kGpuMem] = std::to_string(cap);
    std::string compute = "compute uncapped";
    if (const auto it = cores.find(key); it != cores.end()) {
      container["resources"]["limits"][kGpuCores] = std::to_string(it->second);
      compute = fmt::format("{} {}%", kGpuCores, it->second);
    }
    Builder::AddContainer(patch, *c, container);
    patch.what.push_back(
        fmt::format("container {}: {} {} MiB, {} (HAMi, {})", c->name, kGpuMem, cap, compute, kHamiScheduler));
    b.SelectTargetModel(patch);
    patch.why.push_back(CapReason(plan, s.pods));
  }
  return {};
}

std::optional<double> ReadHamiCap(const std::string& yaml) {
  const YAML::Node spec = YAML::Load(yaml)["spec"]["template"]["spec"];
  for (const char* list : {"containers", "initContainers"})
    for (const YAML::Node& c : spec[list])
      if (const YAML::Node cap = c["resources"]["limits"][kGpuMem]; cap && cap.IsScalar()) return cap.as<double>();
  return std::nullopt;
}

}  // namespace

extern const SharingBackend kHami;
const SharingBackend kHami = {
    .name = "hami",
    .memory_enforced_by = "HAMi-core in the container: allocations past nvidia.com/gpumem fail (hard limit)",
    .compute_enforced_by = "nothing by default; with --compute-caps HAMi-core: nvidia.com/gpucores percent of the SMs",
    .needs = "HAMi (Helm chart: hami-scheduler, device plugin, webhook) instead of the NVIDIA device plugin",
    .caps_memory = true,
    .emit = EmitHami,
    .read_cap = ReadHamiCap,
};

}  // namespace gpufit::manifests
