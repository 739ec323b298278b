// What each node of a cluster has free right now, and the pods' requests as placement
// sees them. The placement pipeline reads it; the simulator (and later the scheduler
// extender) changes it through Place and Remove.
//
// GPUs are tracked one by one in milli-GPU (1000 = one GPU), as Alibaba's GPU-sharing
// device plugin (open-gpu-share) does: a pod sharing a GPU takes part of one GPU, a pod
// with whole GPUs takes idle GPUs. GPU types are interned to small integers (at most 64
// per cluster) so a pod's acceptable types are a bit mask.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/core/units.h"
#include "gpufit/model/cluster.h"

namespace gpufit {

// A set of GPUs of one node: bit i is GPU i.
using GpuSet = std::uint32_t;

inline constexpr int kMaxGpuModels = 64;

namespace internal {
// A process-wide stamp: every call returns a new value (thread-safe).
std::uint64_t NextStamp();

// Which nodes a ClusterState changed, in order, since it was built or copied. A copy starts
// an empty journal of its own under a new id, so an index kept for one state never mistakes
// another for it.
struct ChangeJournal {
  std::uint64_t id = NextStamp();
  std::vector<int> nodes;

  ChangeJournal() = default;
  ChangeJournal(const ChangeJournal&) : id(NextStamp()) {}
  ChangeJournal& operator=(const ChangeJournal& other) {
    if (this != &other) {
      id = NextStamp();
      nodes.clear();
    }
    return *this;
  }
  ChangeJournal(ChangeJournal&&) = default;
  ChangeJournal& operator=(ChangeJournal&&) = default;
};
}  // namespace internal

// A pod's request, with its GPU types resolved against one cluster.
struct Workload {
  MilliCpu cpu{};
  MiB memory{};
  int gpu_count = 0;
  GpuMilli gpu_per_gpu{};        // on each GPU; < 1000 only when sharing one GPU
  bool any_model = true;         // no GPU type constraint
  std::uint64_t model_mask = 0;  // when constrained: bit m = ClusterState model m accepted
                                 // (0: none of the listed types exists in this cluster)

  bool SharesGpu() const { return gpu_count == 1 && gpu_per_gpu.value < 1000; }
  GpuMilli TotalGpu() const { return {gpu_per_gpu.value * gpu_count}; }
  bool AcceptsModel(int model) const { return any_model || (model >= 0 && ((model_mask >> model) & 1)); }
};

struct NodeState {
  int id = 0;  // index in ClusterState::nodes()
  MilliCpu cpu_capacity;
  MilliCpu cpu_used;
  MiB memory_capacity;
  MiB memory_used;
  int gpu_count = 0;
  int model = -1;                                    // index in ClusterState::models(); -1 without GPUs
  std::array<GpuMilli, kMaxGpusPerNode> gpu_free{};  // per GPU; 1000 when idle; 0 past gpu_count
  // Pods on the node by GPU kind, for GPU clustering: [0] pods sharing a GPU, [k] pods
  // with k whole GPUs. CPU-only pods are not counted.
  std::array<int, kMaxGpusPerNode + 1> pods_by_gpu_kind{};
  // A stamp that changes on every change of the node, unique across all ClusterStates of
  // the process (copies share it until either changes), so plugins may cache per node.
  std::uint64_t version = 0;

  MilliCpu cpu_free() const { return cpu_capacity - cpu_used; }
  MiB memory_free() const { return memory_capacity - memory_used; }
  GpuMilli gpu_free_total() const;
  int idle_gpus() const;  // GPUs with all 1000 milli free
};

class ClusterState {
 public:
  // Errors: kInvalidArgument for no nodes, a negative capacity or more than 64 GPU types.
  static Result<ClusterState> FromSpecs(const std::vector<NodeSpec>& nodes);

  const std::vector<NodeState>& nodes() const { return nodes_; }
  const NodeState& node(int id) const { return nodes_[static_cast<std::size_t>(id)]; }
  const std::string& node_name(int id) const { return names_[static_cast<std::size_t>(id)]; }
  const std::vector<std::string>& models() const { return models_; }
  int ModelId(const std::string& model) const;  // -1 when the cluster has no such GPU type

  Workload WorkloadFor(const PodSpec& pod) const;

  // Takes the pod's resources on `node`, on the GPUs in `gpus` (one GPU when it shares,
  // gpu_count idle GPUs otherwise, none for a CPU-only pod). Precondition: they fit.
  void Place(int node, const Workload& w, GpuSet gpus);
  // Gives back exactly what Place took.
  void Remove(int node, const Workload& w, GpuSet gpus);

  GpuMilli gpu_capacity() const { return {1000 * total_gpus_}; }
  GpuMilli gpu_allocated() const { return gpu_allocated_; }
  int total_gpus() const { return total_gpus_; }
  MilliCpu cpu_capacity() const { return cpu_capacity_; }
  MilliCpu cpu_used() const { return cpu_used_; }
  MiB memory_capacity() const { return memory_capacity_; }
  MiB memory_used() const { return memory_used_; }

  // The ids of the nodes Place and Remove changed, one per call, oldest first, since this
  // state was built or copied (4 bytes per change), and an id unique to that journal: an
  // index over the nodes (the policy's, placement/policy.h) catches up from its last
  // position instead of visiting every node.
  std::uint64_t journal_id() const { return journal_.id; }
  const std::vector<int>& changed_nodes() const { return journal_.nodes; }

 private:
  std::vector<NodeState> nodes_;
  std::vector<std::string> names_;
  std::vector<std::string> models_;
  int total_gpus_ = 0;
  GpuMilli gpu_allocated_;
  MilliCpu cpu_capacity_, cpu_used_;
  MiB memory_capacity_, memory_used_;
  internal::ChangeJournal journal_;
};

}  // namespace gpufit
