#include "gpufit/placement/policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>

namespace gpufit {

Policy::Policy(std::string name, std::vector<std::unique_ptr<FilterPlugin>> filters, std::vector<WeightedScore> scores,
               std::unique_ptr<GpuPicker> picker, TieBreak tie_break)
    : name_(std::move(name)),
      filters_(std::move(filters)),
      scores_(std::move(scores)),
      picker_(std::move(picker)),
      tie_break_(tie_break) {}

bool Policy::Fits(const Workload& w, const NodeState& node) const {
  for (const auto& f : filters_) {
    if (!f->Filter(w, node).fits()) return false;
  }
  return true;
}

Verdict Policy::Check(const Workload& w, const NodeState& node) const {
  Verdict first;
  for (const auto& f : filters_) {
    const Verdict v = f->Filter(w, node);
    if (v.kind == Verdict::Kind::kNever) return v;
    if (!v.fits() && first.fits()) first = v;
  }
  return first;
}

std::vector<std::optional<std::int64_t>> Policy::Values(const Workload& w, const ClusterState& cluster,
                                                        std::span<const int> nodes) {
  for (WeightedScore& s : scores_) s.plugin->PreScore(w, cluster);
  std::vector<std::optional<std::int64_t>> out;
  out.reserve(nodes.size());
  for (const int id : nodes) {
    const std::int64_t v = NodeValue(w, cluster.node(id));
    out.push_back(v == internal::MaxCountTree::kNone ? std::nullopt : std::optional<std::int64_t>(v));
  }
  return out;
}

std::int64_t Policy::NodeValue(const Workload& w, const NodeState& node) {
  if (!Fits(w, node)) return internal::MaxCountTree::kNone;
  std::int64_t total = 0;
  for (WeightedScore& s : scores_) total += static_cast<std::int64_t>(s.weight) * s.plugin->Score(w, node);
  return total;
}

std::optional<std::int64_t> Policy::Value(const Workload& w, const ClusterState& cluster, const NodeState& node) {
  for (WeightedScore& s : scores_) s.plugin->PreScore(w, cluster);
  const std::int64_t v = NodeValue(w, node);
  if (v == internal::MaxCountTree::kNone) return std::nullopt;
  return v;
}

Policy::ShapeIndex& Policy::Index(const Workload& w, const ClusterState& cluster) {
  const std::size_t n = cluster.nodes().size();
  if (node_at_.size() != n) {  // first decision, or another cluster: the node order by position
    node_at_.resize(n);
    pos_.assign(n, 0);
    for (std::size_t k = 0; k < n; ++k) node_at_[k] = order_.size() == n ? order_[k] : static_cast<int>(k);
    for (std::size_t k = 0; k < n; ++k) pos_[static_cast<std::size_t>(node_at_[k])] = k;
    index_.clear();
    index_bytes_ = 0;
  }
  const ShapeKey key{w.cpu.value,         w.memory.value, w.gpu_count,
                     w.gpu_per_gpu.value, w.any_model,    w.any_model ? 0 : w.model_mask};
  auto it = index_.find(key);
  if (it == index_.end()) {
    const std::size_t bytes = internal::MaxCountTree::MemoryBytesFor(n);
    while (!index_.empty() && index_bytes_ + bytes > kIndexBudgetBytes) {
      auto oldest = std::min_element(index_.begin(), index_.end(), [](const auto& a, const auto& b) {
        return a.second.last_use < b.second.last_use;
      });
      index_bytes_ -= oldest->second.tree.MemoryBytes();
      index_.erase(oldest);
    }
    it = index_.emplace(key, ShapeIndex{}).first;
    it->second.tree = internal::MaxCountTree(n);
    index_bytes_ += it->second.tree.MemoryBytes();
  }
  ShapeIndex& ix = it->second;
  ix.last_use = ++uses_;
  for (WeightedScore& s : scores_) s.plugin->PreScore(w, cluster);
  const std::vector<int>& changed = cluster.changed_nodes();
  if (ix.journal_id != cluster.journal_id() || changed.size() - ix.journal_pos >= n) {
    ix.tree.Fill([&](std::size_t k) { return NodeValue(w, cluster.node(node_at_[k])); });
    if (ix.journal_id != cluster.journal_id()) ix.failure.reset();
  } else {
    for (std::size_t c = ix.journal_pos; c < changed.size(); ++c) {
      const int id = changed[c];
      ix.tree.Set(pos_[static_cast<std::size_t>(id)], NodeValue(w, cluster.node(id)));
    }
  }
  ix.journal_id = cluster.journal_id();
  ix.journal_pos = changed.size();
  return ix;
}

// The draws and the choice of a scan in node order that keeps the best value so far and,
// at each node tying it, replaces its choice when rng.Below(ties) == 0. The running best
// steps through the values of the "records" (positions holding more than every earlier
// one); at each step the positions tying it before the next record are counted on the
// tree, and only the last step's draws choose.
int Policy::TieBreakRandom(const internal::MaxCountTree& tree, Rng& rng) const {
  using Tree = internal::MaxCountTree;
  std::size_t from = tree.FirstAbove(0, Tree::kNone);
  while (true) {
    const std::int64_t level = tree.Get(from);
    const std::size_t next = tree.FirstAbove(from, level);
    const std::int64_t ties = tree.MaxCount(from, next == Tree::kNpos ? tree.size() : next).second;
    std::int64_t chosen = 0;  // index among the ties, in node order
    for (std::int64_t t = 2; t <= ties; ++t) {
      if (rng.Below(static_cast<std::uint64_t>(t)) == 0) chosen = t - 1;
    }
    if (next == Tree::kNpos) return static_cast<int>(tree.KthOfMax(from, level, chosen));
    from = next;
  }
}

Policy::Decision Policy::Place(const Workload& w, const ClusterState& cluster, Rng& rng, bool explain) {
  ShapeIndex& ix = Index(w, cluster);
  const internal::MaxCountTree& tree = ix.tree;
  if (tree.Max() == internal::MaxCountTree::kNone) {
    if (explain) return Explain(w, cluster, true);
    // Whether some node could ever take the pod depends on capacities only (kNever: waiting
    // won't help), so it is found once per shape.
    if (!ix.failure) ix.failure = Explain(w, cluster, false).verdict.kind;
    Decision d;
    d.verdict = {*ix.failure, "no node fits"};
    return d;
  }
  const std::size_t pos = tie_break_ == TieBreak::kRandom ? static_cast<std::size_t>(TieBreakRandom(tree, rng))
                                                          : tree.FirstAbove(0, tree.Max() - 1);
  Decision d;
  d.node = node_at_[pos];
  d.gpus = picker_->Pick(w, cluster.node(d.node), rng);
  return d;
}

Policy::Decision Policy::Explain(const Workload& w, const ClusterState& cluster, bool with_reasons) const {
  std::map<std::string_view, int> reasons;
  bool ever = false;  // some node could take the pod once others leave
  for (const NodeState& node : cluster.nodes()) {
    bool never = false;
    std::string_view first_reason;
    for (const auto& f : filters_) {
      const Verdict v = f->Filter(w, node);
      if (v.fits()) continue;
      never = never || v.kind == Verdict::Kind::kNever;
      if (first_reason.empty()) first_reason = v.reason;
    }
    if (with_reasons) ++reasons[first_reason];
    ever = ever || !never;
    if (ever && !with_reasons) break;
  }
  Decision d;
  d.verdict = {ever ? Verdict::Kind::kNotNow : Verdict::Kind::kNever, "no node fits"};
  if (!with_reasons) return d;
  d.why = fmt::format("0/{} nodes fit:", cluster.nodes().size());
  bool first = true;
  for (const auto& [reason, count] : reasons) {
    d.why += fmt::format("{} {} {}", first ? "" : ",", count, reason);
    first = false;
  }
  return d;
}

}  // namespace gpufit
