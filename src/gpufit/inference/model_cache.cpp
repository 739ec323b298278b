#include "gpufit/inference/model_cache.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace gpufit {
namespace {

struct Node {
  double free_at = 0;
  std::vector<int> models;  // most recently used first
  bool Holds(int model) const { return std::find(models.begin(), models.end(), model) != models.end(); }
};

}  // namespace

CacheOutcome SimulateModelCache(const std::vector<CacheRequest>& requests, const ReplicaSchedule& nodes,
                                int capacity_models) {
  assert(capacity_models >= 1 && nodes.window_s > 0);
  CacheOutcome out;
  std::vector<Node> node;
  const auto count_at = [&](std::size_t w) {
    if (nodes.replicas.empty()) return 1;
    return std::max(1, nodes.replicas[std::min(w, nodes.replicas.size() - 1)]);
  };
  std::size_t last_window = 0;
  for (const CacheRequest& r : requests) {
    const auto w = static_cast<std::size_t>(std::max(0.0, r.arrival_s) / nodes.window_s);
    // Nodes above the lowest count since the previous request left, with their caches.
    int lowest = count_at(w);
    for (std::size_t v = std::min(last_window, w); v < w && v < nodes.replicas.size(); ++v)
      lowest = std::min(lowest, count_at(v));
    last_window = w;
    if (node.size() > static_cast<std::size_t>(lowest)) node.resize(static_cast<std::size_t>(lowest));
    node.resize(static_cast<std::size_t>(count_at(w)));
    std::size_t pick = node.size();
    for (std::size_t k = 0; k < node.size(); ++k) {  // a free holder, else the first free node
      if (node[k].free_at > r.arrival_s) continue;
      if (r.model >= 0 && node[k].Holds(r.model)) {
        pick = k;
        break;
      }
      if (pick == node.size()) pick = k;
    }
    if (pick == node.size()) {  // all busy: the node that frees first, a holder on a tie
      double soonest = std::numeric_limits<double>::infinity();
      for (std::size_t k = 0; k < node.size(); ++k) {
        const bool better = node[k].free_at < soonest || (node[k].free_at == soonest && r.model >= 0 &&
                                                          node[k].Holds(r.model) && !node[pick].Holds(r.model));
        if (better) {
          soonest = node[k].free_at;
          pick = k;
        }
      }
    }
    Node& n = node[pick];
    n.free_at = std::max(n.free_at, r.arrival_s) + r.service_s;
    if (r.model < 0) continue;
    ++out.requests;
    const auto at = std::find(n.models.begin(), n.models.end(), r.model);
    if (at != n.models.end()) {
      ++out.hits;
      n.models.erase(at);
    } else {
      ++out.misses;
      if (n.models.size() == static_cast<std::size_t>(capacity_models)) n.models.pop_back();
    }
    n.models.insert(n.models.begin(), r.model);
  }
  return out;
}

int KneeCapacity(const std::vector<CacheOutcome>& by_capacity, double share) {
  if (by_capacity.empty() || by_capacity.back().hits == 0) return 1;
  const double best = by_capacity.back().HitRate();
  for (std::size_t c = 0; c < by_capacity.size(); ++c) {
    if (by_capacity[c].HitRate() >= share * best) return static_cast<int>(c + 1);
  }
  return static_cast<int>(by_capacity.size());
}

}  // namespace gpufit
