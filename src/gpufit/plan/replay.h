// Replay: checks a co-location against the telemetry, sample by sample, independently of
// how the packing was found. For each GPU it sums its pods' memory and duty cycle at
// every sample (in double precision, pods in ascending index order) and counts
//  * memory overflows: samples where summed fb_used_mib > capacity (GPU memory - reserve);
//  * collisions: samples where summed gpu_util_pct > 100.
// A plan is safe when no GPU overflows and every GPU collides at no more than
// CollisionLimit(samples, share) samples (optimize/colocate.h: floor(share x samples)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/model/telemetry.h"

namespace gpufit {

struct GpuReplay {
  std::vector<std::size_t> pods;  // indices into Telemetry::pods
  double peak_mib = 0;            // largest summed memory over the window
  double mean_util_pct = 0;       // mean of min(100, summed duty cycle) over the window
  std::int64_t memory_overflows = 0;
  std::int64_t collisions = 0;
  double collision_share = 0;        // collisions / samples
  std::size_t occupied_samples = 0;  // samples where at least one of its pods runs
};

struct Replay {
  std::vector<GpuReplay> gpus;
  std::int64_t memory_overflows = 0;  // summed over GPUs
  double max_collision_share = 0;     // worst GPU
  bool safe = false;                  // no overflow and every share <= allowed
};

Replay ReplayColocation(const Telemetry& telemetry, const std::vector<std::vector<std::size_t>>& groups,
                        double capacity_mib, double max_collision_share);

// Plans with memory caps (hami, kai, dra-mps): the pod runs under its own cap, so what
// breaks is a pod whose memory passes it (HAMi and MPS fail its allocations; KAI lets it
// starve its neighbours). Per pod with a cap (`cap_mib`, one per Telemetry::pods, nullopt =
// none), the samples of its life where fb_used_mib > cap.
struct CapReplay {
  std::int64_t samples_over = 0;  // summed over pods
  std::vector<std::string> pods;  // "pod: peak X MiB > cap Y MiB", those with any
  double worst_over_mib = 0;      // the largest peak - cap
};
CapReplay ReplayCaps(const Telemetry& telemetry, const std::vector<std::optional<double>>& cap_mib);

}  // namespace gpufit
