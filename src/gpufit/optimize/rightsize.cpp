#include "gpufit/optimize/rightsize.h"

#include <fmt/format.h>

#include <cassert>
#include <cmath>

namespace gpufit {

RightSizing RightSize(const PodProfile& profile, const GpuModel& current, const GpuCatalog& catalog, double headroom) {
  assert(headroom >= 0);
  RightSizing out;
  out.current_gpu = current.id;
  // The epsilon keeps 20000 x 1.1 (22000.000000000004 in binary) at 22000.
  out.required = MiB{static_cast<std::int64_t>(std::ceil(profile.fb_used_mib.peak * (1.0 + headroom) - 1e-6))};
  out.usd_per_month_current = current.on_demand_per_gpu_hour.value * kHoursPerMonth;
  out.usd_per_month_recommended = out.usd_per_month_current;
  const GpuModel* pick = nullptr;
  for (const GpuModel& m : catalog.models()) {  // ordered by price, then memory, then id
    if (m.memory >= out.required) {
      pick = &m;
      break;
    }
  }
  const std::string need = fmt::format("peak {:.0f} MiB x {:.2f} headroom = {} MiB", profile.fb_used_mib.peak,
                                       1.0 + headroom, out.required.value);
  if (pick == nullptr) {
    out.reason = fmt::format("{}; no catalog GPU has that much memory: keep {}", need, current.id);
    return out;
  }
  out.recommended_gpu = pick->id;
  out.usd_per_month_recommended = pick->on_demand_per_gpu_hour.value * kHoursPerMonth;
  if (pick->id == current.id) {
    out.reason =
        fmt::format("{}; {} ({} MiB) is already the cheapest that fits", need, current.id, current.memory.value);
    return out;
  }
  out.reason = fmt::format("{}; {} ({} MiB, {:.2f} USD/GPU-h) is the cheapest that fits", need, pick->id,
                           pick->memory.value, pick->on_demand_per_gpu_hour.value);
  if (pick->relative_bf16 && current.relative_bf16 && *pick->relative_bf16 < *current.relative_bf16 &&
      profile.gpu_util_pct.p95 > 50) {
    out.reason += fmt::format("; p95 duty cycle {:.0f}% on a slower GPU may raise latency", profile.gpu_util_pct.p95);
  }
  return out;
}

}  // namespace gpufit
