// A placement policy: filters, weighted scores and a GPU picker, run as the Kubernetes
// scheduling framework runs them (filter every node, score the survivors, sum
// weight * score, take the best, ties broken by the policy's rule, then pick GPUs).
//
// The decision is that of visiting every node in the policy's node order, but a policy
// does not visit every node per decision: filters and scores read nothing but the pod and
// the node (plugin.h), so it keeps, per pod shape (every field of Workload), each node's
// value (weighted score when every filter passes) in a segment tree over the node order
// (internal/max_count_tree.h) and re-evaluates only the nodes the cluster changed since
// that shape's last decision (ClusterState::changed_nodes). A decision then costs the
// changed nodes times log(nodes) instead of every node: on openb copied 10 times (12,130
// nodes, 108,091 arrivals) one FGD saturation run went from 325 s to 3.0 s (BM_SaturationScaled). The
// trees of the least recently used shapes are dropped past kIndexBudgetBytes and rebuilt
// when their shape comes back. Against another ClusterState, or a copy, the index starts
// over (one visit of every node).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "gpufit/placement/internal/max_count_tree.h"
#include "gpufit/placement/plugin.h"

namespace gpufit {

// kRandom: uniformly among the best nodes (reservoir sampling, as kube-scheduler's
// selectHost: in node order, each node tying the best so far draws rng.Below(ties); the
// index makes the same draws). kFirst: the first best node in the policy's node order. The FGD simulator
// names nodes with a seeded random prefix and its scheduler keeps the first best node in
// name order, so its ties go to the first node of a seeded random order; gpufit
// reproduces that with SetNodeOrder (the FGD figures are only reached that way: a uniform
// tie-break costs FGD about 5 points of GPU allocation on the openb trace).
enum class TieBreak { kRandom, kFirst };

// The node order `simulate` breaks ties in (and `serve`, to make the same decisions): node
// ids 0..nodes-1 shuffled with `rng` (its first draws in a run).
inline std::vector<int> SeededNodeOrder(std::size_t nodes, Rng& rng) {
  std::vector<int> order(nodes);
  for (std::size_t i = 0; i < nodes; ++i) order[i] = static_cast<int>(i);
  rng.Shuffle(order);
  return order;
}

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
  void SetNodeOrder(std::vector<int> order) {
    order_ = std::move(order);
    node_at_.clear();  // the index starts over
    index_.clear();
    index_bytes_ = 0;
  }

  // The GPUs of `node` that `w` takes there, as Place chooses them (the policy's GPU picker);
  // `node` must fit `w` (Fits).
  GpuSet PickGpus(const Workload& w, const NodeState& node, Rng& rng) { return picker_->Pick(w, node, rng); }

  // Whether every filter lets `w` onto `node` as it stands (no score, no random draw).
  bool Fits(const Workload& w, const NodeState& node) const;

  // Why `w` cannot go onto `node` as it stands: the first refusing filter's verdict, a kNever
  // one before any kNotNow (waiting cannot help there); kFits when every filter passes.
  Verdict Check(const Workload& w, const NodeState& node) const;

  // The sum of weight * score of `w` on `node` when it fits, nullopt otherwise: what Place
  // compares (for tests and explanations; runs PreScore first).
  std::optional<std::int64_t> Value(const Workload& w, const ClusterState& cluster, const NodeState& node);
  // Value of each of `nodes` (ids), with PreScore run once: what a scheduler extender's
  // prioritize call needs.
  std::vector<std::optional<std::int64_t>> Values(const Workload& w, const ClusterState& cluster,
                                                  std::span<const int> nodes);

  // Above this many bytes of trees, the least recently used shape's is dropped. 256 MiB
  // holds about 500 shapes at 12,000 nodes (openb has 151 shapes).
  static constexpr std::size_t kIndexBudgetBytes = std::size_t{256} << 20;

 private:
  using ShapeKey = std::tuple<std::int64_t, std::int64_t, int, std::int64_t, bool, std::uint64_t>;
  struct ShapeIndex {
    internal::MaxCountTree tree{0};
    std::uint64_t journal_id = 0;          // ClusterState::journal_id() the tree is in step with
    std::size_t journal_pos = 0;           // changed_nodes() already applied
    std::optional<Verdict::Kind> failure;  // kNever / kNotNow when no node fits (static per shape)
    std::uint64_t last_use = 0;
  };

  Decision Explain(const Workload& w, const ClusterState& cluster, bool with_reasons) const;
  std::int64_t NodeValue(const Workload& w, const NodeState& node);  // after PreScore; kNone: no fit
  ShapeIndex& Index(const Workload& w, const ClusterState& cluster);
  int TieBreakRandom(const internal::MaxCountTree& tree, Rng& rng) const;  // the chosen position

  std::string name_;
  std::vector<std::unique_ptr<FilterPlugin>> filters_;
  std::vector<WeightedScore> scores_;
  std::unique_ptr<GpuPicker> picker_;
  TieBreak tie_break_;
  std::vector<int> order_;
  std::vector<int> node_at_;      // node id at each order position (order_, or by id)
  std::vector<std::size_t> pos_;  // order position of each node id
  std::map<ShapeKey, ShapeIndex> index_;
  std::size_t index_bytes_ = 0;
  std::uint64_t uses_ = 0;
};

}  // namespace gpufit
