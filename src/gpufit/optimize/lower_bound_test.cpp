#include "gpufit/optimize/lower_bound.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "gpufit/optimize/test_colocation_oracle.h"

namespace gpufit {
namespace {

TEST(MartelloTothL2, CountsItemsLargerThanHalfSeparately) {
  // Three items of 60 into 100: no two share, so 3 (the volume bound says 2).
  EXPECT_EQ(MartelloTothL2({60, 60, 60}, 100), 3u);
}

TEST(MartelloTothL2, EqualsVolumeBoundForSmallItems) {
  // 10 items of 25 into 100: ceil(250 / 100) = 3.
  EXPECT_EQ(MartelloTothL2(std::vector<double>(10, 25), 100), 3u);
}

TEST(MartelloTothL2, UsesTheParameterK) {
  // 70, 70, 40, 40 into 100, k = 0: J2 = {70, 70} leaves 60 free, J3 = {40, 40} sums to 80:
  // 2 + ceil((80 - 60) / 100) = 3 (a 40 cannot join a 70).
  EXPECT_EQ(MartelloTothL2({70, 70, 40, 40}, 100), 3u);
  // 70, 70, 30, 30: the 30s fill the gaps exactly: 2.
  EXPECT_EQ(MartelloTothL2({70, 70, 30, 30}, 100), 2u);
  // 80, 80, 80, 25, 25, 25: k = 25 -> J1 = {s > 75} = 3 items, J3 = 75 -> 3 + 1 = 4.
  EXPECT_EQ(MartelloTothL2({80, 80, 80, 25, 25, 25}, 100), 4u);
}

TEST(MartelloTothL2, ItemsEqualToTheThresholdsCountOnTheRightSide) {
  // 50, 50 into 100 share one bin: 50 is not > C/2, so both are in J3 -> ceil(100/100) = 1.
  EXPECT_EQ(MartelloTothL2({50, 50}, 100), 1u);
  // 70, 30, 30 into 100, k = 30: 70 is not > C - k = 70, so J2 = {70} (free 30), J3 = {30, 30}:
  // 1 + ceil((60 - 30) / 100) = 2 = the optimum (70 + 30, 30).
  EXPECT_EQ(MartelloTothL2({70, 30, 30}, 100), 2u);
}

TEST(MartelloTothL2, ManySmallItemsStillTryTheLargestSmallItem) {
  // 80, 80, 80, 21 and 65 items of 0.1 into 100: k = 21 puts the 80s in J1 and 21 + 6.5
  // in J3: 3 + ceil(27.5 / 100) = 4 (optimum 4: 21 fits no 80's gap of 20).
  std::vector<double> sizes = {80, 80, 80, 21};
  for (int i = 0; i < 65; ++i) sizes.push_back(0.1 + i * 1e-6);  // distinct, so the spread path runs
  EXPECT_EQ(MartelloTothL2(sizes, 100), 4u);
}

// Three identical pods over two samples.
Telemetry ThreePods(std::vector<float> fb_used_mib, std::vector<float> gpu_util_pct) {
  Telemetry t;
  t.samples = 2;
  for (int i = 0; i < 3; ++i) {
    t.pods.push_back(
        {.pod = "p" + std::to_string(i), .fb_used_mib = fb_used_mib, .gpu_util_pct = gpu_util_pct, .last = 1});
  }
  return t;
}

TEST(LowerBound, MaxOverSamplesOfPerSampleBound) {
  // At sample 1 three pods of 60 need 3 GPUs of 100.
  const GpuLowerBound lb = LowerBound(ThreePods({10, 60}, {0, 0}), {0, 1, 2}, 100, 0);
  EXPECT_EQ(lb.per_sample_l2, 3u);
  EXPECT_EQ(lb.conflict_clique, 3u);
  EXPECT_EQ(lb.gpus(), 3u);
}

TEST(LowerBound, ConflictCliqueCountsComputeConflicts) {
  // Memory is tiny; every pair collides at both samples, no collision allowed: 3 GPUs.
  const GpuLowerBound lb = LowerBound(ThreePods({1, 1}, {60, 60}), {0, 1, 2}, 100, 0);
  EXPECT_EQ(lb.per_sample_l2, 1u);
  EXPECT_EQ(lb.conflict_clique, 3u);
}

// Largest clique by trying every vertex subset.
std::size_t MaxClique(const std::vector<std::vector<bool>>& adjacent) {
  const std::size_t n = adjacent.size();
  std::size_t best = 0;
  for (std::uint32_t set = 0; set < (1u << n); ++set) {
    bool clique = true;
    for (std::size_t i = 0; i < n && clique; ++i)
      for (std::size_t j = i + 1; j < n && clique; ++j)
        if (((set >> i) & 1u) && ((set >> j) & 1u) && !adjacent[i][j]) clique = false;
    if (clique) best = std::max<std::size_t>(best, static_cast<std::size_t>(std::popcount(set)));
  }
  return best;
}

// The method as documented, written plainly: a greedy clique from every seed, vertices
// visited by degree (descending, ties by index).
std::size_t PlainGreedyClique(const std::vector<std::vector<bool>>& adjacent) {
  const std::size_t n = adjacent.size();
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  auto degree = [&](std::size_t v) { return std::count(adjacent[v].begin(), adjacent[v].end(), true); };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return degree(a) > degree(b); });
  std::size_t best = 0;
  for (std::size_t seed : order) {
    std::vector<std::size_t> clique = {seed};
    for (std::size_t v : order) {
      if (v != seed && std::all_of(clique.begin(), clique.end(), [&](std::size_t c) { return adjacent[c][v]; }))
        clique.push_back(v);
    }
    best = std::max(best, clique.size());
  }
  return best;
}

std::vector<std::vector<bool>> RandomGraph(std::size_t n, double density, std::mt19937_64& rng) {
  std::vector<std::vector<bool>> g(n, std::vector<bool>(n, false));
  std::bernoulli_distribution edge(density);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) g[i][j] = g[j][i] = edge(rng);
  return g;
}

TEST(GreedyClique, MatchesThePlainMethodAndNeverExceedsTheMaximumClique) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t n = 1 + static_cast<std::size_t>(trial % 14);
    const auto g = RandomGraph(n, 0.2 + 0.6 * (trial % 5) / 4.0, rng);
    const CliqueSearch c = GreedyClique(g, 1'000'000);
    EXPECT_EQ(c.best, PlainGreedyClique(g)) << "trial " << trial;
    EXPECT_LE(c.best, MaxClique(g)) << "trial " << trial;
    EXPECT_EQ(c.seeds_tried, n);
  }
}

TEST(GreedyClique, GraphsWiderThanOneWord) {
  // 130 vertices (three 64-bit words): a planted clique of 70 (vertices 30..99) in a sparse graph.
  std::mt19937_64 rng(5);
  auto g = RandomGraph(130, 0.05, rng);
  for (std::size_t i = 30; i < 100; ++i)
    for (std::size_t j = i + 1; j < 100; ++j) g[i][j] = g[j][i] = true;
  const CliqueSearch c = GreedyClique(g, 1'000'000);
  EXPECT_EQ(c.best, PlainGreedyClique(g));
  EXPECT_GE(c.best, 70u);
}

TEST(GreedyClique, StopsAtTheWorkLimitWithAValidClique) {
  // The complete graph minus a perfect matching on 200 vertices: the maximum clique is 100
  // (one of each pair), every degree is 198, so the degree test never ends the search.
  const std::size_t n = 200;
  std::vector<std::vector<bool>> g(n, std::vector<bool>(n, true));
  for (std::size_t i = 0; i < n; ++i) g[i][i] = false;
  for (std::size_t i = 0; i < n; i += 2) g[i][i + 1] = g[i + 1][i] = false;
  const CliqueSearch full = GreedyClique(g, 1'000'000'000);
  EXPECT_EQ(full.best, 100u);
  EXPECT_EQ(full.seeds_tried, n);
  // One seed grows 99 joins of 4 words (200 vertices): a limit of 1,000 words stops after 3 seeds.
  const CliqueSearch cut = GreedyClique(g, 1'000);
  EXPECT_LT(cut.seeds_tried, n);
  EXPECT_GE(cut.seeds_tried, 1u);
  EXPECT_LE(cut.work, 1'000 + 4 * 100);
  EXPECT_EQ(cut.best, 100u);  // each greedy clique here is maximum
}

TEST(LowerBound, NeverAboveTheOptimumOnRandomSmallClusters) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<float> mem(0, 70), util(0, 100);
  for (int trial = 0; trial < 150; ++trial) {
    Telemetry t;
    t.samples = 1 + static_cast<std::size_t>(trial % 4);
    const std::size_t n = 2 + static_cast<std::size_t>(trial % 7);
    for (std::size_t p = 0; p < n; ++p) {
      PodSeries s{.pod = "p" + std::to_string(p), .fb_used_mib = {}, .gpu_util_pct = {}, .last = t.samples - 1};
      for (std::size_t k = 0; k < t.samples; ++k)
        s.fb_used_mib.push_back(mem(rng)), s.gpu_util_pct.push_back(util(rng));
      t.pods.push_back(std::move(s));
    }
    std::vector<std::size_t> pods(n);
    std::iota(pods.begin(), pods.end(), 0);
    const std::int64_t limit = trial % 3 == 0 ? 1 : 0;
    const std::size_t optimum = testing::OptimalGpus(t, 100, limit);
    const GpuLowerBound full = LowerBound(t, pods, 100, limit);
    EXPECT_TRUE(full.clique_complete());
    std::size_t l2 = 0;  // the per-sample bound at every sample
    for (std::size_t k = 0; k < t.samples; ++k) {
      std::vector<double> sizes;
      for (const PodSeries& p : t.pods) sizes.push_back(p.fb_used_mib[k]);
      l2 = std::max(l2, MartelloTothL2(sizes, 100));
    }
    EXPECT_EQ(full.per_sample_l2, l2) << "trial " << trial;
    EXPECT_LE(full.gpus(), optimum) << "trial " << trial;
    // A search cut short after one join, and a graph not built at all, stay valid and say so.
    const GpuLowerBound cut = LowerBound(t, pods, 100, limit, {.clique_work = 0});
    EXPECT_LE(cut.gpus(), optimum) << "trial " << trial;
    EXPECT_EQ(cut.per_sample_l2, full.per_sample_l2);
    const GpuLowerBound skipped = LowerBound(t, pods, 100, limit, {.max_pair_samples = 0});
    EXPECT_EQ(skipped.clique_search(), "skipped");
    EXPECT_EQ(skipped.conflict_clique, 0u);
    EXPECT_EQ(skipped.per_sample_l2, full.per_sample_l2);
  }
}

TEST(LowerBound, ReportsAPartialCliqueSearch) {
  // 100 pairs of pods of 1 MiB over 2 samples, no collision allowed. Pair i runs at
  // (x, 100 - x) and (100 - x, x) percent with x = i / 4: partners sum to exactly 100 at
  // both samples (no collision), any two other pods exceed 100 at one of them. The conflict
  // graph is the complete graph minus a perfect matching: maximum clique 100, degree 198.
  Telemetry t;
  t.samples = 2;
  for (int i = 0; i < 100; ++i) {
    const float x = static_cast<float>(i) / 4;
    for (const auto& util : {std::vector<float>{x, 100 - x}, std::vector<float>{100 - x, x}})
      t.pods.push_back(
          {.pod = "p" + std::to_string(t.pods.size()), .fb_used_mib = {1, 1}, .gpu_util_pct = util, .last = 1});
  }
  std::vector<std::size_t> pods(200);
  std::iota(pods.begin(), pods.end(), 0);
  const GpuLowerBound full = LowerBound(t, pods, 100, 0);
  EXPECT_EQ(full.conflict_clique, 100u);
  EXPECT_EQ(full.clique_search(), "complete");
  EXPECT_EQ(full.clique_seeds_tried, 200u);
  const GpuLowerBound cut = LowerBound(t, pods, 100, 0, {.clique_work = 0});
  EXPECT_EQ(cut.clique_search(), "partial");
  EXPECT_EQ(cut.clique_seeds_tried, 1u);
  EXPECT_EQ(cut.clique_pods, 200u);
  EXPECT_EQ(cut.conflict_clique, 100u);  // the first greedy clique is already a maximum one
}

}  // namespace
}  // namespace gpufit
