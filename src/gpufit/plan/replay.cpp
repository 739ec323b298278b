#include "gpufit/plan/replay.h"

#include <fmt/format.h>

#include <algorithm>

#include "gpufit/optimize/colocate.h"

namespace gpufit {

Replay ReplayColocation(const Telemetry& telemetry, const std::vector<std::vector<std::size_t>>& groups,
                        double capacity_mib, double max_collision_share) {
  Replay out;
  std::vector<double> mem(telemetry.samples), util(telemetry.samples);
  std::vector<bool> occupied(telemetry.samples);
  for (const std::vector<std::size_t>& group : groups) {
    GpuReplay g;
    g.pods = group;
    std::sort(g.pods.begin(), g.pods.end());
    std::fill(mem.begin(), mem.end(), 0.0);
    std::fill(util.begin(), util.end(), 0.0);
    std::fill(occupied.begin(), occupied.end(), false);
    for (std::size_t p : g.pods) {
      const PodSeries& s = telemetry.pods[p];
      for (std::size_t t = s.first; t <= s.last; ++t) {
        mem[t] += s.fb_used_mib[t];
        util[t] += s.gpu_util_pct[t];
        occupied[t] = true;
      }
    }
    double util_sum = 0;
    for (std::size_t t = 0; t < telemetry.samples; ++t) {
      g.peak_mib = std::max(g.peak_mib, mem[t]);
      g.memory_overflows += mem[t] > capacity_mib;
      g.collisions += util[t] > 100.0;
      g.occupied_samples += occupied[t];
      util_sum += std::min(100.0, util[t]);
    }
    const auto n = static_cast<double>(std::max<std::size_t>(1, telemetry.samples));
    g.mean_util_pct = util_sum / n;
    g.collision_share = static_cast<double>(g.collisions) / n;
    out.memory_overflows += g.memory_overflows;
    out.max_collision_share = std::max(out.max_collision_share, g.collision_share);
    out.gpus.push_back(std::move(g));
  }
  std::int64_t worst = 0;
  for (const GpuReplay& g : out.gpus) worst = std::max(worst, g.collisions);
  out.safe = out.memory_overflows == 0 && worst <= CollisionLimit(telemetry.samples, max_collision_share);
  return out;
}

CapReplay ReplayCaps(const Telemetry& telemetry, const std::vector<std::optional<double>>& cap_mib) {
  CapReplay out;
  for (std::size_t p = 0; p < telemetry.pods.size() && p < cap_mib.size(); ++p) {
    if (!cap_mib[p]) continue;
    const PodSeries& s = telemetry.pods[p];
    std::int64_t over = 0;
    double peak = 0;
    for (std::size_t t = s.first; t <= s.last && t < s.fb_used_mib.size(); ++t) {
      over += s.fb_used_mib[t] > *cap_mib[p];
      peak = std::max(peak, static_cast<double>(s.fb_used_mib[t]));
    }
    if (over == 0) continue;
    out.samples_over += over;
    out.worst_over_mib = std::max(out.worst_over_mib, peak - *cap_mib[p]);
    out.pods.push_back(fmt::format("{}: peak {:.0f} MiB > cap {:.0f} MiB", s.pod, peak, *cap_mib[p]));
  }
  return out;
}

}  // namespace gpufit
