// Co-location: pack pods onto as few GPUs of one model as the real telemetry allows.
//
// The rule a GPU must satisfy, replaying the samples one by one (t = 0 .. samples-1):
//  * memory: sum over its pods of fb_used_mib[t] <= gpu_memory - reserve, at every t;
//  * compute: sum over its pods of gpu_util_pct[t] > 100 at no more than
//    floor(max_collision_share * samples) samples (a "collision": the pods' duty cycles
//    would have had to wait for each other). The share is of the whole replay window.
// and, for plans meant to hold on later data (optimize/memory_envelope.h):
//  * memory margin: the sums above stay under gpu_memory - reserve - memory_margin
//    - (k - 1) x per_pod_margin, k the pods running at that sample;
//  * collisions if always active: P(sum of the pods' active duty cycles > 100%) <=
//    max_collision_share, pods independent (when collisions_if_active).
// Pods whose busy hours do not overlap (day vs night), or that are mostly idle, thereby
// share a GPU: time-multiplexed and memory-based sharing.
//
// Method (bin packing with time-series items; the problem is NP-hard):
//  1. first-fit decreasing by peak memory (the baseline, reported), each pod tried on the
//     last 128 GPUs opened (so its cost is pods x 128 checks at most);
//  2. bin elimination by penalty local search: empty the lightest GPU, spread its pods,
//     then move pods between GPUs (tabu search, min-conflicts) to drive the penalty
//     (overflowing samples + excess collision samples) to zero; on success one GPU fewer.
//     Deterministic for a seed: randomness comes from a seeded generator, effort from a
//     budget counted in sample evaluations, never from the wall clock.
// Every returned group satisfies the rule (checked again by plan/replay.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpufit/core/units.h"
#include "gpufit/model/telemetry.h"

namespace gpufit {

struct ColocateOptions {
  MiB gpu_memory;                     // the target GPU model's memory
  MiB reserve{0};                     // kept free on every GPU (driver, fragmentation)
  double memory_margin_mib = 0;       // also kept free: room for peaks not seen yet (>= 0)
  // Also kept free per pod beyond the first (>= 0): a GPU whose k pods run at a sample keeps
  // memory_margin + (k - 1) x per_pod_margin free there (GroupMargin, memory_envelope.h).
  double per_pod_margin_mib = 0;
  bool collisions_if_active = false;  // also bound collisions as if every pod were always active
  double max_collision_share = 0.01;  // in [0, 1]
  std::uint64_t seed = 1;
  // Local-search effort in sample evaluations (one pod at one sample against one GPU).
  // About 1e9 per second on one core; 0 keeps the first-fit-decreasing packing.
  std::int64_t search_budget = 500'000'000;  // per thread
  unsigned threads = 2;
  // Stop searching once this few GPUs are used (a known lower bound: no fewer is possible).
  std::size_t stop_at_gpus = 0;  // independent searches run in parallel (seeds seed, seed+1, ...)
  // Pods left out of the packing (neither in a group nor too big), e.g. CPU-starved pods that
  // keep their own GPU; indices into Telemetry::pods.
  std::vector<std::size_t> excluded{};
  // Replicas apart: per pod (index into Telemetry::pods), its replica set (e.g. its
  // Deployment), or -1; no two pods of one set share a GPU, so one GPU's failure takes down
  // at most one replica of a service. Empty: no such rule.
  std::vector<int> apart{};
  // At most this many pods on one GPU (0: no limit), e.g. HAMi's deviceSplitCount: its
  // scheduler places no more pods on a GPU than it registered shares for.
  std::size_t max_pods_per_gpu = 0;
};

struct Colocation {
  // Pod indices (into Telemetry::pods) sharing each GPU; each group sorted, groups ordered
  // by their first pod.
  std::vector<std::vector<std::size_t>> groups;
  // Pods whose own peak memory exceeds gpu_memory - reserve - memory_margin: they cannot use
  // the target.
  std::vector<std::size_t> too_big;
  std::size_t first_fit_decreasing_gpus = 0;  // groups the baseline needed
  std::int64_t collision_limit_samples = 0;   // floor(max_collision_share * samples)
  std::int64_t evaluations = 0;               // sample evaluations spent by the search
};

// Precondition: options.max_collision_share in [0, 1], gpu_memory > reserve + memory_margin, reserve >= 0.
Colocation Colocate(const Telemetry& telemetry, const ColocateOptions& options);

// The collision limit for a replay of `samples` samples.
std::int64_t CollisionLimit(std::size_t samples, double max_collision_share);

}  // namespace gpufit
