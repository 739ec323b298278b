#include "gpufit/analyze/container_profile.h"

#include <cmath>
#include <utility>

namespace gpufit {
namespace {

// Percentiles of the finite values (samples with data); their count through `n`.
Percentiles SummarizeFinite(const std::vector<float>& series, std::size_t& n) {
  std::vector<float> v = FiniteValues(series);
  n = v.size();
  return Summarize(std::move(v));
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
  out.cpu_cores = SummarizeFinite(c.cpu_cores, out.cpu_samples);
  out.cpu_throttled_ratio = SummarizeFinite(c.cpu_throttled_ratio, throttled_samples);
  out.memory_working_set_mib = SummarizeFinite(c.memory_working_set_mib, out.memory_samples);
  return out;
}

std::vector<ContainerProfile> ProfileContainers(const Telemetry& telemetry) {
  std::vector<ContainerProfile> out;
  out.reserve(telemetry.containers.size());
  for (const ContainerSeries& c : telemetry.containers) out.push_back(ProfileContainer(c));
  return out;
}

}  // namespace gpufit
