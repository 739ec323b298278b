#include "gpufit/plan/workload_profiles.h"

#include <algorithm>
#include <cmath>

#include "gpufit/analyze/profile.h"
#include "gpufit/plan/workload_keys.h"

namespace gpufit {
namespace {

constexpr double kDayS = 86400, kHourS = 3600;

// A profile fitted on the running samples in [from, to) of one envelope.
struct Fit {
  std::size_t samples = 0;
  double peak_mib = 0, duty_pct = 0;
  std::array<std::optional<double>, 24> by_hour{};
};

int HourOf(const Telemetry& t, std::size_t sample) {
  const double s = t.start_s + static_cast<double>(sample) * t.step_s;
  const double in_day = s - kDayS * std::floor(s / kDayS);
  return std::clamp(static_cast<int>(in_day / kHourS), 0, 23);
}

Fit FitRange(const Telemetry& t, const PodSeries& env, const std::vector<char>& alive, std::size_t from, std::size_t to,
             double q_pct) {
  Fit f;
  std::vector<float> all;
  std::array<std::vector<float>, 24> hours;
  for (std::size_t s = from; s < to; ++s) {
    if (!alive[s]) continue;
    ++f.samples;
    f.peak_mib = std::max(f.peak_mib, static_cast<double>(env.fb_used_mib[s]));
    all.push_back(env.gpu_util_pct[s]);
    hours[static_cast<std::size_t>(HourOf(t, s))].push_back(env.gpu_util_pct[s]);
  }
  f.duty_pct = NearestRank(all, q_pct);
  std::vector<std::size_t> counts;
  for (const auto& h : hours)
    if (!h.empty()) counts.push_back(h.size());
  if (counts.empty()) return f;
  std::nth_element(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(counts.size() / 2), counts.end());
  const std::size_t median = counts[counts.size() / 2];
  for (std::size_t h = 0; h < 24; ++h)
    if (!hours[h].empty() && 2 * hours[h].size() >= median) f.by_hour[h] = NearestRank(hours[h], q_pct);
  return f;
}

}  // namespace

WorkloadProfiles ProfileWorkloads(const Telemetry& telemetry, const std::vector<std::string>& keys,
                                  double duty_quantile, double margin_mib) {
  WorkloadProfiles out{.duty_quantile = duty_quantile, .margin_mib = margin_mib, .workloads = {}};
  const double q_pct = 100.0 * duty_quantile;
  const std::size_t n = telemetry.samples, m = n / 2;
  for (const WorkloadReplicas& w : GroupByWorkload(telemetry, keys)) {
    const PodSeries env = SlotEnvelope(telemetry, w.pods, 1, w.workload);
    std::vector<char> alive(n, 0);
    for (std::size_t p : w.pods)
      for (std::size_t s = telemetry.pods[p].first; s <= telemetry.pods[p].last && s < n; ++s) alive[s] = 1;
    const Fit whole = FitRange(telemetry, env, alive, 0, n, q_pct);
    WorkloadProfile p{.workload = w.workload,
                      .replicas = w.replicas,
                      .samples = whole.samples,
                      .memory_peak_mib = whole.peak_mib,
                      .duty_pct = whole.duty_pct,
                      .duty_pct_by_hour = whole.by_hour};
    const Fit earlier = FitRange(telemetry, env, alive, 0, m, q_pct);
    if (earlier.samples > 0) {
      for (std::size_t s = m; s < n; ++s) {
        if (!alive[s]) continue;
        ++p.later_samples;
        if (env.fb_used_mib[s] > earlier.peak_mib + margin_mib) ++p.later_memory_over;
        const std::optional<double>& hour = earlier.by_hour[static_cast<std::size_t>(HourOf(telemetry, s))];
        if (env.gpu_util_pct[s] > hour.value_or(earlier.duty_pct)) ++p.later_duty_over;
      }
    }
    out.workloads.push_back(std::move(p));
  }
  return out;
}

}  // namespace gpufit
