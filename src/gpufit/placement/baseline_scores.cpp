#include <algorithm>
#include <array>

#include "gpufit/placement/scores.h"

namespace gpufit {
namespace {
int Clamp(double score) { return static_cast<int>(std::clamp(score, 0.0, 100.0)); }
}  // namespace

std::int64_t BestFitScore::Score(const Workload& w, const NodeState& n) {
  const double cpu_left = static_cast<double>(n.cpu_free().value - w.cpu.value);
  const double gpu_left = static_cast<double>(n.gpu_free_total().value - w.TotalGpu().value);
  const double waste = 0.5 * cpu_left / kMaxSpecMilliCpu + 0.5 * gpu_left / kMaxSpecGpuMilli;
  return Clamp((1.0 - waste) * 100.0);
}

std::int64_t DotProductScore::Score(const Workload& w, const NodeState& n) {
  const double dot = (static_cast<double>(n.cpu_free().value) / kMaxSpecMilliCpu) *
                         (static_cast<double>(w.cpu.value) / kMaxSpecMilliCpu) +
                     (static_cast<double>(n.gpu_free_total().value) / kMaxSpecGpuMilli) *
                         (static_cast<double>(w.TotalGpu().value) / kMaxSpecGpuMilli);
  return Clamp(100.0 * (1.0 - dot / 2.0));
}

std::int64_t GpuPackingScore::Score(const Workload& w, const NodeState& n) {
  if (w.gpu_count == 0) return 0;
  const int idle = n.idle_gpus();
  if (idle == n.gpu_count) return std::max(33 - idle, idle);
  // GPUs by free milli-GPU, least free first (stable), the first that fit are taken.
  std::array<int, kMaxGpusPerNode> order{};
  for (int g = 0; g < n.gpu_count; ++g) order[static_cast<std::size_t>(g)] = g;
  std::stable_sort(order.begin(), order.begin() + n.gpu_count, [&](int a, int b) {
    return n.gpu_free[static_cast<std::size_t>(a)] < n.gpu_free[static_cast<std::size_t>(b)];
  });
  int need = w.gpu_count;
  int idle_taken = 0;
  std::int64_t free_pct_sum = 0;
  for (int k = 0; k < n.gpu_count && need > 0; ++k) {
    const std::int64_t free = n.gpu_free[static_cast<std::size_t>(order[static_cast<std::size_t>(k)])].value;
    if (free >= w.gpu_per_gpu.value) {
      --need;
      idle_taken += free == 1000;
      free_pct_sum += free * 100 / 1000;
    }
  }
  if (need > 0) return 0;
  if (idle_taken > 0) return std::max(50 - idle_taken, 33);
  return static_cast<int>(std::max<std::int64_t>(100 - free_pct_sum / 10, 50));
}

std::int64_t GpuClusteringScore::Score(const Workload& w, const NodeState& n) {
  if (w.gpu_count == 0) return 0;
  const std::size_t kind = w.SharesGpu() ? 0 : static_cast<std::size_t>(w.gpu_count);
  int kinds = 0;
  for (int c : n.pods_by_gpu_kind) kinds += c > 0;
  const std::int64_t used_part = 25 * (8000 - n.gpu_free_total().value) / 8000;
  int band = 0;
  if (n.pods_by_gpu_kind[kind] > 0)
    band = kinds == 1 ? 75 : 50;
  else if (kinds == 0)
    band = 25;
  return static_cast<int>(used_part) + band;
}

}  // namespace gpufit
