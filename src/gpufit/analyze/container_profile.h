// Usage profile of one container (model/telemetry.h ContainerSeries): CPU cores, CFS
// throttling and memory working set over the samples that have data, with its requests
// and limits. Percentiles are nearest-rank (analyze/profile.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpufit/analyze/profile.h"
#include "gpufit/core/units.h"
#include "gpufit/model/telemetry.h"

namespace gpufit {

struct ContainerProfile {
  std::string pod, container, image;
  std::size_t cpu_samples = 0, memory_samples = 0;  // samples with data
  Percentiles cpu_cores;                            // all 0 without samples
  Percentiles cpu_throttled_ratio;                  // 0-1
  Percentiles memory_working_set_mib;
  std::optional<MilliCpu> cpu_request, cpu_limit;
  std::optional<MiB> memory_request, memory_limit;
};

ContainerProfile ProfileContainer(const ContainerSeries& c);
std::vector<ContainerProfile> ProfileContainers(const Telemetry& telemetry);

}  // namespace gpufit
