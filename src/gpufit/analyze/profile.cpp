#include "gpufit/analyze/profile.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gpufit {

double NearestRank(std::vector<float>& values, double q) {
  if (values.empty()) return 0;
  const auto n = static_cast<double>(values.size());
  const auto rank = static_cast<std::size_t>(std::max(1.0, std::ceil(q / 100.0 * n)));
  const auto k = std::min(rank, values.size()) - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

std::vector<float> FiniteValues(const std::vector<float>& series) {
  std::vector<float> v;
  v.reserve(series.size());
  for (float x : series)
    if (std::isfinite(x)) v.push_back(x);
  return v;
}

Percentiles Summarize(std::vector<float> v) {
  Percentiles p;
  if (v.empty()) return p;
  p.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  p.peak = *std::max_element(v.begin(), v.end());
  p.p99 = NearestRank(v, 99);
  p.p95 = NearestRank(v, 95);
  p.p50 = NearestRank(v, 50);
  return p;
}

namespace {

// The samples of the pod's life [first, last].
std::vector<float> Life(const std::vector<float>& series, std::size_t first, std::size_t last) {
  return {series.begin() + static_cast<std::ptrdiff_t>(first), series.begin() + static_cast<std::ptrdiff_t>(last) + 1};
}

}  // namespace

PodProfile Profile(const PodSeries& pod, double step_s) {
  PodProfile out;
  out.pod = pod.pod;
  out.util_field = pod.util_field;
  out.device = pod.device;
  out.running_samples = pod.running_samples();
  out.filled_samples = pod.filled_samples;
  out.fb_used_mib = Summarize(Life(pod.fb_used_mib, pod.first, pod.last));
  out.gpu_util_pct = Summarize(Life(pod.gpu_util_pct, pod.first, pod.last));
  if (!pod.sm_active_pct.empty()) {
    std::vector<float> known;  // samples with a value inside the life
    for (std::size_t t = pod.first; t <= pod.last; ++t)
      if (!std::isnan(pod.sm_active_pct[t])) known.push_back(pod.sm_active_pct[t]);
    if (!known.empty()) out.sm_active_pct = Summarize(std::move(known));
  }
  std::size_t idle = 0;
  double busy = 0;
  for (std::size_t t = pod.first; t <= pod.last; ++t) {
    idle += pod.gpu_util_pct[t] == 0.0F;
    busy += pod.gpu_util_pct[t] / 100.0;
  }
  out.idle_share = static_cast<double>(idle) / static_cast<double>(out.running_samples);
  out.gpu_hours_allocated = static_cast<double>(out.running_samples) * step_s / 3600.0;
  out.gpu_hours_used = busy * step_s / 3600.0;
  return out;
}

std::vector<PodProfile> ProfileAll(const Telemetry& telemetry) {
  std::vector<PodProfile> out;
  out.reserve(telemetry.pods.size());
  for (const PodSeries& p : telemetry.pods) out.push_back(Profile(p, telemetry.step_s));
  return out;
}

}  // namespace gpufit
