// GPU fragmentation as defined by FGD (Weng et al., "Beware of Fragmentation: Scheduling
// GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC'23, section 3),
// with the exact rules of its public simulator (github.com/hkust-adsl/
// kubernetes-scheduler-simulator, pkg/utils/frag.go).
//
// The target workload M is a set of typical pod shapes with their shares of the trace.
// For one shape m, the fragment of node n, F_n(m), is the free milli-GPU of n that m
// cannot use: all of it when m cannot run on n at all (a CPU-only shape, a GPU type the
// node lacks, too little free CPU, too few GPUs with enough free milli-GPU), otherwise the
// free milli-GPU of the GPUs with less free than m asks for. F_n(M) = sum over m of
// share(m) * F_n(m). Memory plays no part, as in the paper.
#pragma once

#include <array>
#include <span>
#include <vector>

#include "gpufit/model/cluster.h"
#include "gpufit/placement/cluster_state.h"

namespace gpufit {

// One typical shape of the target workload.
struct TypicalPod {
  MilliCpu cpu{};  // a request of 0 counts as 100 millicores (Kubernetes' non-zero default)
  int gpu_count = 0;
  GpuMilli gpu_per_gpu{};
  bool any_model = true;
  std::uint64_t model_mask = 0;
  double share = 0;  // fraction of the target workload, the shares sum to 1
};

struct TypicalPodsOptions {
  double popularity = 0.95;      // keep the most frequent shapes until they cover this share of pods
  bool include_cpu_pods = true;  // count CPU-only pods (the simulator's IsInvolvedCpuPods)
  double gpu_weight = 0;         // > 0: a whole-GPU pod counts 1 + gpu_count * gpu_weight (GpuResWeight)
};

// The target workload from a trace: shapes (CPU, GPU count, milli-GPU per GPU, GPU types)
// by decreasing frequency, equal frequencies by decreasing shape, cut where the running
// count first reaches `popularity` of all pods, shares renormalized over the kept shapes.
std::vector<TypicalPod> TypicalPods(const std::vector<PodSpec>& pods, const ClusterState& cluster,
                                    const TypicalPodsOptions& options = {});

// The free resources of one node that fragmentation depends on.
struct NodeFree {
  MilliCpu cpu{};
  int model = -1;
  int gpu_count = 0;
  std::array<GpuMilli, kMaxGpusPerNode> gpu{};

  static NodeFree Of(const NodeState& node);
  // The node as it would be after placing `w` on `gpus`.
  NodeFree After(const Workload& w, GpuSet gpus) const;
  GpuMilli gpu_total() const;
};

// F_n(M) in milli-GPU, >= 0 and at most the node's free milli-GPU.
double FragMilli(const NodeFree& node, std::span<const TypicalPod> target);

}  // namespace gpufit
