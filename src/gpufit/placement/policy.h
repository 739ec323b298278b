// A placement policy: filters, weighted scores and a GPU picker, run as the Kubernetes
// scheduling framework runs them (filter every node, score the survivors, sum
// weight * score, take the best, ties broken by the policy's rule, then pick GPUs).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gpufit/placement/plugin.h"

namespace gpufit {

// kRandom: uniformly among the best nodes (reservoir sampling, as kube-scheduler's
// selectHost). kFirst: the first best node in the policy's node order. The FGD simulator
// names nodes with a seeded random prefix and its scheduler keeps the first best node in
// name order, so its ties go to the first node of a seeded random order; gpufit
// reproduces that with SetNodeOrder (the FGD figures are only reached that way: a uniform
// tie-break costs FGD about 5 points of GPU allocation on the openb trace).
enum class TieBreak { kRandom, kFirst };

struct WeightedScore {
  std::unique_ptr<ScorePlugin> plugin;
  int weight = 1;
};

class Policy {
 public:
  Policy(std::string name, std::vector<std::unique_ptr<FilterPlugin>> filters, std::vector<WeightedScore> scores,
         std::unique_ptr<GpuPicker> picker, TieBreak tie_break);

  struct Decision {
    int node = -1;  // < 0: no node fits
    GpuSet gpus = 0;
    Verdict verdict;  // when no node fits: kNever if no node could ever take the pod
    std::string why;  // when no node fits, e.g. "0/3 nodes fit: 2 insufficient cpu, 1 too few idle GPUs"
  };

  // Chooses a node and GPUs for `w`; changes nothing in `cluster`. Uses `rng` for ties
  // and random choices only. Without `explain`, a failed decision has its verdict kind but
  // no reason text (cheaper, for simulations).
  Decision Place(const Workload& w, const ClusterState& cluster, Rng& rng, bool explain = true);

  const std::string& name() const { return name_; }

  // The order nodes are visited in (a permutation of node ids). Default: by id.
  void SetNodeOrder(std::vector<int> order) { order_ = std::move(order); }

  // Whether every filter lets `w` onto `node` as it stands (no score, no random draw).
  bool Fits(const Workload& w, const NodeState& node) const;

 private:
  Decision Explain(const Workload& w, const ClusterState& cluster, bool with_reasons) const;

  std::string name_;
  std::vector<std::unique_ptr<FilterPlugin>> filters_;
  std::vector<WeightedScore> scores_;
  std::unique_ptr<GpuPicker> picker_;
  TieBreak tie_break_;
  std::vector<int> order_;
};

}  // namespace gpufit
