#include "gpufit/placement/fgd.h"

#include <cmath>

#include "gpufit/placement/gpu_pickers.h"

namespace gpufit {

void FgdModel::SetWorkload(const Workload& w) {
  workload_ = w;
  const auto key = std::make_tuple(w.cpu.value, w.gpu_count, w.gpu_per_gpu.value, w.any_model, w.model_mask);
  const auto [it, added] = shape_ids_.emplace(key, cache_.size());
  if (added) cache_.emplace_back();
  shape_ = it->second;
}

const FgdModel::Choice& FgdModel::Evaluate(const NodeState& node) {
  std::vector<Entry>& by_node = cache_[shape_];
  if (static_cast<std::size_t>(node.id) >= by_node.size()) by_node.resize(static_cast<std::size_t>(node.id) + 1);
  Entry& e = by_node[static_cast<std::size_t>(node.id)];
  if (e.version_plus_one != node.version + 1) {
    e.choice = Compute(node);
    e.version_plus_one = node.version + 1;
  }
  return e.choice;
}

FgdModel::Choice FgdModel::Compute(const NodeState& node) const {
  const NodeFree now = NodeFree::Of(node);
  const double before = FragMilli(now, *target_);
  auto score_of = [&](GpuSet gpus, Choice& out) {
    out.delta = before - FragMilli(now.After(workload_, gpus), *target_);
    out.score = static_cast<int>(100.0 / (1.0 + std::exp(-out.delta / 1000.0)));
    out.gpus = gpus;
  };
  Choice best;
  if (!workload_.SharesGpu()) {
    score_of(FirstIdleGpus(workload_, node), best);
    return best;
  }
  bool found = false;
  for (int g = 0; g < node.gpu_count; ++g) {
    const GpuMilli free = node.gpu_free[static_cast<std::size_t>(g)];
    if (free < workload_.gpu_per_gpu) continue;
    bool seen = false;  // a GPU with the same free share scores the same: keep the first
    for (int h = 0; h < g && !seen; ++h) seen = node.gpu_free[static_cast<std::size_t>(h)] == free;
    if (seen) continue;
    Choice c;
    score_of(GpuSet{1} << g, c);
    if (!found || c.score > best.score) best = c;
    found = true;
  }
  return best;
}

}  // namespace gpufit
