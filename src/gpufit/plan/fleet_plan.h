// The mixed-fleet plan: every pod on some catalog GPU model, groups of pods sharing a GPU, at
// the lowest on-demand USD per month found under the same rules as the same-model plan
// (plan/plan.h), with each pod's duty cycle scaled by its slowdown on the model it lands on
// (optimize/throughput_scaling.h). Right-sizing is its one-pod case.
//
// A GPU of model M holds a set of pods when
//  * every pod is admitted on M (AdmitPod from the pod's current model: the same model, or a
//    never-active pod, or a model where its scaled duty fits and, for latency-bound pods, no
//    slower than today's);
//  * one pod alone: its right-sizing need (peak x (1 + headroom), or peak + the learned
//    margin, or its memory cap) <= M's memory, as right-sizing asks;
//  * several pods: their summed memory (or caps) <= M's memory - reserve - the learned margin
//    (no margin with caps: it is inside each cap) at every sample;
//  * their summed scaled duty > 100% at no more than the collision limit (floor(share x
//    samples)), and with the robust envelope P(collision if always active) of the scaled
//    active duties <= the share (optimize/memory_envelope.h).
//
// Search (heuristic; every step keeps the rules, and none raises the cost):
//  1. start from the same-model plan: its groups, and each pod too big for the target alone;
//  2. move each group to the cheapest admitted model that holds it; a group no model holds
//     (its duty scaled to the target breaks the rule) is split into its pods, each to its
//     cheapest; a pod no candidate admits stays on its current GPU;
//  3. (not with whole workloads, which stay whole throughout) per model with two or more
//     GPUs, pack its pods again on that model (optimize/colocate.h, scaled duty, half the
//     search budget shared among the models) and keep the result when it needs fewer GPUs;
//     skipped for the target when it is today's model and holds every pod the same-model
//     search packed (that search had the whole budget on the same rule); then step 2 again;
//  4. merge two GPUs into one of any model when that model costs less than the two (the pair
//     saving most first), while a pair saves;
//  5. move one pod to another GPU, or to one of its own, when the two GPUs then cost less
//     (each at the cheapest model holding its pods), at most 4 passes.
// Steps 4 and 5 are skipped above kMaxMergeGpus GPUs (their cost is quadratic), which the
// plan then says.
// CPU-starved and multi-GPU pods keep their current GPUs (plan/plan.h), priced as today.
// Units: MiB, percent, USD per 730-hour month (on-demand, catalog or cluster prices).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/model/telemetry.h"

namespace gpufit {

struct Plan;

struct FleetGpu {
  std::string model;              // catalog id
  std::vector<std::size_t> pods;  // indices into Telemetry::pods, ascending
  double usd_per_month = 0;
  double oom_line_mib = 0;      // memory it must never pass: M's memory (one pod) or memory - reserve
  double packing_line_mib = 0;  // what the plan filled to: oom_line_mib less the learned margin (groups)
  double peak_mib = 0;          // summed memory (or caps) over the fitted window
  std::int64_t collisions = 0;  // samples where the summed scaled duty passes 100%
  double collision_p_if_active = 0;
};

struct FleetPlan {
  std::vector<std::string> candidates;  // model ids the search could use, by price
  std::vector<FleetGpu> gpus;           // by price, then model, then first pod
  std::vector<std::size_t> kept;        // pods on their current GPU(s) as today, ascending
  std::size_t kept_gpus = 0;            // the current GPUs those pods hold (Plan::gpus_of each)
  std::size_t refused_on_target = 0;    // pods AdmitPod refuses on the same-model plan's target model
  std::vector<std::string> model_of;    // per pod: its model (the current one when kept)
  std::vector<double> slowdown;         // per pod: the factor its duty was scaled by
  std::vector<std::string> refusals;    // per pod: the cheapest cheaper model with room refused, and why ("" if none)
  std::int64_t collision_limit = 0;
  std::size_t latency_bound_pods = 0;  // pods held to no slower model
  bool merged_pairs = true;            // false: step 4 skipped (more than kMaxMergeGpus GPUs)
  double usd_per_month = 0;            // its GPUs plus the kept pods' current GPUs
  double usd_per_month_kept = 0;
  double seconds = 0;  // wall seconds of the search (for benchmarks; not in any output)
  // Set by `plan` after its walk-forward backtest (backtest/backtest.h): nullopt when none ran,
  // false when this fleet, fitted on a part, overflowed or collided over the limit on a part it
  // never saw; `plan` then recommends the same-model plan and says why (backtest_failure).
  std::optional<bool> backtest_held;
  std::string backtest_failure;
  // The recommended plan when the backtest did not fail it, and it is cheaper than the
  // same-model plan or that plan puts pods on the target that the rules refuse there (a
  // cheaper hour on a slower GPU is not cheaper work).
  bool Recommended(double same_model_usd_per_month) const {
    return backtest_held != false && (usd_per_month + 0.5 < same_model_usd_per_month || refused_on_target > 0);
  }

  std::map<std::string, std::size_t> GpusByModel() const;
};

inline constexpr std::size_t kMaxMergeGpus = 400;

struct FleetOptions {
  std::vector<std::string> models{};  // catalog ids the plan may use; empty: every catalog model
  // Pods whose work is batch, judged by their duty alone, by "namespace/pod" (PodKeyOf of a
  // series); every other pod is latency-bound (serving). Keyed by name, so a backtest's
  // slices of the telemetry keep it.
  std::set<std::string> batch_pods{};

  bool LatencyBound(const PodSeries& pod) const { return !batch_pods.contains(std::string(PodKeyOf(pod.pod))); }
};

// `packed` is the telemetry as BuildPlan's packer saw it (with memory caps: each pod's cap at
// every sample) and `plan` the same-model plan built from it. Errors: kNotFound for an
// unknown model id in options.models; kInternal when a GPU of the result breaks the rules.
Result<FleetPlan> BuildFleetPlan(const Telemetry& packed, const Plan& plan, const GpuCatalog& catalog,
                                 const FleetOptions& options);

// The fleet plan against other samples of the same pods (a backtest's test part), each GPU
// at its oom_line_mib with its pods' duty scaled as planned.
struct FleetReplay {
  std::int64_t memory_overflows = 0;  // samples over a GPU's line, summed over GPUs
  std::size_t overflow_gpus = 0;
  double worst_over_mib = 0;
  double max_collision_share = 0;  // worst GPU with two or more pods
  std::size_t gpus_over_collision_limit = 0;
  bool safe = false;  // no overflow, no GPU over the collision limit
};
FleetReplay ReplayFleet(const Telemetry& telemetry, const FleetPlan& fleet, double max_collision_share);

}  // namespace gpufit
