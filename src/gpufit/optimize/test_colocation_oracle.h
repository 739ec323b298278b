// For tests only: the fewest GPUs of any co-location of a few pods, by trying every set
// partition, under colocate.h's rule (memory at every sample, collisions at most `limit`
// samples) checked sample by sample: an oracle for the lower bounds and the packer.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "gpufit/model/telemetry.h"

namespace gpufit::testing {

// The rule of colocate.h for one group, checked sample by sample (the oracle's own code).
inline bool GroupFits(const Telemetry& t, const std::vector<std::size_t>& group, double capacity, std::int64_t limit) {
  std::int64_t collisions = 0;
  for (std::size_t s = 0; s < t.samples; ++s) {
    double mem = 0, util = 0;
    for (std::size_t p : group) mem += t.pods[p].fb_used_mib[s], util += t.pods[p].gpu_util_pct[s];
    if (mem > capacity) return false;
    collisions += util > 100.0;
  }
  return collisions <= limit;
}

// Fewest GPUs of any co-location: every set partition of the pods (restricted growth strings).
inline std::size_t OptimalGpus(const Telemetry& t, double capacity, std::int64_t limit) {
  const std::size_t n = t.pods.size();
  std::size_t best = n;
  std::vector<std::vector<std::size_t>> groups;
  std::function<void(std::size_t)> assign = [&](std::size_t p) {
    if (groups.size() >= best) return;
    if (p == n) {
      best = groups.size();
      return;
    }
    for (std::size_t g = 0; g <= groups.size(); ++g) {
      if (g == groups.size()) groups.emplace_back();
      groups[g].push_back(p);
      if (GroupFits(t, groups[g], capacity, limit)) assign(p + 1);
      groups[g].pop_back();
      if (groups[g].empty()) groups.pop_back();
    }
  };
  assign(0);
  return best;
}

}  // namespace gpufit::testing
