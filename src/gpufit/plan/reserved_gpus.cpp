#include "gpufit/plan/reserved_gpus.h"

#include <algorithm>
#include <numeric>

#include "gpufit/plan/plan.h"

namespace gpufit {

double CapacityForPods(double capacity_mib, const ReservedGpuMemory& reserved) {
  return std::max(0.0, capacity_mib - static_cast<double>(reserved.peak.value));
}

std::vector<ReservedGpu> PlaceOnReservedGpus(const Plan& plan, const std::vector<ReservedGpuMemory>& reserved) {
  std::vector<ReservedGpu> out;
  for (const ReservedGpuMemory& r : reserved) out.push_back({r, CapacityForPods(plan.capacity_mib, r), std::nullopt});
  if (plan.current.id != plan.target.id) return out;
  const std::size_t groups = plan.replay.gpus.size();
  std::vector<double> need(groups, 0);
  for (std::size_t g = 0; g < groups; ++g) {
    const GpuReplay& gpu = plan.replay.gpus[g];
    if (plan.options.memory_caps) {
      for (std::size_t p : gpu.pods) need[g] += plan.memory_cap_mib[p];
    } else {
      need[g] = gpu.peak_mib + plan.group_margin.For(plan.pods_at_once(g));
    }
  }
  std::vector<std::size_t> order(out.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return out[a].capacity_mib < out[b].capacity_mib; });
  std::vector<bool> taken(groups, false);
  for (std::size_t r : order) {
    std::optional<std::size_t> best;
    for (std::size_t g = 0; g < groups; ++g)
      if (!taken[g] && need[g] <= out[r].capacity_mib && (!best || need[g] > need[*best])) best = g;
    if (!best) continue;
    taken[*best] = true;
    out[r].group = best;
  }
  return out;
}

}  // namespace gpufit
