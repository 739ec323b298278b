// GPU pickers: which GPUs of the chosen node a pod takes (open-gpu-share's Reserve).
// Whole-GPU pods always take the lowest-numbered idle GPUs; the pickers differ for a pod
// that shares one GPU.
#pragma once

#include <memory>

#include "gpufit/placement/fgd.h"
#include "gpufit/placement/plugin.h"

namespace gpufit {

// The lowest-numbered gpu_count idle GPUs (none for a CPU-only pod). Precondition: enough.
GpuSet FirstIdleGpus(const Workload& w, const NodeState& node);

// Best fit: the GPU with the least free milli-GPU that still fits, lowest index on ties
// (the simulator's default, "best").
class BestFitGpu final : public GpuPicker {
 public:
  std::string_view Name() const override { return "best-fit-gpu"; }
  GpuSet Pick(const Workload& w, const NodeState& node, Rng& rng) override;
};

// Uniformly random among the GPUs that fit (random-fit's "random").
class RandomGpu final : public GpuPicker {
 public:
  std::string_view Name() const override { return "random-gpu"; }
  GpuSet Pick(const Workload& w, const NodeState& node, Rng& rng) override;
};

// The GPU FGD scores best (placement/fgd.h).
class FgdGpu final : public GpuPicker {
 public:
  explicit FgdGpu(std::shared_ptr<FgdModel> model) : model_(std::move(model)) {}
  std::string_view Name() const override { return "fgd-gpu"; }
  GpuSet Pick(const Workload& w, const NodeState& node, Rng& rng) override;

 private:
  std::shared_ptr<FgdModel> model_;
};

}  // namespace gpufit
