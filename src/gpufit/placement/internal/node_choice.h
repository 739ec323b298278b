// Shared by the scoring models that evaluate every way to put a pod on a node (FGD,
// gpufit): the candidate GPU sets, and a cache of one answer per (pod shape, node) that
// holds until the node changes (NodeState::version). Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "gpufit/placement/cluster_state.h"
#include "gpufit/placement/gpu_pickers.h"

namespace gpufit::internal {

// Calls fn(gpus) for each distinct way to put `w` on `node`: the lowest-numbered idle GPUs
// for a whole-GPU pod (no GPU for a CPU-only pod); for a pod sharing a GPU, each GPU with
// enough free milli-GPU, once per distinct free amount (GPUs with the same free share are
// alike), the lowest index first. Precondition: `node` passed the filters for `w`.
template <class Fn>
void ForEachGpuChoice(const Workload& w, const NodeState& node, Fn fn) {
  if (!w.SharesGpu()) {
    fn(FirstIdleGpus(w, node));
    return;
  }
  for (int g = 0; g < node.gpu_count; ++g) {
    const GpuMilli free = node.gpu_free[static_cast<std::size_t>(g)];
    if (free < w.gpu_per_gpu) continue;
    bool seen = false;
    for (int h = 0; h < g && !seen; ++h) seen = node.gpu_free[static_cast<std::size_t>(h)] == free;
    if (!seen) fn(GpuSet{1} << g);
  }
}

template <class Choice>
class NodeChoiceCache {
 public:
  // Selects the pod shape (CPU, GPUs, milli-GPU, GPU types) that Get answers for.
  void SetShape(const Workload& w) {
    const auto key = std::make_tuple(w.cpu.value, w.gpu_count, w.gpu_per_gpu.value, w.any_model, w.model_mask);
    const auto [it, added] = shape_ids_.emplace(key, cache_.size());
    if (added) cache_.emplace_back();
    shape_ = it->second;
  }

  // The cached answer for `node`, or compute(node) when the node changed since.
  template <class Compute>
  const Choice& Get(const NodeState& node, Compute compute) {
    std::vector<Entry>& by_node = cache_[shape_];
    const auto id = static_cast<std::size_t>(node.id);
    if (id >= by_node.size()) by_node.resize(id + 1);
    Entry& e = by_node[id];
    if (e.version_plus_one != node.version + 1) {
      e.choice = compute(node);
      e.version_plus_one = node.version + 1;
    }
    return e.choice;
  }

 private:
  struct Entry {
    std::uint64_t version_plus_one = 0;  // 0: empty
    Choice choice;
  };
  std::map<std::tuple<std::int64_t, int, std::int64_t, bool, std::uint64_t>, std::size_t> shape_ids_;
  std::vector<std::vector<Entry>> cache_;  // [shape][node]
  std::size_t shape_ = 0;
};

}  // namespace gpufit::internal
