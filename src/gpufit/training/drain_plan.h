// Maintenance drain planning: given nodes to drain at a time, for each training job on them
// when to stop (right after a periodic checkpoint, after an emergency checkpoint, or now,
// losing the work since its last checkpoint), where to restore (a placement that fits
// now), in what order, with each PodDisruptionBudget respected.
//
// Rules:
//  * A job that finishes by the drain is left alone.
//  * Gangs (model/training_job.h): a job with a pod on a drained node stops whole, all its
//    pods together, and every pod loses the work since the last checkpoint: lost and down
//    GPU-hours count gpus x pods. Its pods on nodes not drained restart where they are;
//    those on drained nodes need a target each.
//  * Candidate stops: the end of each periodic checkpoint within [now, drain] (nothing
//    lost); for kTransparent jobs an emergency checkpoint (delta) at any time that ends by
//    the drain (nothing lost); stopping at once or when another job of its budget is back
//    (losing what it computed since its last checkpoint: less than one interval).
//  * Down time of a stop at s: [s, s + (emergency ? delta : 0) + R], for all its pods.
//  * Budgets (same disruption_group): an eviction is allowed while fewer than
//    max_unavailable of the budget's pods are down (the Eviction API's rule: disruptions
//    allowed = maxUnavailable - unavailable pods). A job needs one eviction (its first pod
//    evicted stops the gang; its controller recreates every pod off the cordoned nodes),
//    then counts all its pods as down until it is back.
//  * max_unavailable 0 allows no eviction: `kubectl drain` retries forever ("If you try to
//    drain a Node where an unevictable Pod is running, the drain never completes",
//    https://kubernetes.io/docs/tasks/run-application/configure-pdb/). Such a job is
//    planned, not refused: its least-waste stop (after a checkpoint when one fits) is made
//    by the job's owner, stopping all its pods together (suspending or deleting the job is
//    not an eviction), and a problem line says so plainly: relax the budget or the drain
//    waits. The step is marked budget_blocks_eviction.
//  * Per job, the feasible candidate that wastes the least GPU time (lost work, or the
//    emergency write) wins, then the earliest (its reserved target idles less). Budgets are resolved jobs-in-order
//    (greedy, not optimal); a job no candidate fits is reported and stops at the drain.
//  * Targets: nodes not drained with that many free GPUs now (after earlier jobs' targets
//    are reserved), of its GPU model; the same capacity type first, then best fit; biggest
//    jobs (all pods' GPUs) first. A job no node fits now (for any one of its pods) is
//    reported and waits for capacity.
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
  std::size_t node = 0;  // of its first pod
  CheckpointSchedule schedule;
  std::vector<std::size_t> other_pods{};  // a gang: the node of each of its other pods
};

enum class DrainAction { kFinishesFirst, kAfterCheckpoint, kEmergencyCheckpoint, kStopAndLose };
const char* DrainActionName(DrainAction a);  // "finishes-first", "after-checkpoint", ...

struct DrainStep {
  std::size_t job = 0;
  DrainAction action = DrainAction::kFinishesFirst;
  Seconds stop_at{0};                 // compute stops (an emergency write follows)
  Seconds resume_at{0};               // restored on the target, if it has room then
  std::optional<std::size_t> target;  // node index (a gang: of its first pod that moves); none: waits
  Seconds lost_work{0};
  int order = 0;  // 1-based, by stop time
  // The node of each pod after the restore (pods on nodes not drained stay), in the order
  // node, other_pods...; empty when it waits for capacity or finishes first.
  std::vector<std::size_t> pod_nodes{};
  bool budget_blocks_eviction = false;  // maxUnavailable 0: the owner stops it, or the drain waits
};

struct DrainPlan {
  Seconds now{0}, drain_at{0};
  std::vector<DrainStep> steps;       // jobs on the drained nodes, by stop time
  std::vector<std::string> problems;  // budgets that cannot be met, jobs with no room
  double lost_gpu_hours = 0;          // work thrown away x GPUs (of all pods of a gang)
  double downtime_gpu_hours = 0;      // (resume - stop) x GPUs
};

// running[j]: where job j runs now (none: not running). Errors: kInvalidArgument for a
// drain before now, an unknown node name, or a placement on an unknown node index.
Result<DrainPlan> PlanDrain(const std::vector<TrainingNode>& nodes, const std::vector<TrainingJob>& jobs,
                            const std::vector<std::optional<JobPlacement>>& running,
                            const std::set<std::string>& drain_nodes, Seconds now, Seconds drain_at);

}  // namespace gpufit
