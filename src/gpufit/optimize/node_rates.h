// What a core and a GiB of memory cost on a node, per hour, so that requests on different
// nodes compare in dollars.
//
// A node's hourly price is split over its GPUs, cores and GiB in proportion to reference
// rates: OpenCost's defaults (configs/default.json, "based on GCP us-central1"): CPU
// 0.031611 USD per core-hour, RAM 0.004237 USD per GiB-hour, GPU 0.95 USD per GPU-hour.
// With price P, g GPUs, c cores, m GiB: scale = P / (0.95 g + 0.031611 c + 0.004237 m);
// a core costs 0.031611 x scale, a GiB 0.004237 x scale. A GPU node's price is its GPUs'
// catalog on-demand price (the catalog's per-GPU price is the instance price / GPUs), so a
// core on an H100 node costs about 2.5x a core on a CPU node: requests wasted there rank first.
// A node without a known price (no GPU, or a GPU the catalog lacks) costs the reference rates.
#pragma once

#include <string>

namespace gpufit {

inline constexpr double kOpenCostCpuUsdPerCoreHour = 0.031611;
inline constexpr double kOpenCostRamUsdPerGibHour = 0.004237;
inline constexpr double kOpenCostGpuUsdPerHour = 0.95;

struct NodeRates {
  std::string node;  // "" when the node is not known
  bool gpu_node = false;
  double usd_per_core_hour = kOpenCostCpuUsdPerCoreHour;
  double usd_per_gib_hour = kOpenCostRamUsdPerGibHour;
  std::string basis;  // how the rates were obtained, in words
};

// The split above. Preconditions: price >= 0, gpus >= 0, cores > 0, gib > 0.
NodeRates SplitNodePrice(double usd_per_hour, int gpus, double cores, double gib);

}  // namespace gpufit
