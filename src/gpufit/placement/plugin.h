// The placement pipeline's plugin interfaces, after the Kubernetes scheduling framework:
// filters drop nodes that cannot take a pod, scores rank the rest, and a GPU picker
// chooses the GPUs inside the chosen node (what Alibaba's open-gpu-share Reserve does).
// Policies are compositions of these by name and weight (placement/registry.h).
#pragma once

#include <string_view>

#include "gpufit/core/rng.h"
#include "gpufit/placement/cluster_state.h"

namespace gpufit {

// Why a node cannot take a workload, for humans. `reason` is static text.
struct Verdict {
  enum class Kind { kFits, kNotNow, kNever } kind = Kind::kFits;  // kNever: waiting won't help
  std::string_view reason;

  bool fits() const { return kind == Kind::kFits; }
};

struct Plugin {
  virtual ~Plugin() = default;
  virtual std::string_view Name() const = 0;
};

// Pure: reads the node, never changes it.
struct FilterPlugin : Plugin {
  virtual Verdict Filter(const Workload& w, const NodeState& node) const = 0;
};

// Higher is better, called only on nodes every filter kept. The Kubernetes framework's
// range is 0..100 and the baseline plugins keep it; a plugin may use a wider range when it
// needs finer distinctions (its header says so). PreScore runs before the Score calls of a
// pod, also when no node will fit it (a plugin may prepare or cache there); plugins are
// therefore not thread-safe. A score reads the pod and the node only: the policy keeps
// scores between decisions and asks again only for nodes that changed (policy.h).
struct ScorePlugin : Plugin {
  virtual void PreScore(const Workload& /*w*/, const ClusterState& /*cluster*/) {}
  virtual std::int64_t Score(const Workload& w, const NodeState& node) = 0;
};

// Chooses the GPUs on a node that every filter kept: one GPU with enough free milli-GPU
// when the pod shares a GPU, gpu_count idle GPUs otherwise, none for a CPU-only pod.
struct GpuPicker : Plugin {
  virtual GpuSet Pick(const Workload& w, const NodeState& node, Rng& rng) = 0;
};

}  // namespace gpufit
