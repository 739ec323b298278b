// Per training job: the checkpoint interval, the expected run on spot and on on-demand
// capacity, and the choice between spot, on-demand, and spot that switches to on-demand
// when the slack before its deadline runs out.
//
// Model (stated; formulas in training/checkpoint.h):
//  * Hardware failures: per-GPU MTBF m, so the job's MTBF is m / gpus; no notice.
//  * Gangs (model/training_job.h): n pods of g GPUs, one pod per node. Any failure or
//    reclaim of one member stops all n and all lose the work since the last checkpoint, so
//    the gang is one job of N = n g GPUs on n nodes: hardware rate n g / m, spot rate
//    n lambda_spot, and Young/Daly use the gang's MTBF
//      M_gang = 1 / (n g / m + n lambda_spot)
//    (N independent exponential components fail at the sum of their rates: formulas.md
//    1.4, "job MTBF M = m / N"; Young 1974 and Daly 2006 take the MTBF of the whole job).
//    Lost work, checkpoint writes and cost count all n g GPUs.
//  * Spot reclaims: Poisson at the market's rate. When the job can checkpoint on demand
//    (kTransparent) and delta + margin fits in the notice, a reclaim costs only the
//    emergency write and the restart: T_w = T_w,Daly(M_hw) / (1 - lambda_spot (delta + R))
//    (derived, first order in the reclaim rate). Otherwise reclaims are failures like any
//    other: M = 1 / (lambda_hw + lambda_spot) in Daly's model.
//  * Interval: Daly's higher-order optimum for the failures that lose work (the whole work
//    when there are none); a job without checkpoints runs as one segment with delta = 0.
//  * Cost: GPU-hours the job holds (running, writing, restoring, redoing) x the price of
//    its capacity; capacity is billed while held (autoscaled node pools).
//  * Deadline risk: a bound, not an estimate. One interruption costs at most
//    c = tau + delta + R (rework, a partial write, the restart; waiting for capacity is not
//    modelled here), so missing a deadline with slack S needs more than S / c interruptions
//    within the window; with N ~ Poisson(rate x window), risk <= P(N > S / c).
#pragma once

#include <optional>
#include <string>

#include "gpufit/core/units.h"
#include "gpufit/model/training_job.h"
#include "gpufit/training/interruptions.h"

namespace gpufit {

struct GpuPrices {
  Usd on_demand_per_gpu_hour;
  Usd spot_per_gpu_hour;
};

struct RunOutlook {
  CapacityType capacity = CapacityType::kOnDemand;
  bool uses_notice = false;     // reclaims cost only an emergency write and the restart
  Seconds mtbf{0};              // of the interruptions that lose work (inf when none)
  double noticed_per_hour = 0;  // reclaims handled with the notice
  Seconds interval{0};          // checkpoint interval tau (Daly); the work when no checkpoints
  Seconds young_interval{0};    // Young's sqrt(2 delta M), for comparison (0 when not used)
  Seconds expected_wall{0};     // expected run time, start to finish
  double expected_interruptions = 0;
  double checkpoint_gpu_hours = 0;     // writing periodic checkpoints
  double expected_lost_gpu_hours = 0;  // rework, restarts and emergency writes
  Usd expected_cost;
};

// `interval`: checkpoint every this long instead of Daly's optimum.
RunOutlook Outlook(const TrainingJob& job, CapacityType capacity, const InterruptionModel& model,
                   const GpuPrices& prices, std::optional<Seconds> interval = std::nullopt);

enum class SpotChoice { kOnDemand, kSpot, kSpotWithFallback };
const char* SpotChoiceName(SpotChoice c);  // "on-demand", "spot", "spot-with-fallback"

// The choice: on-demand when spot is not cheaper; spot when there is no deadline; with a
// deadline, spot with a switch to on-demand (made only when the slack runs out) when a
// switch at the start would still meet it and a run without reclaims would not be forced
// to switch (its writes plus one interval fit in the slack); else plain spot when its risk bound is at most
// max_miss_risk; else on-demand. With a switch, the spot interval is at most half the
// slack S (the time a switch can wait): work is saved at least every S/2, so a run without
// reclaims never has to switch (it loses at most delta of slack per checkpoint); a job
// without checkpoints gets a switch only when S covers its whole run. On on-demand too, a
// deadline job checkpoints at least every half of its slack. Either cap applies only when
// its writes plus one interval fit in the slack (else Daly's interval stays).
struct SpotDecisionOptions {
  double max_miss_risk = 0.01;  // highest deadline-miss risk bound accepted
};

struct SpotDecision {
  SpotChoice choice = SpotChoice::kOnDemand;
  RunOutlook spot, on_demand;
  Usd expected_saving;   // on-demand cost - cost of the choice (0 for on-demand)
  double miss_risk = 0;  // bound on P(missing the deadline) with the choice; 0 without deadline
  // Fallback: the latest time to stop on spot and restart on on-demand if nothing has been
  // done; the simulator recomputes it from the work committed (LatestSwitch).
  std::optional<Seconds> latest_switch;
  Seconds switch_margin{0};  // room kept for hardware interruptions after a switch
  std::string reason;
};

SpotDecision DecideSpot(const TrainingJob& job, const InterruptionModel& model, const GpuPrices& prices,
                        const SpotDecisionOptions& options = {});

// Latest time a job with `committed` work saved can stop and still finish on on-demand by
// its deadline: deadline - (remaining work and its checkpoints every `on_demand_interval`
// + an emergency write when it can make one + restore + margin). None without a deadline.
// The margin is n worst-case interruptions, n the fewest for which P(more than n hardware
// failures after the switch) <= max_miss_risk.
std::optional<Seconds> LatestSwitch(const TrainingJob& job, Seconds committed, Seconds on_demand_interval,
                                    Seconds margin);

// P(N > x) for N ~ Poisson(mean): the deadline-risk bound's tail.
double PoissonTailAbove(double mean, double x);

}  // namespace gpufit
