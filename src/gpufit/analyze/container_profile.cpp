#include "gpufit/analyze/container_profile.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gpufit {
namespace {

// Percentiles of the finite values; the count through `n`.
Percentiles Summarize(const std::vector<float>& series, std::size_t& n) {
  std::vector<float> v;
  v.reserve(series.size());
  for (float x : series)
    if (std::isfinite(x)) v.push_back(x);
  n = v.size();
  Percentiles p;
  if (v.empty()) return p;
  p.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  p.peak = *std::max_element(v.begin(), v.end());
  p.p99 = NearestRank(v, 99);
  p.p95 = NearestRank(v, 95);
  p.p50 = NearestRank(v, 50);
  return p;
}

}  // namespace

ContainerProfile ProfileContainer(const ContainerSeries& c) {
  ContainerProfile out{.pod = c.pod,
                       .container = c.container,
                       .image = c.image,
                       .cpu_samples = 0,
                       .memory_samples = 0,
                       .cpu_cores = {},
                       .cpu_throttled_ratio = {},
                       .memory_working_set_mib = {},
                       .cpu_request = c.cpu_request,
                       .cpu_limit = c.cpu_limit,
                       .memory_request = c.memory_request,
                       .memory_limit = c.memory_limit};
  std::size_t throttled_samples = 0;
  out.cpu_cores = Summarize(c.cpu_cores, out.cpu_samples);
  out.cpu_throttled_ratio = Summarize(c.cpu_throttled_ratio, throttled_samples);
  out.memory_working_set_mib = Summarize(c.memory_working_set_mib, out.memory_samples);
  return out;
}

std::vector<ContainerProfile> ProfileContainers(const Telemetry& telemetry) {
  std::vector<ContainerProfile> out;
  out.reserve(telemetry.containers.size());
  for (const ContainerSeries& c : telemetry.containers) out.push_back(ProfileContainer(c));
  return out;
}

}  // namespace gpufit
