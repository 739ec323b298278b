// The arrival sequences of the two simulation modes.
//
// Saturation (the FGD paper's "workload inflation" experiment, section 6.1, as its
// simulator's TunePodsByNodeTotalResource runs it, pkg/simulator/simulator.go of
// hkust-adsl/kubernetes-scheduler-simulator): every trace pod, sorted by name and shuffled
// with the seed; then, when the trace asks for less than `inflation` x the cluster's GPU
// capacity (the target), copies of trace pods drawn uniformly with replacement, appended
// until the next copy would push the requested GPUs past the target (tuneUpPods). The
// simulator tests the next copy with its milli-GPU per GPU (not times its GPU count) and
// adds its total; gpufit keeps that rule, so the two sequences stop at the same point for
// the same draws. When the trace asks for more than the target (the openb multigpu50 list
// asks for 183% of its cluster's 6,212 GPUs), pods drawn uniformly from those left are
// removed until the rest ask for at most the target (tuneDownPods); the rest keep their
// order. Either way the arrivals end within one pod of the target, where the paper reads
// its figures. Nothing ever leaves.
//
// Replay: arrivals and departures at the trace's creation and deletion times.
#pragma once

#include <cstddef>
#include <vector>

#include "gpufit/core/rng.h"
#include "gpufit/model/cluster.h"

namespace gpufit {

// Indices into `trace` in submission order. Precondition: inflation >= 1.
std::vector<std::size_t> SaturationArrivals(const std::vector<PodSpec>& trace, GpuMilli capacity, double inflation,
                                            Rng& rng);

struct TraceEvent {
  Seconds time{0};
  std::size_t pod = 0;  // index into the trace
  bool arrival = true;
};

// Every creation and deletion, by time; at equal times departures come first (they free
// resources the arrivals may need), except that a pod created and deleted at the same time
// arrives before it leaves; then trace order.
std::vector<TraceEvent> ReplayEvents(const std::vector<PodSpec>& trace);

}  // namespace gpufit
