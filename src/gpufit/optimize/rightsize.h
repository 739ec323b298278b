// Memory-based right-sizing: the cheapest catalog GPU whose memory holds the pod's
// observed peak GPU memory times (1 + headroom).
//
// Cheapest = lowest on-demand USD per GPU-hour (catalog prices); ties go to less memory,
// then to the catalog id. Memory is the only criterion: compute throughput is not
// checked here (a pod whose duty cycle is high may run slower on a smaller GPU; the
// reason string says so when the recommended GPU has lower BF16 throughput).
#pragma once

#include <optional>
#include <string>

#include "gpufit/analyze/profile.h"
#include "gpufit/catalog/gpu_catalog.h"

namespace gpufit {

struct RightSizing {
  std::string current_gpu;                     // catalog id
  std::optional<std::string> recommended_gpu;  // nullopt: no catalog GPU is large enough
  MiB required;                                // ceil(peak x (1 + headroom))
  std::string reason;                          // for humans
  double usd_per_month_current = 0;            // on-demand, one GPU for a 730-hour month
  double usd_per_month_recommended = 0;        // equals current when nothing fits
};

// Precondition: headroom >= 0.
RightSizing RightSize(const PodProfile& profile, const GpuModel& current, const GpuCatalog& catalog, double headroom);

}  // namespace gpufit
