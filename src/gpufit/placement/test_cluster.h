// For tests only: small clusters and workloads with named fields.
#pragma once

#include <fmt/format.h>

#include <vector>

#include "gpufit/placement/cluster_state.h"

namespace gpufit::testing {

struct NodeArgs {
  std::int64_t cpu = 64000;
  std::int64_t memory = 262144;
  int gpus = 8;
  std::string model = "G2";
  std::vector<std::int64_t> gpu_used = {};  // milli-GPU used per GPU, by a sharing pod each
  std::int64_t cpu_used = 0;
};

// One node per entry, named n0, n1, ...; usage is placed as sharing pods (whole GPUs as 1000).
inline ClusterState MakeCluster(const std::vector<NodeArgs>& nodes) {
  std::vector<NodeSpec> specs;
  for (std::size_t i = 0; i < nodes.size(); ++i)
    specs.push_back({.name = fmt::format("n{}", i),  // not "n" + to_string: GCC 12 false -Warray-bounds
                     .cpu = MilliCpu{nodes[i].cpu},
                     .memory = MiB{nodes[i].memory},
                     .gpu_count = nodes[i].gpus,
                     .gpu_model = nodes[i].model});
  ClusterState c = *ClusterState::FromSpecs(specs);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const int id = static_cast<int>(i);
    if (nodes[i].cpu_used > 0) c.Place(id, {.cpu = MilliCpu{nodes[i].cpu_used}}, 0);
    for (std::size_t g = 0; g < nodes[i].gpu_used.size(); ++g) {
      if (nodes[i].gpu_used[g] == 0) continue;
      const Workload w{.gpu_count = 1, .gpu_per_gpu = GpuMilli{nodes[i].gpu_used[g]}};
      c.Place(id, w, GpuSet{1} << g);
    }
  }
  return c;
}

struct PodArgs {
  std::int64_t cpu = 1000;
  std::int64_t memory = 1024;
  int gpus = 1;
  std::int64_t milli = 1000;
};

inline Workload MakeWorkload(const PodArgs& p) {
  return {.cpu = MilliCpu{p.cpu},
          .memory = MiB{p.memory},
          .gpu_count = p.gpus,
          .gpu_per_gpu = GpuMilli{p.gpus ? p.milli : 0}};
}

}  // namespace gpufit::testing
