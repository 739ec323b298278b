// The simulator's invariant checker: recomputes every node's usage from the placements
// and checks it against the cluster state, that no node or GPU is over capacity, and that
// every placed pod got what it asked for (its GPU count, an accepted GPU type, one GPU
// when sharing). Tests run it after every event.
#pragma once

#include <string>
#include <vector>

#include "gpufit/placement/cluster_state.h"

namespace gpufit {

struct PlacedPod {
  int node = 0;
  Workload workload;
  GpuSet gpus = 0;
};

// Empty when every invariant holds, else the first violation in words.
std::string CheckInvariants(const ClusterState& cluster, const std::vector<PlacedPod>& placed);

}  // namespace gpufit
