#include "gpufit/optimize/colocate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <random>

#include "gpufit/optimize/lower_bound.h"
#include "gpufit/optimize/test_colocation_oracle.h"

namespace gpufit {
namespace {

// A pod from explicit series (life = the whole window).
PodSeries MakePod(std::string name, std::vector<float> mem, std::vector<float> util) {
  PodSeries p;
  p.pod = std::move(name);
  p.last = mem.size() - 1;
  p.fb_used_mib = std::move(mem);
  p.gpu_util_pct = std::move(util);
  return p;
}

Telemetry MakeTelemetry(std::vector<PodSeries> pods) {
  Telemetry t;
  t.samples = pods.front().fb_used_mib.size();
  t.pods = std::move(pods);
  return t;
}

TEST(Colocate, DayAndNightPodsShareOneGpu) {
  // Memory fits together (30 + 40 <= 80); duty peaks at different samples.
  const Telemetry t = MakeTelemetry(
      {MakePod("day", {30, 30, 30, 30}, {90, 90, 0, 0}), MakePod("night", {40, 40, 40, 40}, {0, 0, 95, 95})});
  const Colocation c = Colocate(t, {.gpu_memory = MiB{80}, .max_collision_share = 0, .search_budget = 100'000});
  ASSERT_EQ(c.groups.size(), 1u);
  EXPECT_EQ(c.groups[0], (std::vector<std::size_t>{0, 1}));
}

// Replicas apart: web-0..2 (set 0) and api-0..1 (set 1), 10 MiB each, idle, on an 80 MiB
// GPU. Without the rule all five fit one GPU; with it each GPU holds at most one replica of a
// set, so the fewest GPUs is the largest set, 3.
TEST(Colocate, ReplicasOfOneSetNeverShareAGpu) {
  std::vector<PodSeries> pods;
  for (const char* name : {"web-0", "web-1", "web-2", "api-0", "api-1"})
    pods.push_back(MakePod(name, {10, 10, 10, 10}, {1, 1, 1, 1}));
  const Telemetry t = MakeTelemetry(pods);
  const Colocation together = Colocate(t, {.gpu_memory = MiB{80}, .search_budget = 1'000'000});
  EXPECT_EQ(together.groups.size(), 1u);
  for (const std::int64_t budget : {0, 1'000'000}) {
    const Colocation c = Colocate(t, {.gpu_memory = MiB{80}, .search_budget = budget, .apart = {0, 0, 0, 1, 1}});
    EXPECT_EQ(c.groups.size(), 3u) << "budget " << budget;
    for (const std::vector<std::size_t>& g : c.groups) {
      EXPECT_LE(std::count_if(g.begin(), g.end(), [](std::size_t p) { return p < 3; }), 1) << "budget " << budget;
      EXPECT_LE(std::count_if(g.begin(), g.end(), [](std::size_t p) { return p >= 3; }), 1) << "budget " << budget;
    }
  }
}

// HAMi's registered count: 5 idle pods of 10 MiB fit one 80 MiB GPU; at most 2 per GPU, 3.
TEST(Colocate, NoGpuHoldsMorePodsThanTheLimit) {
  std::vector<PodSeries> pods;
  for (const char* name : {"a", "b", "c", "d", "e"}) pods.push_back(MakePod(name, {10, 10, 10, 10}, {1, 1, 1, 1}));
  const Telemetry t = MakeTelemetry(pods);
  for (const std::int64_t budget : {0, 1'000'000}) {
    const Colocation c = Colocate(t, {.gpu_memory = MiB{80}, .search_budget = budget, .max_pods_per_gpu = 2});
    EXPECT_EQ(c.groups.size(), 3u) << "budget " << budget;
    for (const std::vector<std::size_t>& g : c.groups) EXPECT_LE(g.size(), 2u);
  }
}

TEST(Colocate, CollidingComputePeaksStayApart) {
  const Telemetry t =
      MakeTelemetry({MakePod("a", {10, 10, 10, 10}, {60, 60, 0, 0}), MakePod("b", {10, 10, 10, 10}, {50, 50, 0, 0})});
  // Two of four samples collide: 50% > 25% allowed.
  EXPECT_EQ(Colocate(t, {.gpu_memory = MiB{80}, .max_collision_share = 0.25, .search_budget = 100'000}).groups.size(),
            2u);
  // With 50% allowed they share.
  EXPECT_EQ(Colocate(t, {.gpu_memory = MiB{80}, .max_collision_share = 0.5, .search_budget = 100'000}).groups.size(),
            1u);
}

TEST(Colocate, MemoryPeakAtOneSampleKeepsPodsApart) {
  const Telemetry t = MakeTelemetry({MakePod("a", {10, 50, 10}, {0, 0, 0}), MakePod("b", {10, 31, 10}, {0, 0, 0})});
  const std::int64_t budget = 100'000;
  EXPECT_EQ(Colocate(t, {.gpu_memory = MiB{80}, .search_budget = budget}).groups.size(), 2u);
  EXPECT_EQ(Colocate(t, {.gpu_memory = MiB{81}, .search_budget = budget}).groups.size(), 1u);
  // The reserve is taken off the capacity.
  EXPECT_EQ(Colocate(t, {.gpu_memory = MiB{81}, .reserve = MiB{1}, .search_budget = budget}).groups.size(), 2u);
}

TEST(Colocate, PodLargerThanTheGpuIsReportedTooBig) {
  const Telemetry t = MakeTelemetry({MakePod("huge", {90, 90}, {0, 0}), MakePod("small", {10, 10}, {0, 0})});
  const Colocation c = Colocate(t, {.gpu_memory = MiB{80}, .search_budget = 100'000});
  EXPECT_EQ(c.too_big, (std::vector<std::size_t>{0}));
  ASSERT_EQ(c.groups.size(), 1u);
  EXPECT_EQ(c.groups[0], (std::vector<std::size_t>{1}));
}

TEST(Colocate, MatchesBruteForceOptimumOnSmallRandomCases) {
  std::mt19937_64 rng(42);
  for (int c = 0; c < 40; ++c) {
    SCOPED_TRACE(c);
    const std::size_t n = 3 + c % 5, samples = 6;
    std::vector<PodSeries> pods;
    for (std::size_t i = 0; i < n; ++i) {
      std::vector<float> m(samples), u(samples);
      for (std::size_t s = 0; s < samples; ++s) {
        m[s] = static_cast<float>(std::uniform_int_distribution<int>(5, 45)(rng));
        u[s] = std::uniform_int_distribution<int>(0, 3)(rng) == 0
                   ? static_cast<float>(std::uniform_int_distribution<int>(30, 90)(rng))
                   : 0.0F;
      }
      pods.push_back(MakePod("p" + std::to_string(i), m, u));
    }
    const Telemetry t = MakeTelemetry(pods);
    const double share = 1.0 / 6.0;  // one collision sample allowed
    const Colocation got =
        Colocate(t, {.gpu_memory = MiB{80}, .max_collision_share = share, .search_budget = 2'000'000});
    std::vector<std::size_t> seen;
    for (const auto& g : got.groups) {
      EXPECT_TRUE(testing::GroupFits(t, g, 80, 1));
      seen.insert(seen.end(), g.begin(), g.end());
    }
    std::sort(seen.begin(), seen.end());
    ASSERT_EQ(seen.size(), n) << "every pod is placed exactly once";
    EXPECT_EQ(std::unique(seen.begin(), seen.end()), seen.end());
    const std::size_t optimum = testing::OptimalGpus(t, 80, 1);
    EXPECT_EQ(got.groups.size(), optimum);
    std::vector<std::size_t> all(n);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_LE(LowerBound(t, all, 80, 1).gpus(), optimum) << "a lower bound never exceeds the optimum";
  }
}

TEST(Colocate, SameSeedSameGroups) {
  std::vector<PodSeries> pods;
  for (int i = 0; i < 12; ++i) {
    pods.push_back(MakePod("p" + std::to_string(i), {float(10 + i * 3), float(20 + i), float(15)},
                           {float(i % 3 == 0 ? 80 : 10), 0, float(i % 2 ? 60 : 0)}));
  }
  const Telemetry t = MakeTelemetry(pods);
  const ColocateOptions o{.gpu_memory = MiB{80}, .seed = 5, .search_budget = 500'000};
  EXPECT_EQ(Colocate(t, o).groups, Colocate(t, o).groups);
}

TEST(CollisionLimit, FloorsTheShareOfSamples) {
  EXPECT_EQ(CollisionLimit(1441, 0.01), 14);
  EXPECT_EQ(CollisionLimit(100, 0.01), 1);
  EXPECT_EQ(CollisionLimit(99, 0.01), 0);
}

}  // namespace
}  // namespace gpufit
