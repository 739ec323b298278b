#include "gpufit/optimize/cpu_starvation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gpufit/analyze/profile.h"

namespace gpufit {
namespace {

// Containers of a pod series: same "namespace/pod", whether the series is one GPU of it
// ("ns/pod[1]") or a later life ("ns/pod@2").
bool BelongsTo(const ContainerSeries& c, const std::string& pod) { return PodKeyOf(pod) == c.pod; }

}  // namespace

bool HasContainerCpu(const Telemetry& telemetry) {
  for (const ContainerSeries& c : telemetry.containers) {
    if (std::none_of(c.cpu_cores.begin(), c.cpu_cores.end(), [](float v) { return std::isfinite(v); })) continue;
    for (const PodSeries& p : telemetry.pods)
      if (BelongsTo(c, p.pod)) return true;
  }
  return false;
}

std::vector<CpuStarvation> DetectCpuStarvation(const Telemetry& telemetry, const StarvationOptions& options) {
  std::vector<CpuStarvation> out;
  for (std::size_t i = 0; i < telemetry.pods.size(); ++i) {
    const PodSeries& pod = telemetry.pods[i];
    std::vector<const ContainerSeries*> containers;
    for (const ContainerSeries& c : telemetry.containers) {
      if (BelongsTo(c, pod.pod)) containers.push_back(&c);
    }
    if (containers.empty()) continue;
    const bool sm = !pod.sm_active_pct.empty();
    const std::vector<float>& activity = sm ? pod.sm_active_pct : pod.gpu_util_pct;
    double limit = 0;
    bool every_limited = true;
    for (const ContainerSeries* c : containers) {
      if (c->cpu_limit) {
        limit += static_cast<double>(c->cpu_limit->value) / 1000.0;
      } else {
        every_limited = false;
      }
    }
    if (!every_limited) limit = 0;

    CpuStarvation s;
    s.pod = i;
    s.pod_name = pod.pod;
    s.activity_metric = sm ? kDcgmSmActive : kDcgmGpuUtil;
    s.cpu_limit_cores = limit;
    std::vector<float> used, throttled, act, per_core;
    std::vector<std::size_t> starved_at;
    std::vector<double> cpu_at;  // per observed sample
    double activity_sum = 0, peak_used = 0;
    for (std::size_t t = pod.first; t <= pod.last && t < activity.size(); ++t) {
      const float a = activity[t];
      if (!std::isfinite(a)) continue;
      double cpu = 0, theta = 0;
      bool any = false;
      for (const ContainerSeries* c : containers) {
        if (t < c->cpu_cores.size() && std::isfinite(c->cpu_cores[t])) {
          cpu += c->cpu_cores[t];
          any = true;
        }
        if (t < c->cpu_throttled_ratio.size() && std::isfinite(c->cpu_throttled_ratio[t]))
          theta = std::max(theta, static_cast<double>(c->cpu_throttled_ratio[t]));
      }
      if (!any) continue;
      ++s.observed_samples;
      activity_sum += a;
      peak_used = std::max(peak_used, cpu);
      const bool pressure = (limit > 0 && cpu >= options.at_limit_ratio * limit) || theta >= options.throttled_ratio;
      if (!pressure || a >= options.low_activity_pct) continue;
      ++s.starved_samples;
      starved_at.push_back(t);
      cpu_at.push_back(cpu);
      used.push_back(static_cast<float>(cpu));
      throttled.push_back(static_cast<float>(theta));
      act.push_back(a);
      if (cpu > 0.01) per_core.push_back(static_cast<float>(a / cpu));
    }
    if (s.starved_samples == 0 || s.starved_share() < options.min_starved_share || per_core.empty()) continue;
    s.cpu_used_p50_starved = NearestRank(used, 50);
    s.throttled_p50_starved = NearestRank(throttled, 50);
    s.activity_p50_starved = NearestRank(act, 50);
    s.activity_per_core = NearestRank(per_core, 50);
    s.activity_mean_pct_now = activity_sum / static_cast<double>(s.observed_samples);
    const double granted = limit > 0 ? limit : peak_used;
    if (s.activity_per_core <= 0) {
      // The GPU did nothing while CPU-bound: the CPU cannot be read off it. Grant twice as much.
      s.cores_needed = 2 * granted;
    } else {
      s.cores_needed = options.target_activity_pct / s.activity_per_core;
    }
    double cores = std::ceil(std::max(s.cores_needed, granted) * 10.0 - 1e-4) / 10.0;
    if (cores > options.max_cores_per_gpu) {
      cores = std::max(granted, options.max_cores_per_gpu);
      s.capped = true;
    }
    s.recommended_cores = cores;
    double expected = activity_sum;
    for (std::size_t k = 0; k < starved_at.size(); ++k) {
      const double a = activity[starved_at[k]];
      const double scaled = cpu_at[k] > 0.01 ? a * cores / cpu_at[k] : a;
      expected += std::min(std::max(a, scaled), std::max(a, options.target_activity_pct)) - a;
    }
    s.activity_mean_pct_expected = expected / static_cast<double>(s.observed_samples);
    s.evidence = fmt::format(
        "{} of {} samples ({:.0f}%) had {} < {:g}% while CPU was at >= {:.0f}% of its {} or CFS-throttled >= {:.0f}% "
        "(median there: {:.2f} cores used, {:.0f}% throttled, {:.1f}% GPU activity); GPU activity per core {:.2f}%, so "
        "{:.2f} cores reach {:g}%{}",
        s.starved_samples, s.observed_samples, 100 * s.starved_share(), s.activity_metric, options.low_activity_pct,
        100 * options.at_limit_ratio, limit > 0 ? fmt::format("{:g}-core limit", limit) : std::string("(no) limit"),
        100 * options.throttled_ratio, s.cpu_used_p50_starved, 100 * s.throttled_p50_starved, s.activity_p50_starved,
        s.activity_per_core, s.cores_needed, options.target_activity_pct,
        s.capped ? fmt::format(" (capped at {:g} cores per GPU)", options.max_cores_per_gpu) : std::string());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace gpufit
