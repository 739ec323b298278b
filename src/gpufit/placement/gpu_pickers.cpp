#include "gpufit/placement/gpu_pickers.h"

#include <cassert>

namespace gpufit {

GpuSet FirstIdleGpus(const Workload& w, const NodeState& n) {
  GpuSet set = 0;
  int need = w.gpu_count;
  for (int g = 0; g < n.gpu_count && need > 0; ++g) {
    if (n.gpu_free[static_cast<std::size_t>(g)].value == 1000) {
      set |= GpuSet{1} << g;
      --need;
    }
  }
  assert(need == 0);
  return set;
}

GpuSet BestFitGpu::Pick(const Workload& w, const NodeState& n, Rng&) {
  if (!w.SharesGpu()) return FirstIdleGpus(w, n);
  int best = -1;
  for (int g = 0; g < n.gpu_count; ++g) {
    const GpuMilli free = n.gpu_free[static_cast<std::size_t>(g)];
    if (free >= w.gpu_per_gpu && (best < 0 || free < n.gpu_free[static_cast<std::size_t>(best)])) best = g;
  }
  assert(best >= 0);
  return GpuSet{1} << best;
}

GpuSet RandomGpu::Pick(const Workload& w, const NodeState& n, Rng& rng) {
  if (!w.SharesGpu()) return FirstIdleGpus(w, n);
  int chosen = -1;
  std::uint64_t fitting = 0;
  for (int g = 0; g < n.gpu_count; ++g) {
    if (n.gpu_free[static_cast<std::size_t>(g)] >= w.gpu_per_gpu && rng.Below(++fitting) == 0) chosen = g;
  }
  assert(chosen >= 0);
  return GpuSet{1} << chosen;
}

}  // namespace gpufit
