#include "gpufit/plan/workload_profiles.h"

#include <algorithm>
#include <cmath>

#include "gpufit/analyze/profile.h"
#include "gpufit/optimize/memory_envelope.h"
#include "gpufit/plan/workload_keys.h"

namespace gpufit {
namespace {

constexpr double kDayS = 86400, kHourS = 3600;

// One workload's envelope over its observed samples: per sample, the largest value among its
// replicas that have a real sample there (alive and not a gap the grid filled).
struct Envelope {
  std::vector<char> observed;
  std::vector<float> fb_mib, util_pct;
};

Envelope EnvelopeOf(const Telemetry& t, const std::vector<std::size_t>& pods) {
  Envelope e{.observed = std::vector<char>(t.samples, 0),
             .fb_mib = std::vector<float>(t.samples, 0),
             .util_pct = std::vector<float>(t.samples, 0)};
  std::vector<char> gap(t.samples, 0);
  for (std::size_t i : pods) {
    const PodSeries& p = t.pods[i];
    for (std::uint32_t g : p.fb_gaps)
      if (g < t.samples) gap[g] = 1;
    for (std::size_t s = p.first; s <= p.last && s < t.samples; ++s) {
      if (!gap[s]) {
        e.observed[s] = 1;
        e.fb_mib[s] = std::max(e.fb_mib[s], p.fb_used_mib[s]);
        e.util_pct[s] = std::max(e.util_pct[s], p.gpu_util_pct[s]);
      }
    }
    for (std::uint32_t g : p.fb_gaps)
      if (g < t.samples) gap[g] = 0;
  }
  return e;
}

// A profile fitted on the observed samples in [from, to) of one envelope.
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

Fit FitRange(const Telemetry& t, const Envelope& env, std::size_t from, std::size_t to, double q_pct) {
  Fit f;
  std::vector<float> all;
  std::array<std::vector<float>, 24> hours;
  for (std::size_t s = from; s < to; ++s) {
    if (!env.observed[s]) continue;
    ++f.samples;
    f.peak_mib = std::max(f.peak_mib, static_cast<double>(env.fb_mib[s]));
    all.push_back(env.util_pct[s]);
    hours[static_cast<std::size_t>(HourOf(t, s))].push_back(env.util_pct[s]);
  }
  f.duty_pct = NearestRank(all, q_pct);
  std::vector<std::size_t> counts;
  for (const auto& h : hours)
    if (!h.empty()) counts.push_back(h.size());
  if (counts.empty()) return f;
  std::nth_element(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(counts.size() / 2), counts.end());
  const std::size_t median = counts[counts.size() / 2];
  for (std::size_t h = 0; h < 24; ++h) {
    const double covered_s = static_cast<double>(hours[h].size()) * t.step_s;
    if (!hours[h].empty() && 2 * hours[h].size() >= median && 2 * covered_s >= kHourS)
      f.by_hour[h] = NearestRank(hours[h], q_pct);
  }
  return f;
}

}  // namespace

WorkloadProfiles ProfileWorkloads(const Telemetry& telemetry, const std::vector<std::string>& keys,
                                  double duty_quantile, double margin_mib, std::optional<double> memory_risk) {
  const std::size_t n = telemetry.samples, m = n / 2;
  double earlier_margin = 0;
  if (memory_risk) {
    std::vector<std::size_t> all(telemetry.pods.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    earlier_margin = SurpriseMargin(PooledPeakSurprises(telemetry, all, m), *memory_risk);
  }
  WorkloadProfiles out{.duty_quantile = duty_quantile,
                       .margin_mib = margin_mib,
                       .earlier_margin_mib = earlier_margin,
                       .workloads = {},
                       .unmeasured = {}};
  const double q_pct = 100.0 * duty_quantile;
  for (const WorkloadReplicas& w : GroupByWorkload(telemetry, keys)) {
    const Envelope env = EnvelopeOf(telemetry, w.pods);
    const Fit whole = FitRange(telemetry, env, 0, n, q_pct);
    // A workload at 0 MiB throughout was not measured (a CUDA context alone holds hundreds of
    // MiB): no profile, so serve places it by its declared requests.
    if (!(whole.peak_mib > 0)) {
      out.unmeasured.push_back(w.workload);
      continue;
    }
    WorkloadProfile p{.workload = w.workload,
                      .replicas = w.replicas,
                      .samples = whole.samples,
                      .memory_peak_mib = whole.peak_mib,
                      .duty_pct = whole.duty_pct,
                      .duty_pct_by_hour = whole.by_hour};
    const Fit earlier = FitRange(telemetry, env, 0, m, q_pct);
    if (earlier.samples > 0) {
      for (std::size_t s = m; s < n; ++s) {
        if (!env.observed[s]) continue;
        ++p.later_samples;
        if (env.fb_mib[s] > earlier.peak_mib + earlier_margin) ++p.later_memory_over;
        const std::optional<double>& hour = earlier.by_hour[static_cast<std::size_t>(HourOf(telemetry, s))];
        if (env.util_pct[s] > hour.value_or(earlier.duty_pct)) ++p.later_duty_over;
      }
    }
    out.workloads.push_back(std::move(p));
  }
  return out;
}

}  // namespace gpufit
