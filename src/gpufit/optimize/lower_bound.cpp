#include "gpufit/optimize/lower_bound.h"

#include <algorithm>
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

namespace {

bool Conflict(const PodSeries& a, const PodSeries& b, double capacity, std::int64_t collision_limit) {
  const std::size_t lo = std::max(a.first, b.first), hi = std::min(a.last, b.last);
  std::int64_t collisions = 0;
  for (std::size_t t = lo; t <= hi && lo <= hi; ++t) {
    if (static_cast<double>(a.fb_used_mib[t]) + b.fb_used_mib[t] > capacity) return true;
    collisions += static_cast<double>(a.gpu_util_pct[t]) + b.gpu_util_pct[t] > 100.0;
  }
  return collisions > collision_limit;
}

std::size_t GreedyClique(const std::vector<std::vector<bool>>& conflict) {
  const std::size_t n = conflict.size();
  std::vector<std::size_t> degree(n, 0), order(n);
  for (std::size_t i = 0; i < n; ++i)
    degree[i] = static_cast<std::size_t>(std::count(conflict[i].begin(), conflict[i].end(), true));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return degree[a] > degree[b]; });
  std::size_t best = n > 0 ? 1 : 0;
  for (std::size_t seed : order) {
    std::vector<std::size_t> clique = {seed};
    for (std::size_t v : order) {
      if (v == seed) continue;
      if (std::all_of(clique.begin(), clique.end(), [&](std::size_t c) { return conflict[c][v]; })) clique.push_back(v);
    }
    best = std::max(best, clique.size());
  }
  return best;
}

}  // namespace

GpuLowerBound LowerBound(const Telemetry& telemetry, const std::vector<std::size_t>& pods, double capacity_mib,
                         std::int64_t collision_limit) {
  GpuLowerBound out;
  std::vector<double> sizes;
  for (std::size_t t = 0; t < telemetry.samples; ++t) {
    sizes.clear();
    for (std::size_t p : pods) {
      const float m = telemetry.pods[p].fb_used_mib[t];
      if (m > 0) sizes.push_back(m);
    }
    out.per_sample_l2 = std::max(out.per_sample_l2, MartelloTothL2(sizes, capacity_mib));
  }
  const double n = static_cast<double>(pods.size());
  if (n * n / 2 * static_cast<double>(telemetry.samples) <= 2e8) {
    std::vector<std::vector<bool>> conflict(pods.size(), std::vector<bool>(pods.size(), false));
    for (std::size_t i = 0; i < pods.size(); ++i) {
      for (std::size_t j = i + 1; j < pods.size(); ++j) {
        const bool c = Conflict(telemetry.pods[pods[i]], telemetry.pods[pods[j]], capacity_mib, collision_limit);
        conflict[i][j] = conflict[j][i] = c;
      }
    }
    out.conflict_clique = GreedyClique(conflict);
  }
  return out;
}

}  // namespace gpufit
