// Day/night time-multiplexing: lend the GPUs an inference fleet does not need at night to
// training and batch work, and take them back before the morning ramp.
//
// From inference telemetry (Telemetry::pods, one GPU per pod):
//  * fleet = options.fleet_gpus (the plan passes the GPUs it keeps after co-location), or
//    the most pods alive at one sample (one GPU each: the fleet as it runs today);
//    options.excluded_pods (the CPU-starved ones, which keep their own GPU) are neither in
//    the fleet nor in the need;
//  * GPUs needed at sample t = the larger of
//     - compute: ceil(sum over pods of duty cycle / (100 x target_utilization)), the replicas
//       that carry the offered load at the replica optimizer's margin (the HPA-like policy's
//       target utilization, inference/policies.h HpaSettings: 0.7);
//     - memory (with gpu_memory_mib > 0): ceil(sum over the workloads alive at t of one
//       replica's memory / gpu_memory_mib). A serving workload keeps at least one replica
//       at night, with its model loaded: an idle server still holds its weights, so duty
//       alone would lend GPUs whose memory the kept replicas need (GenTD26: 52 of 73 lent by
//       duty, while the loaded models, 27-47 GB each, need more than the 21 left). One
//       replica's memory is the largest of the workload's pods alive at t; pods without a
//       workload (workload_by_pod) are workloads of their own;
//    at least 1 while any pod is alive. The fleet is treated as one pool of interchangeable replicas;
//  * the hour-of-day curve: per hour of the day (UTC on the telemetry's clock), the most
//    GPUs needed at any sample of that hour, over every day of the window; an hour with
//    fewer than half the median hour's samples is not observed (one stray sample cannot
//    vouch for an hour);
//  * free all day = fleet - the curve's peak: GPUs the fleet never needs (scale it down, or
//    lend them full time);
//  * the night window: the contiguous hours W (at least min_window_hours, wrapping
//    midnight, every hour observed) that maximize (fleet - max needed over W - free all
//    day) x hours: the GPU-hours a fixed block can add at night. Lent GPUs =
//    fleet - max needed over W. The lending stops lead_s before W ends (the inference cold
//    start, to the minute), so that replicas load their model before the ramp; the queue
//    drains drain_before_end_s before that (the lent jobs' longest checkpoint write, to the
//    minute), so that every job saves its state before its GPUs go back;
//  * night free GPU-hours = sum over W's hours of (fleet - needed that hour);
//  * jobs (training, with checkpointing; most GPUs first, then name) fit while the lent GPUs
//    last and when their checkpoint write plus restore take less than half the window;
//    each checkpoints at Daly's interval (training/checkpoint.h) for one interruption per
//    lending window (MTBF = the lending time) and runs every night until its work is done.
//    That interval is for the lent run (its own Job in the night queue); on spot the
//    training section's interval applies.
// ReplayTimeMultiplex checks every telemetry sample while GPUs are lent: GPUs needed + GPUs
// lent <= fleet. Samples where the need exceeds the fleet with nothing lent are counted
// apart (the fleet's own margin, which the co-location replay judges by its own rule).
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/core/units.h"
#include "gpufit/model/telemetry.h"
#include "gpufit/model/training_job.h"

namespace gpufit {

struct TimeMultiplexOptions {
  double target_utilization = 0.7;           // in (0, 1]
  double cold_start_s = 120;                 // an inference replica's start (model loading's p95 when known)
  int min_window_hours = 2;                  // 1..23
  std::string gpu_id{};                      // the fleet's catalog GPU: jobs naming another model do not fit
  int fleet_gpus = 0;                        // 0: the most pods alive at once
  std::vector<std::size_t> excluded_pods{};  // indices into Telemetry::pods
  double gpu_memory_mib = 0;                 // a fleet GPU's memory for pods; 0: memory not judged
  std::map<std::string, std::string> workload_by_pod{};  // pod name -> its workload
};

struct LentJob {
  std::size_t job = 0;  // index into the jobs given
  std::string name;
  int gpus = 0;
  Seconds checkpoint_interval{0};
  Seconds checkpoint_write{0};
  int nights = 0;  // lending windows to finish its work
};

struct TimeMultiplexPlan {
  int fleet_gpus = 0;
  std::array<int, 24> needed_by_hour{};  // -1 where the hour has no sample
  int peak_needed = 0, free_all_day = 0;
  bool has_window = false;  // false: the curve has no trough that a block could use
  int window_start_hour = 0, window_hours = 0;
  int lent_gpus = 0;
  double lead_s = 0;                    // lending ends this long before the window does
  double drain_before_end_s = 0;        // the queue drains this long before lending ends
  double night_free_gpu_hours = 0;      // per night, sum over the window's hours
  double lent_gpu_hours_per_night = 0;  // lent x (window - lead)
  std::vector<LentJob> jobs;
  std::vector<std::string> not_lent;  // "job: reason"
  double target_utilization = 0.7;
  std::vector<std::size_t> excluded_pods;
  double gpu_memory_mib = 0;
  std::map<std::string, std::string> workload_by_pod;
  std::string evidence;

  // Seconds of the day (may exceed 86400 past midnight) when lending ends and when the
  // queue drains.
  double lending_end_s() const { return (window_start_hour + window_hours) * 3600.0 - lead_s; }
  double drain_s() const { return lending_end_s() - drain_before_end_s; }
};

// "HH:MM" of a time of day given in seconds (wrapping past midnight).
std::string ClockTime(double seconds_of_day);

// Errors (kInvalidArgument): options out of range, telemetry with no sample.
Result<TimeMultiplexPlan> PlanTimeMultiplex(const Telemetry& telemetry, const std::vector<TrainingJob>& jobs,
                                            const TimeMultiplexOptions& options = {});

// Whether sample k of `telemetry` falls in the plan's lending (window start to window end
// minus the lead, by time of day).
bool LendingAt(const TimeMultiplexPlan& plan, const Telemetry& telemetry, std::size_t k);

// GPUs needed at sample k by duty alone (the compute rule above), without `excluded`.
int GpusNeededAt(const Telemetry& telemetry, std::size_t k, double target_utilization,
                 const std::vector<std::size_t>& excluded = {});

struct TimeMultiplexReplay {
  std::size_t samples = 0, lent_samples = 0;
  std::size_t over_capacity = 0;          // lending samples where needed + lent > fleet
  std::size_t short_without_lending = 0;  // samples with nothing lent where needed > fleet
  int min_spare_gpus = 0;                 // fleet - needed - lent, smallest over lending samples
  double lent_gpu_hours = 0;              // over the whole window
};
TimeMultiplexReplay ReplayTimeMultiplex(const Telemetry& telemetry, const TimeMultiplexPlan& plan);

}  // namespace gpufit
