#include "gpufit/placement/cluster_state.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cassert>

namespace gpufit {

std::uint64_t internal::NextStamp() {
  static std::atomic<std::uint64_t> last{0};
  return ++last;
}

GpuMilli NodeState::gpu_free_total() const {
  GpuMilli total;
  for (int g = 0; g < gpu_count; ++g) total += gpu_free[static_cast<std::size_t>(g)];
  return total;
}

int NodeState::idle_gpus() const {
  int idle = 0;
  for (int g = 0; g < gpu_count; ++g) idle += gpu_free[static_cast<std::size_t>(g)].value == 1000;
  return idle;
}

Result<ClusterState> ClusterState::FromSpecs(const std::vector<NodeSpec>& specs) {
  if (specs.empty()) return InvalidArgument("the cluster has no nodes");
  ClusterState c;
  for (const NodeSpec& s : specs) {
    if (s.cpu.value < 0 || s.memory.value < 0 || s.gpu_count < 0 || s.gpu_count > kMaxGpusPerNode)
      return InvalidArgument("node '{}': capacities must be >= 0 and GPUs at most {}", s.name, kMaxGpusPerNode);
    NodeState n;
    n.id = static_cast<int>(c.nodes_.size());
    n.cpu_capacity = s.cpu;
    n.memory_capacity = s.memory;
    n.gpu_count = s.gpu_count;
    n.version = internal::NextStamp();  // unique across states, as the per-node caches assume
    for (int g = 0; g < s.gpu_count; ++g) n.gpu_free[static_cast<std::size_t>(g)] = GpuMilli{1000};
    if (s.gpu_count > 0) {
      n.model = c.ModelId(s.gpu_model);
      if (n.model < 0) {
        if (c.models_.size() == kMaxGpuModels)
          return InvalidArgument("node '{}': more than {} GPU types in one cluster", s.name, kMaxGpuModels);
        n.model = static_cast<int>(c.models_.size());
        c.models_.push_back(s.gpu_model);
      }
    }
    c.total_gpus_ += s.gpu_count;
    c.cpu_capacity_ += s.cpu;
    c.memory_capacity_ += s.memory;
    c.nodes_.push_back(n);
    c.names_.push_back(s.name);
  }
  return c;
}

int ClusterState::ModelId(const std::string& model) const {
  const auto it = std::find(models_.begin(), models_.end(), model);
  return it == models_.end() ? -1 : static_cast<int>(it - models_.begin());
}

Workload ClusterState::WorkloadFor(const PodSpec& pod) const {
  Workload w{.cpu = pod.cpu, .memory = pod.memory, .gpu_count = pod.gpu_count, .gpu_per_gpu = pod.gpu_per_gpu};
  w.any_model = pod.gpu_models.empty();
  for (const std::string& m : pod.gpu_models) {
    if (const int id = ModelId(m); id >= 0) w.model_mask |= std::uint64_t{1} << id;
  }
  return w;
}

namespace {
int GpuKind(const Workload& w) { return w.SharesGpu() ? 0 : w.gpu_count; }
}  // namespace

void ClusterState::Place(int id, const Workload& w, GpuSet gpus) {
  NodeState& n = nodes_[static_cast<std::size_t>(id)];
  assert(std::popcount(gpus) == w.gpu_count);
  n.cpu_used += w.cpu;
  n.memory_used += w.memory;
  for (int g = 0; g < n.gpu_count; ++g) {
    if ((gpus >> g) & 1) {
      GpuMilli& free = n.gpu_free[static_cast<std::size_t>(g)];
      assert(free >= w.gpu_per_gpu);
      free = free - w.gpu_per_gpu;
    }
  }
  if (w.gpu_count > 0) ++n.pods_by_gpu_kind[static_cast<std::size_t>(GpuKind(w))];
  n.version = internal::NextStamp();
  journal_.nodes.push_back(id);
  gpu_allocated_ += w.TotalGpu();
  cpu_used_ += w.cpu;
  memory_used_ += w.memory;
}

void ClusterState::Remove(int id, const Workload& w, GpuSet gpus) {
  NodeState& n = nodes_[static_cast<std::size_t>(id)];
  n.cpu_used = n.cpu_used - w.cpu;
  n.memory_used = n.memory_used - w.memory;
  for (int g = 0; g < n.gpu_count; ++g) {
    if ((gpus >> g) & 1) {
      GpuMilli& free = n.gpu_free[static_cast<std::size_t>(g)];
      free += w.gpu_per_gpu;
      assert(free.value <= 1000);
    }
  }
  if (w.gpu_count > 0) --n.pods_by_gpu_kind[static_cast<std::size_t>(GpuKind(w))];
  n.version = internal::NextStamp();
  journal_.nodes.push_back(id);
  gpu_allocated_ = gpu_allocated_ - w.TotalGpu();
  cpu_used_ = cpu_used_ - w.cpu;
  memory_used_ = memory_used_ - w.memory;
}

}  // namespace gpufit
