#include "gpufit/optimize/node_rates.h"

#include <fmt/format.h>

namespace gpufit {

NodeRates SplitNodePrice(double usd_per_hour, int gpus, double cores, double gib) {
  const double reference =
      kOpenCostGpuUsdPerHour * gpus + kOpenCostCpuUsdPerCoreHour * cores + kOpenCostRamUsdPerGibHour * gib;
  const double scale = reference > 0 ? usd_per_hour / reference : 1;
  NodeRates r;
  r.gpu_node = gpus > 0;
  r.usd_per_core_hour = kOpenCostCpuUsdPerCoreHour * scale;
  r.usd_per_gib_hour = kOpenCostRamUsdPerGibHour * scale;
  r.basis = fmt::format("{:.4g} USD/h over {} GPUs, {:g} cores, {:.0f} GiB in OpenCost's default proportions",
                        usd_per_hour, gpus, cores, gib);
  return r;
}

}  // namespace gpufit
