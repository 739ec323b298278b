#include "gpufit/placement/gpufit_policy.h"

#include <algorithm>
#include <cmath>

#include "gpufit/placement/gpu_pickers.h"

namespace gpufit {

GpufitModel::GpufitModel(std::shared_ptr<const std::vector<TypicalPod>> target, GpufitPolicyOptions options)
    : target_(std::move(target)), options_(options) {
  double ratio = 0, share = 0;
  for (const TypicalPod& t : *target_) {
    if (t.gpu_count == 0) continue;
    ratio += t.share * static_cast<double>(t.cpu.value) / static_cast<double>(t.gpu_count * t.gpu_per_gpu.value);
    share += t.share;
  }
  rho_ = options_.rho_milli_cpu_per_gpu_milli > 0 ? options_.rho_milli_cpu_per_gpu_milli
                                                  : (share > 0 ? ratio / share : 1.0);
}

void GpufitModel::SetWorkload(const Workload& w) {
  workload_ = w;
  const auto key = std::make_tuple(w.cpu.value, w.gpu_count, w.gpu_per_gpu.value, w.any_model, w.model_mask);
  const auto [it, added] = shape_ids_.emplace(key, cache_.size());
  if (added) cache_.emplace_back();
  shape_ = it->second;
}

const GpufitModel::Choice& GpufitModel::Evaluate(const NodeState& node) {
  std::vector<Entry>& by_node = cache_[shape_];
  if (static_cast<std::size_t>(node.id) >= by_node.size()) by_node.resize(static_cast<std::size_t>(node.id) + 1);
  Entry& e = by_node[static_cast<std::size_t>(node.id)];
  if (e.version_plus_one != node.version + 1) {
    e.choice = Compute(node);
    e.version_plus_one = node.version + 1;
  }
  return e.choice;
}

double GpufitModel::Stranded(const NodeFree& f) const {
  const double cpu = static_cast<double>(std::max<std::int64_t>(f.cpu.value, 0));
  return std::max(0.0, static_cast<double>(f.gpu_total().value) - cpu / rho_);
}

GpufitModel::Choice GpufitModel::Compute(const NodeState& node) const {
  const NodeFree now = NodeFree::Of(node);
  const double frag_before = FragMilli(now, *target_);
  const double stranded_before = Stranded(now);
  auto value_of = [&](GpuSet gpus) {
    const NodeFree after = now.After(workload_, gpus);
    return (frag_before - FragMilli(after, *target_)) - options_.stranding_weight * (Stranded(after) - stranded_before);
  };
  if (!workload_.SharesGpu()) {
    const GpuSet gpus = FirstIdleGpus(workload_, node);
    return {value_of(gpus), gpus};
  }
  Choice best;
  bool found = false;
  for (int g = 0; g < node.gpu_count; ++g) {
    const GpuMilli free = node.gpu_free[static_cast<std::size_t>(g)];
    if (free < workload_.gpu_per_gpu) continue;
    bool seen = false;  // GPUs with the same free share are alike: keep the first
    for (int h = 0; h < g && !seen; ++h) seen = node.gpu_free[static_cast<std::size_t>(h)] == free;
    if (seen) continue;
    const double v = value_of(GpuSet{1} << g);
    if (!found || v > best.value) best = {v, GpuSet{1} << g};
    found = true;
  }
  return best;
}

std::int64_t GpufitScore::Score(const Workload&, const NodeState& node) {
  return std::llround(model_->Evaluate(node).value * 1000.0);
}

GpuSet GpufitGpu::Pick(const Workload& w, const NodeState& node, Rng&) {
  if (!w.SharesGpu()) return FirstIdleGpus(w, node);
  model_->SetWorkload(w);
  return model_->Evaluate(node).gpus;
}

}  // namespace gpufit
