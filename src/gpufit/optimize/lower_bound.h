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
//    any clique of the conflict graph is a bound; we grow cliques greedily from every pod
//    (GreedyClique). Both parts of its cost are bounded (LowerBoundLimits): building the
//    graph tests pods^2/2 pairs over their samples, so it is built only when
//    pods^2/2 x samples <= 2e8 (else the clique is 0); the search stops after a fixed
//    amount of work, so on large dense graphs it grows cliques from the highest-degree
//    pods only (clique_seeds_tried < clique_pods) and may find a smaller clique. Any clique
//    is a valid bound, so a stopped search gives a weaker bound, never a wrong one.
//  * lp_column_generation: the set-covering LP relaxation by column generation, filled by
//    the caller from lp_bound.h (0 when not computed): it sees the whole window at once, so
//    pods whose peaks fall at different times count as they pack.
// The bound is the largest of these. Pods whose own peak exceeds C are left out (they
// cannot use this GPU model at all).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "gpufit/model/telemetry.h"

namespace gpufit {

struct GpuLowerBound {
  std::size_t per_sample_l2 = 0;
  std::size_t conflict_clique = 0;       // 0 when the conflict graph was not built
  bool lp_computed = false;              // the caller ran the LP (plan: pods <= 1000 and the graph built)
  std::size_t lp_column_generation = 0;  // ceil of lp_value less 1e-6; 0 when not computed
  double lp_value = 0;                   // the LP bound, fractional GPUs (lp_bound.h)
  bool lp_converged = false;             // lp_value is the LP optimum (else a weaker Farley bound)
  double lp_seconds = 0;                 // time the LP took (benchmarks only; not written out)
  std::size_t clique_pods = 0;           // pods of the conflict graph
  bool clique_graph_built = false;       // pods^2/2 x samples within LowerBoundLimits::max_pair_samples
  // Seeds the greedy search grew cliques from, or clique_pods when every seed was tried
  // or could not beat the clique found (its degree + 1 <= the clique).
  std::size_t clique_seeds_tried = 0;
  // The clique is the greedy search's full result (no work limit cut it short).
  bool clique_complete() const { return clique_graph_built && clique_seeds_tried == clique_pods; }
  // "complete", "partial" (the work limit stopped the search: a weaker bound) or "skipped"
  // (the graph was too large to build: no clique bound).
  // "converged" (lp_value is the LP optimum), "stopped" (a limit stopped it: a weaker,
  // still valid bound) or "skipped".
  std::string_view lp_search() const { return !lp_computed ? "skipped" : lp_converged ? "converged" : "stopped"; }
  std::string_view clique_search() const {
    return !clique_graph_built ? "skipped" : clique_complete() ? "complete" : "partial";
  }
  std::size_t gpus() const {
    const std::size_t combinatorial = per_sample_l2 > conflict_clique ? per_sample_l2 : conflict_clique;
    return combinatorial > lp_column_generation ? combinatorial : lp_column_generation;
  }
};

// L2 of Martello & Toth for item sizes (each in (0, capacity]) and one capacity. With more
// than 64 items of size <= capacity/2 it tries 64 of them, spread by size, as the
// parameter k (each k gives a valid bound; the full L2 may be larger).
std::size_t MartelloTothL2(std::vector<double> sizes, double capacity);

// The work limits of the conflict clique. Defaults: about a second each on one core.
struct LowerBoundLimits {
  double max_pair_samples = 2e8;             // build the graph when pods^2/2 x samples <= this
  std::int64_t clique_work = 1'000'000'000;  // 64-bit word operations of the clique search
};

struct CliqueSearch {
  std::size_t best = 0;         // size of the largest clique found (a lower bound on the maximum)
  std::size_t seeds = 0;        // vertices
  std::size_t seeds_tried = 0;  // as GpuLowerBound::clique_seeds_tried
  std::int64_t work = 0;        // word operations spent
};

// Greedy cliques, one per seed vertex: vertices visited by degree, descending (ties by
// index), each joining when adjacent to every member so far; the largest is kept.
// Candidate sets are bit rows, so one join costs vertices/64 word operations; a seed
// stops once its members plus its candidates cannot beat the best clique, and the search
// stops once no seed's degree + 1 can beat it (same result as trying every seed). Seeds
// are tried until `work_limit` word operations are spent (the first seed always runs: at
// most vertices^2/64 operations). `adjacent` is symmetric with
// a false diagonal.
CliqueSearch GreedyClique(const std::vector<std::vector<bool>>& adjacent, std::int64_t work_limit);

// Whether two pods cannot share one GPU: their summed memory exceeds capacity_mib at some
// sample of their common life, or their summed duty cycle exceeds 100% at more than
// collision_limit samples.
bool PodsConflict(const PodSeries& a, const PodSeries& b, double capacity_mib, std::int64_t collision_limit);

// `pods`: indices into telemetry.pods to bound; capacity_mib = GPU memory - reserve.
GpuLowerBound LowerBound(const Telemetry& telemetry, const std::vector<std::size_t>& pods, double capacity_mib,
                         std::int64_t collision_limit, const LowerBoundLimits& limits = {});

}  // namespace gpufit
