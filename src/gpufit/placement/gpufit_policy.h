// gpufit's own placement policy (work in progress).
#pragma once

#include <memory>
#include <vector>

#include "gpufit/placement/fgd.h"
#include "gpufit/placement/plugin.h"

namespace gpufit {

class GpufitScore final : public ScorePlugin {
 public:
  explicit GpufitScore(std::shared_ptr<const std::vector<TypicalPod>> target);
  std::string_view Name() const override { return "gpufit"; }
  void PreScore(const Workload& w, const ClusterState& cluster) override;
  int Score(const Workload& w, const NodeState& node) override;

 private:
  FgdModel model_;
};

class GpufitGpu final : public GpuPicker {
 public:
  explicit GpufitGpu(std::shared_ptr<const std::vector<TypicalPod>> target);
  std::string_view Name() const override { return "gpufit-gpu"; }
  GpuSet Pick(const Workload& w, const NodeState& node, Rng& rng) override;

 private:
  FgdModel model_;
};

}  // namespace gpufit
