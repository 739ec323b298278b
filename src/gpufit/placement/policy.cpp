#include "gpufit/placement/policy.h"

#include <fmt/format.h>

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

Policy::Decision Policy::Place(const Workload& w, const ClusterState& cluster, Rng& rng, bool explain) {
  bool prescored = false;
  std::int64_t best = std::numeric_limits<std::int64_t>::min();
  std::uint64_t ties = 0;
  int chosen = -1;
  const std::size_t n = cluster.nodes().size();
  for (std::size_t k = 0; k < n; ++k) {
    const NodeState& node = cluster.node(order_.size() == n ? order_[k] : static_cast<int>(k));
    if (!Fits(w, node)) continue;
    if (!prescored) {
      for (WeightedScore& s : scores_) s.plugin->PreScore(w, cluster);
      prescored = true;
    }
    std::int64_t total = 0;
    for (WeightedScore& s : scores_) total += static_cast<std::int64_t>(s.weight) * s.plugin->Score(w, node);
    if (total > best) {
      best = total;
      chosen = node.id;
      ties = 1;
    } else if (total == best) {
      ++ties;
      if (tie_break_ == TieBreak::kRandom && rng.Below(ties) == 0) chosen = node.id;
    }
  }
  if (chosen < 0) return Explain(w, cluster, explain);
  Decision d;
  d.node = chosen;
  d.gpus = picker_->Pick(w, cluster.node(chosen), rng);
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
