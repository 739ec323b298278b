#include "gpufit/optimize/lower_bound.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <numeric>

namespace gpufit {

std::size_t MartelloTothL2(std::vector<double> sizes, double capacity) {
  if (sizes.empty()) return 0;
  std::sort(sizes.begin(), sizes.end(), std::greater<>());  // descending
  std::vector<double> prefix(sizes.size() + 1, 0.0);
  for (std::size_t i = 0; i < sizes.size(); ++i) prefix[i + 1] = prefix[i] + sizes[i];
  // Sizes are descending: lower_bound finds the first size <= x, upper_bound the first < x.
  auto count_above = [&](double x) {  // sizes > x
    return static_cast<std::size_t>(std::lower_bound(sizes.begin(), sizes.end(), x, std::greater<>()) - sizes.begin());
  };
  auto count_at_least = [&](double x) {  // sizes >= x
    return static_cast<std::size_t>(std::upper_bound(sizes.begin(), sizes.end(), x, std::greater<>()) - sizes.begin());
  };
  const double half = capacity / 2;
  std::vector<double> ks = {0.0};
  for (double s : sizes) {
    if (s <= half && s != ks.back()) ks.push_back(s);  // distinct sizes, descending
  }
  // Every k gives a valid bound; on many items a spread of 64 candidates (the largest
  // and smallest included) keeps it cheap.
  if (ks.size() > 65) {
    std::vector<double> spread = {0.0};
    for (std::size_t i = 0; i < 64; ++i) spread.push_back(ks[1 + (ks.size() - 2) * i / 63]);
    ks = std::move(spread);
  }
  std::size_t best = 0;
  for (double k : ks) {
    const std::size_t n1 = count_above(capacity - k);  // J1: s > C - k
    const std::size_t n12 = count_above(half);         // J1 + J2: s > C/2
    const std::size_t n123 = count_at_least(k);        // J1 + J2 + J3: s >= k (k > 0)
    const std::size_t end3 = k > 0 ? n123 : sizes.size();
    const double sum_j2 = prefix[n12] - prefix[n1];
    const double sum_j3 = prefix[end3] - prefix[n12];
    const double n2 = static_cast<double>(n12 - n1);
    const double rest = std::ceil((sum_j3 - (n2 * capacity - sum_j2)) / capacity - 1e-9);
    best = std::max(best, n12 + static_cast<std::size_t>(std::max(0.0, rest)));
  }
  return best;
}

bool PodsConflict(const PodSeries& a, const PodSeries& b, double capacity, std::int64_t collision_limit) {
  const std::size_t lo = std::max(a.first, b.first), hi = std::min(a.last, b.last);
  std::int64_t collisions = 0;
  for (std::size_t t = lo; t <= hi && lo <= hi; ++t) {
    if (static_cast<double>(a.fb_used_mib[t]) + b.fb_used_mib[t] > capacity) return true;
    collisions += static_cast<double>(a.gpu_util_pct[t]) + b.gpu_util_pct[t] > 100.0;
  }
  return collisions > collision_limit;
}

namespace {

// An undirected graph as rows of bits: row v has bit u set when u and v are adjacent.
class BitGraph {
 public:
  explicit BitGraph(std::size_t n) : n_(n), words_((n + 63) / 64), bits_(n * words_, 0) {}
  std::size_t size() const { return n_; }
  std::size_t words() const { return words_; }
  const std::uint64_t* row(std::size_t v) const { return bits_.data() + v * words_; }
  bool has(std::size_t v, std::size_t u) const { return (row(v)[u / 64] >> (u % 64)) & 1u; }
  void add(std::size_t v, std::size_t u) {
    bits_[v * words_ + u / 64] |= std::uint64_t{1} << (u % 64);
    bits_[u * words_ + v / 64] |= std::uint64_t{1} << (v % 64);
  }
  std::size_t degree(std::size_t v) const {
    std::size_t d = 0;
    for (std::size_t w = 0; w < words_; ++w) d += static_cast<std::size_t>(std::popcount(row(v)[w]));
    return d;
  }

 private:
  std::size_t n_, words_;
  std::vector<std::uint64_t> bits_;
};

}  // namespace

CliqueSearch GreedyClique(const std::vector<std::vector<bool>>& adjacent, std::int64_t work_limit) {
  const std::size_t n = adjacent.size();
  std::vector<std::size_t> degree(n, 0), order(n);
  for (std::size_t v = 0; v < n; ++v)
    degree[v] = static_cast<std::size_t>(std::count(adjacent[v].begin(), adjacent[v].end(), true));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return degree[a] > degree[b]; });
  // Relabelled so that index order is the visiting order: the next vertex of the greedy
  // scan is the lowest set bit of the candidate set.
  BitGraph g(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j)
      if (adjacent[order[i]][order[j]]) g.add(i, j);
  }
  CliqueSearch out;
  out.best = n > 0 ? 1 : 0;
  const std::size_t words = g.words();
  std::vector<std::uint64_t> candidates(words);
  for (std::size_t seed = 0; seed < n; ++seed) {
    // A clique through `seed` has at most degree + 1 vertices, and degrees only fall from
    // here: no later seed can beat the best.
    if (degree[order[seed]] + 1 <= out.best) {
      out.seeds_tried = n;
      break;
    }
    if (out.seeds_tried > 0 && out.work >= work_limit) break;  // the first seed always runs
    ++out.seeds_tried;
    std::copy(g.row(seed), g.row(seed) + words, candidates.begin());
    std::size_t size = 1, left = degree[order[seed]], next = 0;  // next: a word at or below the lowest set bit
    while (left > 0 && size + left > out.best) {
      while (candidates[next] == 0) ++next;
      const std::size_t v = next * 64 + static_cast<std::size_t>(std::countr_zero(candidates[next]));
      ++size;
      left = 0;
      const std::uint64_t* row = g.row(v);
      for (std::size_t w = next; w < words; ++w) {
        candidates[w] &= row[w];
        left += static_cast<std::size_t>(std::popcount(candidates[w]));
      }
      out.work += static_cast<std::int64_t>(words - next);
    }
    out.best = std::max(out.best, size);
  }
  out.seeds = n;
  return out;
}

GpuLowerBound LowerBound(const Telemetry& telemetry, const std::vector<std::size_t>& pods, double capacity_mib,
                         std::int64_t collision_limit, const LowerBoundLimits& limits) {
  GpuLowerBound out;
  // L2 at a sample is at most (items > C/2) + ceil(sum of the others / C) (J1 + J2 are the
  // items > C/2, J3 holds only items <= C/2 and J2's free room is >= 0; the slack covers
  // summing in another order). That cap costs one
  // pass over the series, pod by pod; L2 itself (a sort) runs only on the samples, highest
  // cap first, whose cap can still beat the best so far: the same maximum.
  std::vector<double> small_sum(telemetry.samples, 0.0);
  std::vector<std::size_t> big(telemetry.samples, 0);
  for (std::size_t p : pods) {
    const std::vector<float>& m = telemetry.pods[p].fb_used_mib;
    for (std::size_t t = 0; t < telemetry.samples; ++t) {
      if (m[t] > capacity_mib / 2) {
        ++big[t];
      } else {
        small_sum[t] += m[t];
      }
    }
  }
  std::vector<std::size_t> cap(telemetry.samples), by_cap(telemetry.samples);
  for (std::size_t t = 0; t < telemetry.samples; ++t)
    cap[t] = big[t] + static_cast<std::size_t>(std::ceil(small_sum[t] / capacity_mib + 1e-6));
  std::iota(by_cap.begin(), by_cap.end(), 0);
  std::stable_sort(by_cap.begin(), by_cap.end(), [&](std::size_t a, std::size_t b) { return cap[a] > cap[b]; });
  std::vector<double> sizes;
  for (std::size_t t : by_cap) {
    if (cap[t] <= out.per_sample_l2) break;
    sizes.clear();
    for (std::size_t p : pods) {
      const float m = telemetry.pods[p].fb_used_mib[t];
      if (m > 0) sizes.push_back(m);
    }
    out.per_sample_l2 = std::max(out.per_sample_l2, MartelloTothL2(sizes, capacity_mib));
  }
  out.clique_pods = pods.size();
  const double n = static_cast<double>(pods.size());
  if (n * n / 2 * static_cast<double>(telemetry.samples) > limits.max_pair_samples) return out;
  std::vector<std::vector<bool>> conflict(pods.size(), std::vector<bool>(pods.size(), false));
  for (std::size_t i = 0; i < pods.size(); ++i) {
    for (std::size_t j = i + 1; j < pods.size(); ++j) {
      const bool c = PodsConflict(telemetry.pods[pods[i]], telemetry.pods[pods[j]], capacity_mib, collision_limit);
      conflict[i][j] = conflict[j][i] = c;
    }
  }
  const CliqueSearch clique = GreedyClique(conflict, limits.clique_work);
  out.clique_graph_built = true;
  out.conflict_clique = clique.best;
  out.clique_seeds_tried = clique.seeds_tried;
  return out;
}

}  // namespace gpufit
