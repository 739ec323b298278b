#include "gpufit/training/defrag.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <unordered_map>

namespace gpufit {
namespace {

constexpr int kInf = std::numeric_limits<int>::max() / 2;

class Search {
 public:
  Search(const std::vector<TrainingNode>& nodes, const std::vector<TrainingJob>& jobs,
         std::vector<std::size_t> placement, const TrainingJob& pending, const DefragOptions& options)
      : nodes_(nodes), jobs_(jobs), at_(std::move(placement)), pending_(pending), options_(options) {
    free_.resize(nodes.size());
    on_.resize(nodes.size());
    for (std::size_t n = 0; n < nodes.size(); ++n) free_[n] = nodes[n].gpu_count;
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      free_[at_[j]] -= jobs[j].gpu_count;
      if (jobs[j].checkpointing != Checkpointing::kNone) on_[at_[j]].push_back(j);
    }
    order_.resize(jobs.size());
    std::iota(order_.begin(), order_.end(), 0);
    const auto cost = [&](std::size_t j) {
      return jobs[j].gpu_count * (jobs[j].checkpoint_write + jobs[j].restore).count();
    };
    std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) { return cost(a) < cost(b); });
  }

  int free(std::size_t n) const { return free_[n]; }

  // Fewest movable jobs to take off node n so the pending job fits there.
  int MovesToClear(std::size_t n) const {
    if (!CanHost(nodes_[n], pending_)) return kInf;
    int shortfall = pending_.gpu_count - free_[n];
    if (shortfall <= 0) return 0;
    std::vector<int> sizes;
    for (const std::size_t j : on_[n]) sizes.push_back(jobs_[j].gpu_count);
    std::sort(sizes.rbegin(), sizes.rend());
    int count = 0;
    for (const int s : sizes) {
      shortfall -= s;
      ++count;
      if (shortfall <= 0) return count;
    }
    return kInf;
  }
  int Heuristic() const {
    int best = kInf;
    for (std::size_t n = 0; n < nodes_.size(); ++n) best = std::min(best, MovesToClear(n));
    return best;
  }
  std::optional<std::size_t> Host() const {
    for (std::size_t n = 0; n < nodes_.size(); ++n) {
      if (MovesToClear(n) == 0) return n;
    }
    return std::nullopt;
  }

  // Depth-first search within `bound` moves; true when a solution is in path_.
  bool Dfs(int depth, int bound, std::optional<std::size_t> last) {
    if (++expansions_ > options_.max_expansions) return false;  // every state visited counts
    const int h = Heuristic();
    if (h == 0) return true;
    if (depth + h > bound) return false;
    // A state already reached with no more moves cannot do better now.
    const auto [it, added] = seen_.emplace(Key(), depth);
    if (!added) {
      if (it->second <= depth) return false;
      it->second = depth;
    }
    for (const std::size_t j : order_) {
      if (last == j || jobs_[j].checkpointing == Checkpointing::kNone) continue;
      const std::size_t from = at_[j];
      for (std::size_t to = 0; to < nodes_.size(); ++to) {
        if (to == from || free_[to] < jobs_[j].gpu_count || !CanHost(nodes_[to], jobs_[j])) continue;
        Apply(j, to);
        path_.push_back({j, from, to});
        if (Dfs(depth + 1, bound, j)) return true;
        path_.pop_back();
        Apply(j, from);
        if (OverBudget()) return false;
      }
    }
    return false;
  }

  void ResetSeen() { seen_.clear(); }
  bool OverBudget() const { return expansions_ > options_.max_expansions; }
  std::int64_t expansions() const { return std::min(expansions_, options_.max_expansions); }
  const std::vector<DefragMove>& path() const { return path_; }

 private:
  void Apply(std::size_t j, std::size_t to) {
    std::vector<std::size_t>& from = on_[at_[j]];
    from.erase(std::find(from.begin(), from.end(), j));
    on_[to].push_back(j);
    free_[at_[j]] += jobs_[j].gpu_count;
    at_[j] = to;
    free_[to] -= jobs_[j].gpu_count;
  }
  std::string Key() const {
    std::string key(at_.size() * sizeof(std::uint32_t), '\0');
    for (std::size_t j = 0; j < at_.size(); ++j) {
      const auto v = static_cast<std::uint32_t>(at_[j]);
      std::copy_n(reinterpret_cast<const char*>(&v), sizeof v, key.data() + j * sizeof v);
    }
    return key;
  }

  const std::vector<TrainingNode>& nodes_;
  const std::vector<TrainingJob>& jobs_;
  std::vector<std::size_t> at_;
  const TrainingJob& pending_;
  const DefragOptions& options_;
  std::vector<int> free_;
  std::vector<std::vector<std::size_t>> on_;  // movable jobs per node
  std::vector<std::size_t> order_;
  std::vector<DefragMove> path_;
  std::unordered_map<std::string, int> seen_;
  std::int64_t expansions_ = 0;
};

}  // namespace

Result<DefragResult> PlanDefragmentation(const std::vector<TrainingNode>& nodes, const std::vector<TrainingJob>& jobs,
                                         const std::vector<std::size_t>& placement, const TrainingJob& pending,
                                         const DefragOptions& options) {
  if (placement.size() != jobs.size()) {
    return InvalidArgument("{} placements for {} running jobs", placement.size(), jobs.size());
  }
  std::vector<int> used(nodes.size(), 0);
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    if (placement[j] >= nodes.size()) return InvalidArgument("job {}: placed on an unknown node", jobs[j].name);
    used[placement[j]] += jobs[j].gpu_count;
  }
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    if (used[n] > nodes[n].gpu_count) {
      return InvalidArgument("node {}: its jobs use {} GPUs of {}", nodes[n].name, used[n], nodes[n].gpu_count);
    }
  }
  Search search(nodes, jobs, placement, pending, options);
  DefragResult r;
  const int h0 = search.Heuristic();
  if (h0 == 0) {
    r.target = search.Host();
    return r;
  }
  int total_free = 0;
  for (std::size_t n = 0; n < nodes.size(); ++n) total_free += nodes[n].gpu_count - used[n];
  const bool any_host =
      std::any_of(nodes.begin(), nodes.end(), [&](const TrainingNode& n) { return CanHost(n, pending); });
  if (!any_host) {
    r.outcome = DefragResult::Outcome::kImpossible;
    r.reason = fmt::format("no node of {} has {} GPUs",
                           pending.gpu_model.empty() ? std::string("any model") : pending.gpu_model, pending.gpu_count);
    return r;
  }
  if (total_free < pending.gpu_count) {  // moves keep the free total: a host can never reach it
    r.outcome = DefragResult::Outcome::kImpossible;
    r.reason = fmt::format("only {} GPUs are free in the whole cluster; {} needs {}", total_free, pending.name,
                           pending.gpu_count);
    return r;
  }
  if (h0 >= kInf) {
    r.outcome = DefragResult::Outcome::kImpossible;
    r.reason =
        fmt::format("no node of {} can ever host {} GPUs: jobs that cannot checkpoint, or too few GPUs, hold them",
                    pending.gpu_model.empty() ? std::string("any model") : pending.gpu_model, pending.gpu_count);
    return r;
  }
  for (int bound = h0; bound <= options.max_moves; ++bound) {
    search.ResetSeen();
    if (search.Dfs(0, bound, std::nullopt)) {
      r.outcome = DefragResult::Outcome::kMoves;
      r.moves = search.path();
      r.target = search.Host();  // the search stops in the state its moves reach
      for (const DefragMove& m : r.moves) {
        r.cost_gpu_hours += jobs[m.job].gpu_count * (jobs[m.job].checkpoint_write + jobs[m.job].restore).count() / 3600;
      }
      r.expansions = search.expansions();
      return r;
    }
    if (search.OverBudget()) {
      r.outcome = DefragResult::Outcome::kBudgetExhausted;
      r.reason = fmt::format("search budget of {} states spent at depth {}", options.max_expansions, bound);
      r.expansions = search.expansions();
      return r;
    }
  }
  r.outcome = DefragResult::Outcome::kNoneWithinLimit;
  r.reason = fmt::format("no sequence of at most {} migrations makes room", options.max_moves);
  r.expansions = search.expansions();
  return r;
}

}  // namespace gpufit
