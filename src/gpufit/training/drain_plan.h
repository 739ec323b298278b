// Maintenance drain planning: given nodes to drain at a time, for each training job on them
// when to stop (right after a periodic checkpoint, after an emergency checkpoint, or now,
// losing the work since its last checkpoint), where to restore (a placement that fits
// now), in what order, with each PodDisruptionBudget respected.
//
// Rules:
//  * A job that finishes by the drain is left alone.
//  * Candidate stops: the end of each periodic checkpoint within [now, drain] (nothing
//    lost); for kTransparent jobs an emergency checkpoint (delta) at any time that ends by
//    the drain (nothing lost); stopping at once or when another job of its budget is back
//    (losing what it computed since its last checkpoint: less than one interval).
//  * Down time of a stop at s: [s, s + (emergency ? delta : 0) + R]. Jobs of one budget
//    (same disruption_group) may overlap at most max_unavailable at a time.
//  * Per job, the feasible candidate that wastes the least GPU time (lost work, or the
//    emergency write) wins, then the earliest (its reserved target idles less). Budgets are resolved jobs-in-order
//    (greedy, not optimal); a job no candidate fits is reported and stops at the drain.
//  * Targets: nodes not drained with that many free GPUs now (after earlier jobs' targets
//    are reserved), of its GPU model; the same capacity type first, then best fit; biggest
//    jobs first. A job no node fits now is reported and waits for capacity.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/training_job.h"
#include "gpufit/training/checkpoint_schedule.h"

namespace gpufit {

// A running job: its node (index) and its timeline there.
struct JobPlacement {
  std::size_t node = 0;
  CheckpointSchedule schedule;
};

enum class DrainAction { kFinishesFirst, kAfterCheckpoint, kEmergencyCheckpoint, kStopAndLose };
const char* DrainActionName(DrainAction a);  // "finishes-first", "after-checkpoint", ...

struct DrainStep {
  std::size_t job = 0;
  DrainAction action = DrainAction::kFinishesFirst;
  Seconds stop_at{0};                 // compute stops (an emergency write follows)
  Seconds resume_at{0};               // restored on the target, if it has room then
  std::optional<std::size_t> target;  // node index; none: waits for capacity
  Seconds lost_work{0};
  int order = 0;  // 1-based, by stop time
};

struct DrainPlan {
  Seconds now{0}, drain_at{0};
  std::vector<DrainStep> steps;       // jobs on the drained nodes, by stop time
  std::vector<std::string> problems;  // budgets that cannot be met, jobs with no room
  double lost_gpu_hours = 0;          // work thrown away x GPUs
  double downtime_gpu_hours = 0;      // (resume - stop) x GPUs
};

// running[j]: where job j runs now (none: not running). Errors: kInvalidArgument for a
// drain before now, an unknown node name, or a placement on an unknown node index.
Result<DrainPlan> PlanDrain(const std::vector<TrainingNode>& nodes, const std::vector<TrainingJob>& jobs,
                            const std::vector<std::optional<JobPlacement>>& running,
                            const std::set<std::string>& drain_nodes, Seconds now, Seconds drain_at);

}  // namespace gpufit
