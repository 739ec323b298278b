// gpufit's own placement policy: FGD's fragmentation gradient plus the GPUs that a
// placement strands for lack of CPU.
//
// Why: in GPU-sharing clusters CPU is often the scarce resource (the openb trace asks for
// about 80% of all cores before any inflation). FGD measures fragmentation against the
// typical pods one at a time: a node's free GPUs count as fragment for a typical pod only
// when that single pod cannot get its CPU, so FGD happily spends a node's cores on a
// CPU-heavy pod while that node's remaining GPUs will then lack the cores every future GPU
// pod brings along. gpufit adds that future cost explicitly.
//
// Model (all in milli-GPU of a node, before and after the candidate placement):
//   frag      = F_n(M), FGD's fragmentation against the target workload M
//               (placement/fragmentation.h);
//   stranded  = max(0, free GPU - free CPU / rho): free GPU milli that the node's free CPU
//               cannot feed at the target workload's CPU per GPU, rho (millicores per
//               milli-GPU: the share-weighted mean over M's GPU shapes of each shape's CPU
//               divided by its GPU, unless set; 11.7 on the openb default trace);
//   value     = (frag_before - frag_after) - stranding_weight * (stranded_after - stranded_before).
// The node and the GPU inside it with the highest value win; the score is the value in
// thousandths of a milli-GPU (a plugin range wider than 0..100, see placement/plugin.h).
// Ties go to the first node of the run's node order (TieBreak::kFirst), the GPU with the
// lowest index. Whole-GPU pods take the lowest-numbered idle GPUs.
//
// Measured on the openb trace, saturation at 130%, seeds 42-51 (docs/simulate.md): 250.7
// unallocated GPUs against FGD's 285.9 on the default pod list (-12%), 256.2 against 349.1
// on gpuspec33 (-27%). stranding_weight 1..8 all land within 2 GPUs of each other.
//
// The model caches its answer per (pod shape, node, node version), as FgdModel does.
// Not thread-safe.
#pragma once

#include <memory>
#include <vector>

#include "gpufit/placement/fragmentation.h"
#include "gpufit/placement/internal/node_choice.h"
#include "gpufit/placement/plugin.h"

namespace gpufit {

struct GpufitPolicyOptions {
  double stranding_weight = 2.0;           // newly stranded milli-GPU against fragmentation
  double rho_milli_cpu_per_gpu_milli = 0;  // CPU one milli-GPU brings along; 0: from the target
};

class GpufitModel {
 public:
  GpufitModel(std::shared_ptr<const std::vector<TypicalPod>> target, GpufitPolicyOptions options);

  struct Choice {
    double value = 0;  // milli-GPU, higher is better
    GpuSet gpus = 0;
  };
  void SetWorkload(const Workload& w) {
    workload_ = w;
    cache_.SetShape(w);
  }
  // Precondition: `node` passed every filter for the current workload.
  const Choice& Evaluate(const NodeState& node) {
    return cache_.Get(node, [this](const NodeState& n) { return Compute(n); });
  }
  double rho() const { return rho_; }

 private:
  Choice Compute(const NodeState& node) const;
  double Stranded(const NodeFree& f) const;

  std::shared_ptr<const std::vector<TypicalPod>> target_;
  GpufitPolicyOptions options_;
  double rho_ = 1;
  internal::NodeChoiceCache<Choice> cache_;
  Workload workload_;
};

class GpufitScore final : public ScorePlugin {
 public:
  explicit GpufitScore(std::shared_ptr<GpufitModel> model) : model_(std::move(model)) {}
  std::string_view Name() const override { return "gpufit"; }
  void PreScore(const Workload& w, const ClusterState&) override { model_->SetWorkload(w); }
  std::int64_t Score(const Workload& w, const NodeState& node) override;

 private:
  std::shared_ptr<GpufitModel> model_;
};

class GpufitGpu final : public GpuPicker {
 public:
  explicit GpufitGpu(std::shared_ptr<GpufitModel> model) : model_(std::move(model)) {}
  std::string_view Name() const override { return "gpufit-gpu"; }
  GpuSet Pick(const Workload& w, const NodeState& node, Rng& rng) override;

 private:
  std::shared_ptr<GpufitModel> model_;
};

}  // namespace gpufit
