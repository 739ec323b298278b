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

#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "gpufit/placement/fragmentation.h"
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
  void SetWorkload(const Workload& w);
  // Precondition: `node` passed every filter for the current workload.
  const Choice& Evaluate(const NodeState& node);

  const std::vector<TypicalPod>& target() const { return *target_; }

 private:
  struct Entry {
    std::uint64_t version_plus_one = 0;  // 0: empty
    Choice choice;
  };
  Choice Compute(const NodeState& node) const;

  std::shared_ptr<const std::vector<TypicalPod>> target_;
  std::map<std::tuple<std::int64_t, int, std::int64_t, bool, std::uint64_t>, std::size_t> shape_ids_;
  std::vector<std::vector<Entry>> cache_;  // [shape][node]
  std::size_t shape_ = 0;
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

}  // namespace gpufit
