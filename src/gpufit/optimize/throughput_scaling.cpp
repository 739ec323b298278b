#include "gpufit/optimize/throughput_scaling.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gpufit {

std::optional<double> SlowdownFactor(const GpuModel& from, const GpuModel& to) {
  if (from.id == to.id) return 1.0;
  const auto known = [](const std::optional<double>& v) { return v && *v > 0 && std::isfinite(*v); };
  if (!known(from.bf16_tflops) || !known(to.bf16_tflops) || !known(from.memory_bandwidth_gb_s) ||
      !known(to.memory_bandwidth_gb_s))
    return std::nullopt;
  const double f =
      std::max(*from.bf16_tflops / *to.bf16_tflops, *from.memory_bandwidth_gb_s / *to.memory_bandwidth_gb_s);
  return std::abs(f - 1) <= 0.01 ? 1.0 : f;
}

bool NeverActive(const PodSeries& pod) {
  for (std::size_t t = pod.first; t <= pod.last && t < pod.gpu_util_pct.size(); ++t)
    if (pod.gpu_util_pct[t] > 0) return false;
  return true;
}

Admission AdmitPod(const PodSeries& pod, const GpuModel& from, const GpuModel& to, bool latency_bound,
                   std::int64_t collision_limit) {
  if (from.id == to.id) return {.admitted = true, .factor = 1};
  const std::optional<double> factor = SlowdownFactor(from, to);
  if (NeverActive(pod)) return {.admitted = true, .factor = factor.value_or(1)};
  if (!factor)
    return {.admitted = false,
            .factor = 1,
            .reason = fmt::format("the catalog lacks the BF16 or bandwidth figure of {} or {}: its speed there is "
                                  "unknown",
                                  from.id, to.id)};
  if (latency_bound && *factor > 1)
    return {
        .admitted = false,
        .factor = *factor,
        .reason = fmt::format("{} is {:.2f}x slower than {} (BF16 and bandwidth): a serving pod's latency would grow",
                              to.id, *factor, from.id)};
  std::int64_t over = 0;
  float worst = 0;
  for (std::size_t t = pod.first; t <= pod.last && t < pod.gpu_util_pct.size(); ++t) {
    const float u = pod.gpu_util_pct[t];
    if (!(u > 0)) continue;
    worst = std::max(worst, u);
    over += static_cast<double>(u) * *factor > 100.0;
  }
  if (over > collision_limit)
    return {
        .admitted = false,
        .factor = *factor,
        .reason = fmt::format("duty up to {:.0f}% x {:.2f} (slower than {}) passes 100% at {} samples (allowed {}): "
                              "dearer per unit of work",
                              worst, *factor, from.id, over, collision_limit)};
  return {.admitted = true, .factor = *factor};
}

}  // namespace gpufit
