// FGD, Fragmentation Gradient Descent (Weng et al., USENIX ATC'23, section 4): place a pod
// where the expected fragmentation of the cluster grows least. For each candidate node and
// each GPU the pod could take there, delta = F_n(M) before - F_n(M) after (milli-GPU, see
// placement/fragmentation.h); the node's score is the simulator's
// int(100 * sigmoid(delta / 1000)) (pkg/simulator/plugin/fgd_score.go), and the GPU
// inside the node is the one with the highest such score, the lowest index on ties.
// Whole-GPU pods take the lowest-numbered idle GPUs.
//
// FgdModel caches its answer per (pod shape, node, node version), so a node is evaluated
// again only after it changed or for a new shape; the cache grows with shapes x nodes.
// Not thread-safe.
#pragma once

#include <memory>
#include <vector>

#include "gpufit/placement/fragmentation.h"
#include "gpufit/placement/internal/node_choice.h"
#include "gpufit/placement/plugin.h"

namespace gpufit {

class FgdModel {
 public:
  explicit FgdModel(std::shared_ptr<const std::vector<TypicalPod>> target) : target_(std::move(target)) {}

  struct Choice {
    int score = 0;     // 0..100, the simulator's integer score
    double delta = 0;  // F_n(M) before - after, milli-GPU (higher is better)
    GpuSet gpus = 0;   // the GPUs the pod would take
  };

  // Sets the pod that Evaluate answers for. Cheap when the shape repeats.
  void SetWorkload(const Workload& w) {
    workload_ = w;
    cache_.SetShape(w);
  }
  // Precondition: `node` passed every filter for the current workload.
  const Choice& Evaluate(const NodeState& node) {
    return cache_.Get(node, [this](const NodeState& n) { return Compute(n); });
  }

  const std::vector<TypicalPod>& target() const { return *target_; }

 private:
  Choice Compute(const NodeState& node) const;

  std::shared_ptr<const std::vector<TypicalPod>> target_;
  internal::NodeChoiceCache<Choice> cache_;
  Workload workload_;
};

class FgdScore final : public ScorePlugin {
 public:
  explicit FgdScore(std::shared_ptr<FgdModel> model) : model_(std::move(model)) {}
  std::string_view Name() const override { return "fgd"; }
  void PreScore(const Workload& w, const ClusterState&) override { model_->SetWorkload(w); }
  std::int64_t Score(const Workload&, const NodeState& node) override { return model_->Evaluate(node).score; }

 private:
  std::shared_ptr<FgdModel> model_;
};

// The GPU FGD scores best.
class FgdGpu final : public GpuPicker {
 public:
  explicit FgdGpu(std::shared_ptr<FgdModel> model) : model_(std::move(model)) {}
  std::string_view Name() const override { return "fgd-gpu"; }
  GpuSet Pick(const Workload& w, const NodeState& node, Rng&) override {
    model_->SetWorkload(w);
    return model_->Evaluate(node).gpus;
  }

 private:
  std::shared_ptr<FgdModel> model_;
};

}  // namespace gpufit
