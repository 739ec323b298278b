#include "gpufit/optimize/rightsize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>

namespace gpufit {

RightSizing RightSize(const PodProfile& profile, const GpuModel& current, const GpuCatalog& catalog, double headroom,
                      double margin_mib, const RefuseModel& refuse) {
  assert(headroom >= 0 && margin_mib >= 0);
  RightSizing out;
  out.current_gpu = current.id;
  // The epsilon keeps 20000 x 1.1 (22000.000000000004 in binary) at 22000.
  const double peak = profile.fb_used_mib.peak;
  out.required = MiB{static_cast<std::int64_t>(std::ceil(std::max(peak * (1.0 + headroom), peak + margin_mib) - 1e-6))};
  out.usd_per_month_current = current.on_demand_per_gpu_hour.value * kHoursPerMonth;
  out.usd_per_month_recommended = out.usd_per_month_current;
  const GpuModel* pick = nullptr;
  std::string refused;                          // the cheapest model that fits but was refused, and why
  std::string all_refused;                      // every model that fits and was refused, and why
  for (const GpuModel& m : catalog.models()) {  // ordered by price, then memory, then id
    if (m.memory < out.required) continue;
    if (refuse) {
      if (std::string why = refuse(m); !why.empty()) {
        if (refused.empty()) refused = fmt::format("; not {}: {}", m.id, why);
        all_refused += fmt::format("{}not {}: {}", all_refused.empty() ? "" : "; ", m.id, why);
        continue;
      }
    }
    pick = &m;
    break;
  }
  const std::string need =
      peak * headroom >= margin_mib
          ? fmt::format("peak {:.0f} MiB x {:.2f} headroom = {} MiB", peak, 1.0 + headroom, out.required.value)
          : fmt::format("peak {:.0f} MiB + {:.0f} MiB learned margin = {} MiB", peak, margin_mib, out.required.value);
  if (pick == nullptr) {
    // Models with the memory may all have been refused (slower for a latency-bound pod, not
    // in --gpus, ...): then memory is not the reason, and each refusal is named.
    out.reason = all_refused.empty()
                     ? fmt::format("{}; no catalog GPU has that much memory: keep {}", need, current.id)
                     : fmt::format("{}; every catalog GPU with that much memory refuses the pod ({}): keep {}", need,
                                   all_refused, current.id);
    return out;
  }
  out.recommended_gpu = pick->id;
  out.usd_per_month_recommended = pick->on_demand_per_gpu_hour.value * kHoursPerMonth;
  if (pick->id == current.id) {
    out.reason = fmt::format("{}; {} ({} MiB) is already the cheapest that fits{}", need, current.id,
                             current.memory.value, refused);
    return out;
  }
  out.reason = fmt::format("{}; {} ({} MiB, {:.2f} USD/GPU-h) is the cheapest that fits{}", need, pick->id,
                           pick->memory.value, pick->on_demand_per_gpu_hour.value, refused);
  return out;
}

bool GapNearPeak(const PodSeries& pod, double step_s) {
  if (pod.fb_gaps.empty() || pod.fb_used_mib.empty()) return false;
  const auto peak =
      static_cast<double>(std::max_element(pod.fb_used_mib.begin(), pod.fb_used_mib.end()) - pod.fb_used_mib.begin());
  const double reach = std::max(1.0, std::ceil(600.0 / step_s));
  return std::any_of(pod.fb_gaps.begin(), pod.fb_gaps.end(),
                     [&](std::uint32_t k) { return std::abs(static_cast<double>(k) - peak) <= reach; });
}

void HoldShrink(RightSizing& r, const GpuModel& current, const GpuCatalog& catalog, const ShrinkEvidence& evidence) {
  if (!r.recommended_gpu || *r.recommended_gpu == current.id) return;
  const Result<GpuModel> pick = catalog.Find(*r.recommended_gpu);
  if (!pick || pick->memory >= current.memory) return;
  std::string why;
  if (evidence.window_hours < evidence.min_window_hours) {
    why =
        fmt::format("the telemetry covers {:.1f} h, less than the {:g} h needed to shrink memory (--min-window-hours)",
                    evidence.window_hours, evidence.min_window_hours);
  } else if (evidence.gap_near_peak) {
    why = "memory samples are missing within 10 minutes of its peak (a larger value may have gone unseen)";
  } else {
    return;
  }
  r.reason = fmt::format("kept on {}: {} would fit ({} MiB) but {}", current.id, pick->id, r.required.value, why);
  r.recommended_gpu = current.id;
  r.usd_per_month_recommended = r.usd_per_month_current;
}

}  // namespace gpufit
