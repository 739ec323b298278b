// Defragmentation by mobility: a pending job fits on no node, though enough GPUs are free
// in total; find the fewest ordered migrations (each a checkpoint and a restore elsewhere)
// after which one node has room for it, or the answer that none exist.
//
// Search: iterative-deepening A* (Korf 1985) over placements. A move takes one running job
// that can checkpoint (not kNone) to another node of its GPU model with room for it at that
// moment. Heuristic (admissible): over the nodes that could host the pending job, the fewest
// of its movable jobs whose GPUs cover the shortfall; every solution must move at least
// that many off the node that ends up hosting. So the first solution found has the fewest
// moves. Among equal counts the moves of cheaper jobs are tried first.
//
// Cost of a move: gpus x (checkpoint_write + restore) GPU-hours (an emergency checkpoint,
// then the restore; an application-only job can instead move right after its next periodic
// checkpoint and pay only the restore).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/training_job.h"

namespace gpufit {

struct DefragMove {
  std::size_t job = 0;
  std::size_t from = 0, to = 0;  // node indices
};

struct DefragOptions {
  int max_moves = 4;                      // deepest search
  std::int64_t max_expansions = 1000000;  // search budget: states visited (bounds the run time)
};

struct DefragResult {
  enum class Outcome { kFitsNow, kMoves, kImpossible, kNoneWithinLimit, kBudgetExhausted } outcome = Outcome::kFitsNow;
  std::vector<DefragMove> moves;      // in order
  std::optional<std::size_t> target;  // node that then hosts the pending job
  double cost_gpu_hours = 0;
  std::int64_t expansions = 0;
  std::string reason;  // for kImpossible, kNoneWithinLimit, kBudgetExhausted
};

// placement[j]: node index of running job j. Errors: kInvalidArgument for sizes that do
// not match, a placement on an unknown node, or a node over its GPU count.
Result<DefragResult> PlanDefragmentation(const std::vector<TrainingNode>& nodes, const std::vector<TrainingJob>& jobs,
                                         const std::vector<std::size_t>& placement, const TrainingJob& pending,
                                         const DefragOptions& options = {});

}  // namespace gpufit
