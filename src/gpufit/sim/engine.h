// The discrete-event cluster simulator: pods arrive one at a time, a placement policy
// (placement/registry.h) puts each on a node and GPUs or leaves it pending, and the
// metrics the FGD paper reports are recorded after every event.
//
// Modes (sim/arrivals.h): kSaturation submits the inflated, shuffled trace and nothing
// leaves; a pod that fits nowhere fails and the run goes on. kReplay follows the trace's
// creation and deletion times; a pod that fits nowhere waits and is retried, in arrival
// order, after every departure.
//
// Every run is reproducible from its seed: the seed drives the node order (drawn first:
// the FGD simulator's random node names, which decide its ties), the arrival order, the
// copies, and every random choice of the policy.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/cluster.h"
#include "gpufit/placement/cluster_state.h"
#include "gpufit/placement/fragmentation.h"
#include "gpufit/placement/policy.h"

namespace gpufit {

enum class SimMode { kSaturation, kReplay };

struct SimOptions {
  SimMode mode = SimMode::kSaturation;
  double inflation = 1.3;         // saturation: submit until requested GPUs reach this x capacity
  bool check_invariants = false;  // run sim/invariants.h after every event (tests); slow on big traces
  bool keep_steps = true;         // keep per-event metrics in RunResult::steps (about 80 bytes each)
  TypicalPodsOptions target;      // FGD's target workload, from the (uninflated) trace
};

// The cluster after one event.
struct StepMetrics {
  std::optional<double> time_s;  // replay: trace time of the event; saturation: none
  std::int64_t arrived_pods = 0;
  double arrived_gpu_pct = 0;  // GPUs requested by all arrivals so far, % of capacity
  double alloc_ratio = 0;      // allocated milli-GPU / capacity
  double frag_milli = 0;       // cluster fragmentation, sum of F_n(M), milli-GPU
  double frag_rate = 0;        // frag_milli / free milli-GPU (0 when none is free)
  std::int64_t running_pods = 0;
  std::int64_t pending_pods = 0;  // replay: waiting now
  std::int64_t failed_pods = 0;   // saturation: fit nowhere so far
  // Saturation: the arriving pod (index into the trace), the node it went to (-1: it fit
  // nowhere) and its GPUs there (bit g: GPU g). Replay: pod -1.
  std::int64_t pod = -1;
  int node = -1;
  GpuSet gpus = 0;
};

struct RunResult {
  std::string policy;
  std::uint64_t seed = 0;
  SimMode mode = SimMode::kSaturation;
  std::int64_t pods_submitted = 0;
  std::int64_t failed_pods = 0;  // saturation: fit nowhere; replay: never placed
  // Saturation: at the end (all arrived). Replay: time-weighted mean over the trace.
  double alloc_ratio = 0;
  double unallocated_gpus = 0;            // (capacity - allocated) / 1000 at the same point
  std::optional<double> frag_rate_at_90;  // fragmentation rate when arrivals first reach 90% of capacity
  std::optional<double> unallocated_gpus_at_first_failure;  // saturation
  double cpu_alloc_ratio = 0;      // allocated CPU / capacity at the end (saturation) or mean (replay)
  MilliCpu cpu_stranded;           // free CPU on GPU nodes with no free GPU, at the end
  MiB memory_stranded;             // free memory on GPU nodes with no free GPU, at the end
  std::vector<StepMetrics> steps;  // one per event when SimOptions::keep_steps
};

// A trace prepared once for many runs.
struct SimInput {
  std::vector<NodeSpec> nodes;
  std::vector<PodSpec> pods;
  ClusterState initial;
  std::vector<Workload> workloads;  // pods resolved against the cluster
  std::shared_ptr<const std::vector<TypicalPod>> target;
  // Trace pods that no node could take even empty, as "pod: reason" (a GPU type no node
  // has, more GPUs, CPU or memory than any node); they fail in every run.
  std::vector<std::string> never_fit;
};

// Errors: kInvalidArgument for an empty or malformed cluster or pod list, an inflation out
// of [1, 100], or a saturation run that would need more than 10 million arrivals.
Result<SimInput> PrepareSimulation(std::vector<NodeSpec> nodes, std::vector<PodSpec> pods, const SimOptions& options);

// One run. Errors: kNotFound for an unknown policy; kInternal if an invariant breaks
// (only checked with check_invariants).
Result<RunResult> Simulate(const SimInput& input, std::string_view policy, std::uint64_t seed,
                           const SimOptions& options);
// The same with a policy built by the caller (tests, experiments).
Result<RunResult> Simulate(const SimInput& input, Policy policy, std::uint64_t seed, const SimOptions& options);

}  // namespace gpufit
