// GPU pickers: which GPUs of the chosen node a pod takes (open-gpu-share's Reserve).
// Whole-GPU pods always take the lowest-numbered idle GPUs; the pickers differ for a pod
// that shares one GPU.
#pragma once

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

// FGD's and gpufit's own pickers sit with their models (placement/fgd.h,
// placement/gpufit_policy.h).

}  // namespace gpufit
