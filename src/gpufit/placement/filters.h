// Filter plugins: a node fits a pod when it has the CPU and memory (Kubernetes
// NodeResourcesFit), GPUs with enough free milli-GPU (open-gpu-share's filter: one GPU
// with gpu_per_gpu free for a sharing pod, gpu_count idle GPUs otherwise) and an accepted
// GPU type (`gpu_spec`). kNever when the node could not take the pod even empty.
#pragma once

#include "gpufit/placement/plugin.h"

namespace gpufit {

class CpuFits final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "cpu"; }
  Verdict Filter(const Workload& w, const NodeState& node) const override;
};

class MemoryFits final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "memory"; }
  Verdict Filter(const Workload& w, const NodeState& node) const override;
};

class GpuModelFits final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "gpu-model"; }
  Verdict Filter(const Workload& w, const NodeState& node) const override;
};

class GpuFits final : public FilterPlugin {
 public:
  std::string_view Name() const override { return "gpu"; }
  Verdict Filter(const Workload& w, const NodeState& node) const override;
};

// Whether `node` has GPUs for `w` now (the GpuFits rule), without building a verdict.
bool HasGpusFor(const Workload& w, const NodeState& node);

}  // namespace gpufit
