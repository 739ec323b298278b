#include "gpufit/inference/model_cache.h"

#include <gtest/gtest.h>

namespace gpufit {
namespace {

constexpr int kA = 0, kB = 1, kC = 2;

std::vector<CacheRequest> Spaced(const std::vector<int>& models) {  // 10 s apart, 1 s each
  std::vector<CacheRequest> r;
  for (std::size_t i = 0; i < models.size(); ++i)
    r.push_back({.arrival_s = 10.0 * static_cast<double>(i), .service_s = 1, .model = models[i]});
  return r;
}

ReplicaSchedule Nodes(std::vector<int> counts, double window_s = 100) {
  return {.window_s = window_s, .replicas = counts};
}

TEST(ModelCacheTest, LeastRecentlyUsedOnOneNode) {
  // A B A C B A. Capacity 2: A miss [A]; B miss [B A]; A hit [A B]; C miss, B out [C A];
  // B miss, A out [B C]; A miss, C out [A B]: 1 hit, 5 misses.
  const auto seq = Spaced({kA, kB, kA, kC, kB, kA});
  const CacheOutcome two = SimulateModelCache(seq, Nodes({1}), 2);
  EXPECT_EQ(two.requests, 6u);
  EXPECT_EQ(two.hits, 1u);
  EXPECT_EQ(two.misses, 5u);
  // Capacity 3 holds all three: misses only on first sight (A, B, C), 3 hits.
  const CacheOutcome three = SimulateModelCache(seq, Nodes({1}), 3);
  EXPECT_EQ(three.hits, 3u);
  EXPECT_EQ(three.misses, 3u);
  EXPECT_DOUBLE_EQ(three.HitRate(), 0.5);
}

TEST(ModelCacheTest, RoutesToAFreeNodeThatHoldsTheModel) {
  // A (t 0, 100 s) takes node 0; B (t 1) finds it busy and goes to node 1. Later B and A
  // find both free and each goes to its holder: 2 misses, 2 hits with one model per node.
  const std::vector<CacheRequest> seq = {{.arrival_s = 0, .service_s = 100, .model = kA},
                                         {.arrival_s = 1, .service_s = 10, .model = kB},
                                         {.arrival_s = 200, .service_s = 10, .model = kB},
                                         {.arrival_s = 300, .service_s = 10, .model = kA}};
  const CacheOutcome o = SimulateModelCache(seq, Nodes({2}, 1000), 1);
  EXPECT_EQ(o.hits, 2u);
  EXPECT_EQ(o.misses, 2u);
}

TEST(ModelCacheTest, ANodeThatLeavesLosesItsCache) {
  // Node 1 learns B in the first window; with 2 nodes throughout it still holds B at
  // t 250 (a hit); when the count dips to 1 in the second window, node 1 leaves and the
  // B at t 250 is a miss.
  const std::vector<CacheRequest> seq = {{.arrival_s = 0, .service_s = 1, .model = kA},
                                         {.arrival_s = 0.5, .service_s = 1, .model = kB},
                                         {.arrival_s = 250, .service_s = 1, .model = kB}};
  EXPECT_EQ(SimulateModelCache(seq, Nodes({2, 2, 2}), 1).hits, 1u);
  EXPECT_EQ(SimulateModelCache(seq, Nodes({2, 1, 2}), 1).hits, 0u);
}

TEST(ModelCacheTest, UnknownModelsAreNeitherHitsNorMisses) {
  const CacheOutcome o = SimulateModelCache(Spaced({kA, -1, kA}), Nodes({1}), 1);
  EXPECT_EQ(o.requests, 2u);
  EXPECT_EQ(o.hits, 1u);
}

TEST(ModelCacheTest, KneeIsTheSmallestCapacityNearTheBest) {
  // Hit rates 0.5, 0.8, 0.9, 0.9: 95% of the best is 0.855, first reached at capacity 3.
  const std::vector<CacheOutcome> curve = {
      {.requests = 10, .hits = 5, .misses = 5},
      {.requests = 10, .hits = 8, .misses = 2},
      {.requests = 10, .hits = 9, .misses = 1},
      {.requests = 10, .hits = 9, .misses = 1},
  };
  EXPECT_EQ(KneeCapacity(curve, 0.95), 3);
  EXPECT_EQ(KneeCapacity(curve, 0.5), 1);
  EXPECT_EQ(KneeCapacity({}, 0.95), 1);
}

}  // namespace
}  // namespace gpufit
