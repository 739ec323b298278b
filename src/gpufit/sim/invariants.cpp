#include "gpufit/sim/invariants.h"

#include <fmt/format.h>

#include <bit>

namespace gpufit {

std::string CheckInvariants(const ClusterState& cluster, const std::vector<PlacedPod>& placed) {
  const std::size_t n = cluster.nodes().size();
  std::vector<std::int64_t> cpu(n), mem(n);
  std::vector<std::array<std::int64_t, kMaxGpusPerNode>> gpu(n);
  for (std::size_t i = 0; i < placed.size(); ++i) {
    const PlacedPod& p = placed[i];
    const NodeState& node = cluster.node(p.node);
    const Workload& w = p.workload;
    if (std::popcount(p.gpus) != w.gpu_count)
      return fmt::format("pod #{} asked for {} GPUs and got {}", i, w.gpu_count, std::popcount(p.gpus));
    if ((p.gpus >> node.gpu_count) != 0) return fmt::format("pod #{} got a GPU that node {} lacks", i, p.node);
    if (w.gpu_count > 0 && !w.AcceptsModel(node.model))
      return fmt::format("pod #{} runs on GPU type '{}' it does not accept", i,
                         cluster.models()[static_cast<std::size_t>(node.model)]);
    const std::size_t k = static_cast<std::size_t>(p.node);
    cpu[k] += w.cpu.value;
    mem[k] += w.memory.value;
    for (int g = 0; g < node.gpu_count; ++g) {
      if ((p.gpus >> g) & 1) gpu[k][static_cast<std::size_t>(g)] += w.gpu_per_gpu.value;
    }
  }
  for (const NodeState& node : cluster.nodes()) {
    const std::size_t k = static_cast<std::size_t>(node.id);
    if (cpu[k] != node.cpu_used.value || mem[k] != node.memory_used.value)
      return fmt::format("node {}: state says {}m CPU / {} MiB used, its pods ask {}m / {} MiB", node.id,
                         node.cpu_used.value, node.memory_used.value, cpu[k], mem[k]);
    if (node.cpu_used > node.cpu_capacity || node.memory_used > node.memory_capacity)
      return fmt::format("node {}: CPU or memory over capacity", node.id);
    for (int g = 0; g < node.gpu_count; ++g) {
      const std::int64_t used = gpu[k][static_cast<std::size_t>(g)];
      if (used > 1000) return fmt::format("node {} GPU {}: {} milli-GPU allocated, over 1000", node.id, g, used);
      if (1000 - used != node.gpu_free[static_cast<std::size_t>(g)].value)
        return fmt::format("node {} GPU {}: state says {} free, its pods leave {}", node.id, g,
                           node.gpu_free[static_cast<std::size_t>(g)].value, 1000 - used);
    }
  }
  return {};
}

}  // namespace gpufit
