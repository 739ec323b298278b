#include "gpufit/placement/gpufit_policy.h"

#include "gpufit/placement/gpu_pickers.h"

namespace gpufit {

GpufitScore::GpufitScore(std::shared_ptr<const std::vector<TypicalPod>> target) : model_(std::move(target)) {}
void GpufitScore::PreScore(const Workload& w, const ClusterState&) { model_.SetWorkload(w); }
int GpufitScore::Score(const Workload&, const NodeState& node) { return model_.Evaluate(node).score; }

GpufitGpu::GpufitGpu(std::shared_ptr<const std::vector<TypicalPod>> target) : model_(std::move(target)) {}
GpuSet GpufitGpu::Pick(const Workload& w, const NodeState& node, Rng&) {
  if (!w.SharesGpu()) return FirstIdleGpus(w, node);
  model_.SetWorkload(w);
  return model_.Evaluate(node).gpus;
}

}  // namespace gpufit
