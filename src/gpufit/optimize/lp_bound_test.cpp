#include "gpufit/optimize/lp_bound.h"

#include <gtest/gtest.h>

#include <coin/ClpSimplex.hpp>
#include <numeric>
#include <random>

#include "gpufit/optimize/test_colocation_oracle.h"

namespace gpufit {
namespace {

// The bound divides by CBC's pricing bound padded by 1e-4 (its tolerances): values fall short
// of the LP's by that much at most.
constexpr double kPad = 1e-3;

// Where a test expects convergence, the time guard must not decide (a sanitizer build runs
// several times slower): iterations and CBC nodes bound the work instead.
const LpBoundOptions kUnhurried{.max_seconds = 600};

Telemetry Pods(const std::vector<std::vector<float>>& fb_used_mib, float util = 0) {
  Telemetry t;
  t.samples = fb_used_mib.front().size();
  for (std::size_t i = 0; i < fb_used_mib.size(); ++i) {
    t.pods.push_back({.pod = "p" + std::to_string(i),
                      .fb_used_mib = fb_used_mib[i],
                      .gpu_util_pct = std::vector<float>(t.samples, util),
                      .last = t.samples - 1});
  }
  return t;
}

std::vector<std::size_t> All(const Telemetry& t) {
  std::vector<std::size_t> pods(t.pods.size());
  std::iota(pods.begin(), pods.end(), 0);
  return pods;
}

// The set-covering LP with every group the rule allows as a column, solved at once.
double FullLp(const Telemetry& t, double capacity, std::int64_t limit) {
  const std::size_t n = t.pods.size();
  ClpSimplex lp;
  lp.setLogLevel(0);
  lp.resize(static_cast<int>(n), 0);
  for (std::size_t i = 0; i < n; ++i) lp.setRowLower(static_cast<int>(i), 1.0);
  for (std::uint32_t mask = 1; mask < (1u << n); ++mask) {
    std::vector<std::size_t> group;
    std::vector<int> rows;
    for (std::size_t i = 0; i < n; ++i) {
      if ((mask >> i) & 1) group.push_back(i), rows.push_back(static_cast<int>(i));
    }
    if (!testing::GroupFits(t, group, capacity, limit)) continue;
    const std::vector<double> ones(rows.size(), 1.0);
    lp.addColumn(static_cast<int>(rows.size()), rows.data(), ones.data(), 0.0, COIN_DBL_MAX, 1.0);
  }
  lp.primal();
  return lp.objectiveValue();
}

TEST(ColumnGenerationBound, PodsThatCannotPairNeedOneGpuEach) {
  // Three pods of 60 MiB into 100: no two share.
  const Telemetry t = Pods({{60, 60}, {60, 60}, {60, 60}});
  const LpBound b = ColumnGenerationBound(t, All(t), 100, 0, {}, kUnhurried);
  EXPECT_TRUE(b.converged);
  EXPECT_NEAR(b.lp_value, 3.0, kPad);
  EXPECT_EQ(b.gpus, 3u);
}

TEST(ColumnGenerationBound, PairsButNoTripleGiveOneAndAHalfByHand) {
  // Pod i holds 60 MiB at sample i and 30 elsewhere: every pair fits (90 at most), the three
  // together do not (120). The LP puts 1/2 on each pair: 1.5, so at least 2 GPUs.
  const Telemetry t = Pods({{60, 30, 30}, {30, 60, 30}, {30, 30, 60}});
  const LpBound b = ColumnGenerationBound(t, All(t), 100, 0, {}, kUnhurried);
  EXPECT_TRUE(b.converged);
  EXPECT_NEAR(b.lp_value, 1.5, kPad);
  EXPECT_EQ(b.gpus, 2u);
}

TEST(ColumnGenerationBound, TimeComplementsBeatEverySingleSample) {
  // Four pods, each 70 MiB at its own sample and 10 at the others: at capacity 100 all four
  // fit (70 + 3 x 10 = 100 at every sample): one GPU. At 85 any pair fits (80) and no
  // triple does (90): each GPU holds two pods at most, so the LP is 4 / 2 = 2.
  const Telemetry t = Pods({{70, 10, 10, 10}, {10, 70, 10, 10}, {10, 10, 70, 10}, {10, 10, 10, 70}});
  EXPECT_EQ(ColumnGenerationBound(t, All(t), 100, 0, {}, kUnhurried).gpus, 1u);
  const LpBound b = ColumnGenerationBound(t, All(t), 85, 0, {}, kUnhurried);
  EXPECT_NEAR(b.lp_value, 2.0, kPad);
}

TEST(ColumnGenerationBound, EqualsTheFullLpAndStaysUnderTheOptimumOnRandomCases) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> mem(0, 70), util(0, 100);
  for (int trial = 0; trial < 120; ++trial) {
    SCOPED_TRACE(trial);
    Telemetry t;
    t.samples = 1 + static_cast<std::size_t>(trial % 5);
    const std::size_t n = 2 + static_cast<std::size_t>(trial % 8);
    const bool busy = trial % 2 == 1;  // duty cycles that collide
    for (std::size_t p = 0; p < n; ++p) {
      PodSeries s{.pod = "p" + std::to_string(p), .fb_used_mib = {}, .gpu_util_pct = {}, .last = t.samples - 1};
      for (std::size_t k = 0; k < t.samples; ++k)
        s.fb_used_mib.push_back(mem(rng)), s.gpu_util_pct.push_back(busy ? util(rng) : 0.0f);
      t.pods.push_back(std::move(s));
    }
    const std::int64_t limit = trial % 3 == 0 ? 1 : 0;
    const LpBound b = ColumnGenerationBound(t, All(t), 100, limit, {}, kUnhurried);
    EXPECT_LE(b.gpus, testing::OptimalGpus(t, 100, limit));
    const double full = FullLp(t, 100, limit);
    EXPECT_LE(b.lp_value, full + 1e-9);
    if (!busy) {  // no collisions: the relaxed rule is the rule, and the bound the LP optimum
      EXPECT_TRUE(b.converged);
      EXPECT_NEAR(b.lp_value, full, kPad);
    }
  }
}

TEST(ColumnGenerationBound, StartingGroupsAndACutShortSearchStayValid) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> mem(0, 45);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<std::vector<float>> fb(9, std::vector<float>(3));
    for (auto& s : fb)
      for (float& v : s) v = mem(rng);
    const Telemetry t = Pods(fb);
    const double full = FullLp(t, 100, 0);
    // Pairs as given groups (some break the rule and must be skipped), one master solve only.
    const std::vector<std::vector<std::size_t>> groups = {{0, 1}, {2, 3}, {4, 5}, {6, 7, 8}, {0, 1, 2, 3, 4}};
    const LpBound cut = ColumnGenerationBound(t, All(t), 100, 0, groups, {.max_iterations = 1});
    EXPECT_LE(cut.lp_value, full + 1e-9) << trial;
    const LpBound no_time = ColumnGenerationBound(t, All(t), 100, 0, groups, {.max_seconds = 0});
    EXPECT_LE(no_time.lp_value, full + 1e-9) << trial;
    const LpBound whole = ColumnGenerationBound(t, All(t), 100, 0, groups, kUnhurried);
    EXPECT_NEAR(whole.lp_value, full, kPad) << trial;
  }
}

}  // namespace
}  // namespace gpufit
