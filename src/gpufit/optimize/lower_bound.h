// Lower bounds on the number of GPUs any co-location (colocate.h rule) needs, computed
// without looking at a packing.
//
//  * per_sample_l2: at every sample t the pods' memory at t must be packed into GPUs of
//    capacity C, so the bin-packing bound L2 of Martello & Toth ("Lower bounds and
//    reduction procedures for the bin packing problem", Discrete Appl. Math. 28, 1990)
//    applied to the sizes at t is a lower bound; we take the maximum over t. It dominates
//    the plain "total memory / C" bound.
//  * conflict_clique: two pods conflict when they cannot share one GPU (their summed
//    memory overflows C at some sample, or their summed duty cycle collides at more than
//    the allowed samples). Pods that pairwise conflict need distinct GPUs, so the size of
//    any clique of the conflict graph is a bound; we grow cliques greedily from every pod.
//    Computed when pods^2/2 x samples <= 2e8 (small clusters), else 0.
// The bound is the larger of the two. Pods whose own peak exceeds C are left out (they
// cannot use this GPU model at all).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpufit/model/telemetry.h"

namespace gpufit {

struct GpuLowerBound {
  std::size_t per_sample_l2 = 0;
  std::size_t conflict_clique = 0;
  std::size_t gpus() const { return per_sample_l2 > conflict_clique ? per_sample_l2 : conflict_clique; }
};

// L2 of Martello & Toth for item sizes (each in (0, capacity]) and one capacity. With more
// than 64 items of size <= capacity/2 it tries 64 of them, spread by size, as the
// parameter k (each k gives a valid bound; the full L2 may be larger).
std::size_t MartelloTothL2(std::vector<double> sizes, double capacity);

// `pods`: indices into telemetry.pods to bound; capacity_mib = GPU memory - reserve.
GpuLowerBound LowerBound(const Telemetry& telemetry, const std::vector<std::size_t>& pods, double capacity_mib,
                         std::int64_t collision_limit);

}  // namespace gpufit
