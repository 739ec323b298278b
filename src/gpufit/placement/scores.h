// Score plugins of the baseline policies, each as defined by the FGD paper (USENIX ATC'23,
// section 6.1) and written as its public simulator scores them
// (github.com/hkust-adsl/kubernetes-scheduler-simulator, pkg/simulator/plugin/*_score.go):
// integer scores 0..100, higher is better. Units of the formulas: millicores, milli-GPU.
// "maxSpec" is the simulator's normalizer of 128 cores and 8 GPUs.
#pragma once

#include <memory>

#include "gpufit/placement/plugin.h"

namespace gpufit {

inline constexpr double kMaxSpecMilliCpu = 128000;  // simulator's MaxSpecCpu
inline constexpr double kMaxSpecGpuMilli = 8000;    // simulator's MaxSpecGpu

// Every node scores the same: the node is then chosen by the tie-break alone (uniformly
// at random for random-fit, the first node for first-fit).
class ConstantScore final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "constant"; }
  std::int64_t Score(const Workload&, const NodeState&) override { return 0; }
};

// Best-fit: the node whose free CPU and GPU, after placing the pod, are least.
// Score = 100 * (1 - sum_r 0.5 * (free_r - request_r) / maxSpec_r), r in {CPU, GPU}.
class BestFitScore final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "best-fit"; }
  std::int64_t Score(const Workload& w, const NodeState& node) override;
};

// Dot-product (Tetris, Grandl et al., SIGCOMM'14): the node whose free vector aligns least
// with the request, as the simulator computes it for the paper ("merge" GPU dimension,
// "max" normalization): vectors (CPU, total GPU) / maxSpec, score = 100 * (1 - dot / 2).
class DotProductScore final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "dot-product"; }
  std::int64_t Score(const Workload& w, const NodeState& node) override;
};

// GPU packing: prefer (1) GPUs already shared, least free first (score 100 - sum of their
// free percent / 10, at least 50), then (2) idle GPUs on a node already in use (50 minus
// idle GPUs taken, at least 33), then (3) a node with all GPUs idle (33 minus its GPUs).
// CPU-only pods score 0 everywhere.
class GpuPackingScore final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "gpu-packing"; }
  std::int64_t Score(const Workload& w, const NodeState& node) override;
};

// GPU clustering: keep pods of one GPU kind (shared, 1, 2, 4, 8 GPUs) together. Bands:
// (75,100] the node runs only this kind, (50,75] this kind among others, (25,50] no GPU
// pod yet, [0,25] only other kinds; within a band 25 * (8000 - free milli-GPU) / 8000, the
// simulator's formula: a node with fewer than 8 GPUs starts above 0.
class GpuClusteringScore final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "gpu-clustering"; }
  std::int64_t Score(const Workload& w, const NodeState& node) override;
};

}  // namespace gpufit
