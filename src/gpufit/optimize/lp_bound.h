// A lower bound on the GPUs of any co-location (colocate.h rule) from the linear
// relaxation of the set-covering formulation, by column generation:
//
//   min sum_S lambda_S   s.t.  sum_{S containing i} lambda_S >= 1 for every pod i,  lambda >= 0,
//
// S ranging over every group of pods that may share one GPU. Every co-location is a
// 0/1 solution, so the LP optimum bounds it from below (Gilmore & Gomory, "A linear
// programming approach to the cutting-stock problem", Oper. Res. 9, 1961). Groups are priced out with
// the master's duals pi (COIN-OR CLP); the pricing problem max_S pi(S) runs over a
// relaxation of the rule (every sample's memory sum <= capacity, and no two pods that
// conflict as pairs, lower_bound.h: memory overflow or collisions beyond the limit), which
// only enlarges the set of groups, so the bound stays valid. It is found greedily and,
// when greedy finds nothing, exactly with COIN-OR CBC (clique rows for the conflicts, sample
// rows added as violated). docs/colocation.md states the argument and the measured figures.
//
// Valid at every step, not only at convergence (Farley, "A note on bounding a class of
// linear programming problems, including cutting stock problems", Oper. Res. 38, 1990):
// for any pi >= 0 and any U >= max_S pi(S) (CBC's proven bound on the pricing problem),
// pi / max(1, U) is feasible for the dual of the full LP, so
//   LP >= sum_i pi_i / max(1, U).
// `lp_value` is the best such value seen; `gpus` its ceiling (less 1e-6 for rounding).
// Effort is capped by iterations and CBC nodes and by a CPU-time guard (max_seconds).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpufit/model/telemetry.h"

namespace gpufit {

struct LpBoundOptions {
  int max_iterations = 400;      // master solves
  int max_pricing_nodes = 5000;  // CBC branch-and-bound nodes per exact pricing
  int max_sample_rows = 200;     // memory rows the exact pricing may add
  // Guard in CPU seconds of the calling thread (the last third is kept for a final exact
  // pricing): past it the bound is weaker, never wrong,
  // and may differ from run to run. GenTD26 at 80 GiB converges
  // well within it (bench/plan_bench.cpp).
  double max_seconds = 3.0;
};

struct LpBound {
  double lp_value = 0;     // GPUs, fractional: a lower bound on the LP optimum
  std::size_t gpus = 0;    // ceil(lp_value - 1e-6)
  bool converged = false;  // exact pricing proved no group prices out: lp_value is the LP optimum
  double seconds = 0;      // CPU seconds spent (for benchmarks; not in any output)
};

// `pods`: indices into telemetry.pods (each pod's own peak <= capacity_mib); `groups`: known
// co-locations of those pods (indices into telemetry.pods) to start from, e.g. colocate.h's
// answer (groups that break the relaxed rule are skipped); collision_limit as colocate.h's.
LpBound ColumnGenerationBound(const Telemetry& telemetry, const std::vector<std::size_t>& pods, double capacity_mib,
                              std::int64_t collision_limit, const std::vector<std::vector<std::size_t>>& groups,
                              const LpBoundOptions& options = {});

}  // namespace gpufit
