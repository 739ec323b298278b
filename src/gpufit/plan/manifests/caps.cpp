#include "gpufit/plan/manifests/caps.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "gpufit/plan/workload_keys.h"

namespace gpufit::manifests {

std::vector<std::size_t> WorkloadPods(Builder& b, const WorkloadKey& key) {
  std::vector<std::size_t> out;
  if (b.in().pods == nullptr) return out;
  for (std::size_t i = 0; i < b.plan().pod_names.size(); ++i) {
    const KubePod* pod = FindKubePod(*b.in().pods, b.plan().pod_names[i]);
    if (pod != nullptr && WorkloadKey{pod->namespace_name, pod->owner.kind, pod->owner.name} == key) out.push_back(i);
  }
  return out;
}

std::string CapReason(const Plan& plan, const std::vector<std::size_t>& pods) {
  const std::size_t p = pods.front();
  double largest_sum = 0;
  for (std::size_t q : pods) {
    if (!plan.group_of[q]) continue;
    double sum = 0;
    for (std::size_t r : plan.replay.gpus[*plan.group_of[q]].pods) sum += plan.memory_cap_mib[r];
    largest_sum = std::max(largest_sum, sum);
  }
  return fmt::format(
      "cap {:.0f} MiB = max over its replicas of max(peak x {:.2f}, peak + {:.0f} MiB learned margin); "
      "the caps of the planned GPUs it shares add up to at most {:.0f} of {:.0f} MiB",
      plan.memory_cap_mib[p], 1 + plan.options.headroom, plan.memory_margin_mib, largest_sum, plan.capacity_mib);
}

Result<CapCheck> CheckMemoryCaps(const Plan& plan, const SharingBackend& backend, const std::vector<KubePod>& pods,
                                 const std::vector<ManifestFile>& files) {
  if (plan.memory_cap_mib.size() != plan.pod_names.size())
    return FailedPrecondition("the plan has no memory caps (plan it with --sharing {})", backend.name);
  // Each workload patch read once: file name -> (file, the cap it sets).
  std::map<std::string, std::pair<const ManifestFile*, std::optional<double>>> by_name;
  for (const ManifestFile& f : files)
    if (f.name.starts_with("workload-")) by_name[f.name] = {&f, backend.read_cap(f.yaml)};
  CapCheck check;
  for (const GpuReplay& gpu : plan.replay.gpus) {
    ++check.gpus;
    double sum = 0;
    for (std::size_t p : gpu.pods) {
      const double cap = plan.memory_cap_mib[p];
      const KubePod* pod = FindKubePod(pods, plan.pod_names[p]);
      const ManifestFile* file = nullptr;
      std::optional<double> emitted;
      if (pod != nullptr) {
        const auto it = by_name.find(
            fmt::format("workload-{}-{}-{}.yaml", pod->namespace_name, Lower(pod->owner.kind), pod->owner.name));
        if (it != by_name.end()) std::tie(file, emitted) = it->second;
      }
      if (emitted) {
        if (*emitted != cap)
          return FailedPrecondition("{}: pod {} runs under a {} cap of {:.0f} MiB, the plan's is {:.0f} MiB",
                                    file->name, plan.pod_names[p], backend.name, *emitted, cap);
        ++check.capped_pods;
      } else if (gpu.pods.size() > 1) {
        ++check.uncapped_pods;
      }
      sum += emitted.value_or(cap);
    }
    if (sum > plan.capacity_mib)
      return FailedPrecondition("GPU {} of the plan: its pods' caps add up to {:.0f} MiB, over its {:.0f} MiB",
                                check.gpus - 1, sum, plan.capacity_mib);
    check.largest_sum_mib = std::max(check.largest_sum_mib, sum);
  }
  return check;
}

}  // namespace gpufit::manifests
