#include "gpufit/placement/filters.h"

namespace gpufit {

using Kind = Verdict::Kind;

Verdict CpuFits::Filter(const Workload& w, const NodeState& n) const {
  if (w.cpu <= n.cpu_free()) return {};
  return {w.cpu > n.cpu_capacity ? Kind::kNever : Kind::kNotNow, "insufficient cpu"};
}

Verdict MemoryFits::Filter(const Workload& w, const NodeState& n) const {
  if (w.memory <= n.memory_free()) return {};
  return {w.memory > n.memory_capacity ? Kind::kNever : Kind::kNotNow, "insufficient memory"};
}

Verdict GpuModelFits::Filter(const Workload& w, const NodeState& n) const {
  if (w.gpu_count == 0 || w.AcceptsModel(n.model)) return {};
  return {Kind::kNever, "GPU type not accepted (gpu_spec)"};
}

bool HasGpusFor(const Workload& w, const NodeState& n) {
  if (w.gpu_count == 0) return true;
  int enough = 0;
  for (int g = 0; g < n.gpu_count; ++g) enough += n.gpu_free[static_cast<std::size_t>(g)] >= w.gpu_per_gpu;
  return enough >= w.gpu_count;
}

Verdict GpuFits::Filter(const Workload& w, const NodeState& n) const {
  if (HasGpusFor(w, n)) return {};
  if (w.gpu_count > n.gpu_count) return {Kind::kNever, "too few GPUs on the node"};
  return {Kind::kNotNow, w.SharesGpu() ? "no GPU with enough free share" : "too few idle GPUs"};
}

}  // namespace gpufit
