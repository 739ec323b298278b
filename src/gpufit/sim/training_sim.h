// The training-job simulator: whole-GPU jobs on spot and on-demand nodes, with spot
// reclaims (with notice), hardware failures, maintenance drains and planned migrations.
//
// Rules:
//  * A job runs on one node and takes gpu_count GPUs of its model there (best fit: the
//    node left with the fewest free GPUs; ties to the lower index). Waiting jobs are
//    placed first come, first served with backfill; an interrupted job goes to the front.
//  * A run follows training/checkpoint_schedule.h: compute tau, write delta, ... The first
//    run starts at once; every later run first restores for R.
//  * Spot reclaims: a Poisson process per spot node at its market's rate (plus explicit
//    times), announced `notice` ahead. At the notice the node takes no new jobs; a
//    kTransparent job whose write fits in the notice (with the margin) writes an emergency
//    checkpoint and leaves, losing nothing; the others run until the reclaim and lose the
//    work since their last checkpoint (a kNone job loses everything). The node returns
//    (a replacement) after `spot_replacement`.
//  * Hardware failures: per node Poisson at gpu_count / gpu_mtbf; the failed GPU is drawn
//    uniformly, so a job of k GPUs fails at k / mtbf; it loses its uncommitted work; the
//    GPU is out for `gpu_repair`.
//  * Maintenance: the node is cordoned at `cordon_at`, and pods get `drain_grace` notice
//    (Kubernetes' default terminationGracePeriodSeconds, 30 s) before the window, handled
//    like a reclaim notice; it is down for the window. Planned migrations (the drain plan,
//    training/drain_plan.h) reserve their target GPUs at `reserve_at` and stop each job at
//    its planned time, with an emergency write when planned, then restore on the target.
//  * Spot-with-fallback jobs switch to on-demand at LatestSwitch (training/spot_decision.h),
//    recomputed from the work saved; a running job stops (emergency write when it can) and
//    queues for on-demand.
//  * Cost: GPU-hours held (running, writing, restoring) x the price of the capacity type.
//
// Deterministic: each node draws its reclaims and failures from its own seeded stream.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/training_job.h"
#include "gpufit/training/checkpoint_schedule.h"
#include "gpufit/training/interruptions.h"
#include "gpufit/training/spot_decision.h"

namespace gpufit {

// How the simulator runs one job (DecideSpot's answer, or one forced by the caller).
struct JobRunPolicy {
  SpotChoice choice = SpotChoice::kOnDemand;
  Seconds spot_interval{0};       // tau on spot
  Seconds on_demand_interval{0};  // tau on on-demand
  Seconds switch_margin{0};       // spot-with-fallback: room kept after the switch
  GpuPrices prices;
};

// The policy DecideSpot recommends (or all on one capacity type when forced).
JobRunPolicy PolicyFromDecision(const SpotDecision& decision, const GpuPrices& prices);
JobRunPolicy ForcedPolicy(const TrainingJob& job, CapacityType capacity, const InterruptionModel& model,
                          const GpuPrices& prices);

struct PlannedMigration {
  std::string job;
  Seconds stop_at{0};
  bool emergency_checkpoint = false;  // write a checkpoint at stop_at (kTransparent only)
  std::string target_node;            // empty: wait for any capacity
};

struct TrainingSimOptions {
  InterruptionModel interruptions;
  std::vector<SpotReclaim> reclaims;  // explicit preemption times, besides the Poisson ones
  bool poisson_reclaims = true;
  bool hardware_failures = true;
  std::vector<MaintenanceWindow> maintenance;
  std::vector<PlannedMigration> migrations;
  Seconds reserve_at{0};  // when planned migrations reserve their targets
  Seconds drain_grace{30};
  Seconds spot_replacement{300};
  Seconds gpu_repair{4 * 3600.0};
  std::optional<Seconds> horizon;        // stop here (jobs not done count as unfinished)
  std::int64_t max_events = 50'000'000;  // a run needing more fails (jobs that cannot finish)
  std::optional<Seconds> snapshot_at;    // record the running jobs at this time
  std::uint64_t seed = 1;
};

struct JobOutcome {
  std::optional<Seconds> start, finish;
  Seconds lost_work{0};      // compute thrown away, all interruptions
  Seconds max_lost_work{0};  // the most one interruption threw away
  Seconds restoring{0};      // time spent restoring
  Seconds writing{0};        // time spent writing checkpoints (periodic and emergency)
  int interruptions = 0;
  bool switched = false;  // spot-with-fallback moved to on-demand
  bool missed_deadline = false;
  double spot_gpu_hours = 0, on_demand_gpu_hours = 0;
  Usd cost;
};

// A job running at the snapshot time.
struct RunningJob {
  std::size_t job = 0;
  std::size_t node = 0;
  CheckpointSchedule schedule;  // compute_start may be after the snapshot (restoring)
};

struct TrainingSimResult {
  std::vector<JobOutcome> jobs;  // same order as the input
  Usd cost;
  double held_gpu_hours = 0;    // GPU-hours the jobs held
  double useful_gpu_hours = 0;  // work of completed jobs x GPUs
  double lost_gpu_hours = 0;    // work thrown away + restores, x GPUs
  double checkpoint_gpu_hours = 0;
  int completed = 0, unfinished = 0, deadline_misses = 0, switched = 0;
  int spot_reclaims = 0, hardware_failures = 0, drains = 0;  // events on nodes, busy or idle
  int job_interruptions = 0;     // runs of jobs cut short (reclaims, failures, drains, switches)
  Seconds makespan{0};           // last completion
  double mean_completion_h = 0;  // finish - submit, completed jobs
  double utilization = 0;        // held GPU-hours / node GPU-hours over [0, makespan]
  std::vector<RunningJob> snapshot;
};

// Errors: kInvalidArgument for a job no node could ever take, a policy list of the wrong
// length, a non-positive work or interval, or an event naming an unknown node or job;
// kFailedPrecondition when the run needs more than max_events (interruptions so frequent
// that jobs cannot finish).
Result<TrainingSimResult> SimulateTraining(const std::vector<TrainingNode>& nodes, const std::vector<TrainingJob>& jobs,
                                           const std::vector<JobRunPolicy>& policies,
                                           const TrainingSimOptions& options);

}  // namespace gpufit
