#include "gpufit/placement/gpufit_policy.h"

#include <algorithm>
#include <cmath>

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
  Choice best;
  bool found = false;
  internal::ForEachGpuChoice(workload_, node, [&](GpuSet gpus) {
    const double v = value_of(gpus);
    if (!found || v > best.value) best = {v, gpus};  // the lowest index on equal values
    found = true;
  });
  return best;
}

std::int64_t GpufitScore::Score(const Workload&, const NodeState& node) {
  return std::llround(model_->Evaluate(node).value * 1000.0);
}

GpuSet GpufitGpu::Pick(const Workload& w, const NodeState& node, Rng&) {
  model_->SetWorkload(w);
  return model_->Evaluate(node).gpus;
}

}  // namespace gpufit
