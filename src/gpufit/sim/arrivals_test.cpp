#include "gpufit/sim/arrivals.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "gpufit/core/test_support.h"
#include "gpufit/ingest/files/openb_reader.h"

namespace gpufit {
namespace {

PodSpec Pod(std::string name, int gpus, std::int64_t milli, double created = 0, std::optional<double> deleted = {}) {
  PodSpec p;
  p.name = std::move(name);
  p.gpu_count = gpus;
  p.gpu_per_gpu = GpuMilli{gpus ? milli : 0};
  p.creation = Seconds(created);
  if (deleted) p.deletion = Seconds(*deleted);
  return p;
}

// Checks the simulator's rule from the sequence itself: every trace pod once, then copies;
// the copies keep requested GPUs within the target, with the per-GPU test of the rule.
void ExpectSaturationRule(const std::vector<PodSpec>& trace, const std::vector<std::size_t>& order, double target) {
  ASSERT_GE(order.size(), trace.size());
  std::vector<std::size_t> first(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(trace.size()));
  std::sort(first.begin(), first.end());
  for (std::size_t i = 0; i < trace.size(); ++i) ASSERT_EQ(first[i], i);
  std::int64_t requested = 0;
  for (const PodSpec& p : trace) requested += p.TotalGpu().value;
  for (std::size_t k = trace.size(); k < order.size(); ++k) {
    const PodSpec& copy = trace[order[k]];
    EXPECT_LE(static_cast<double>(requested + copy.gpu_per_gpu.value), target);
    requested += copy.TotalGpu().value;
  }
  // It stopped because a drawn copy would have gone past the target: the room left is
  // less than the largest milli-GPU per GPU of any pod.
  std::int64_t largest = 0;
  for (const PodSpec& p : trace) largest = std::max(largest, p.gpu_per_gpu.value);
  EXPECT_LT(target - static_cast<double>(requested), static_cast<double>(largest));
}

TEST(SaturationArrivals, KeepsEveryPodThenAddsCopiesUpToTheTarget) {
  const std::vector<PodSpec> trace = {Pod("a", 1, 1000), Pod("b", 1, 500), Pod("c", 0, 0), Pod("d", 2, 1000)};
  Rng rng(42);
  const std::vector<std::size_t> order = SaturationArrivals(trace, GpuMilli{4000}, 1.5, rng);
  ExpectSaturationRule(trace, order, 6000);
  EXPECT_GT(order.size(), trace.size());  // 3500 requested, target 6000: room for copies
}

TEST(SaturationArrivals, SameSeedSameSequenceOtherSeedOtherOrder) {
  std::vector<PodSpec> trace;
  for (int i = 0; i < 50; ++i) trace.push_back(Pod("p" + std::to_string(i), 1, 100 + 10 * i));
  Rng a(1), b(1), c(2);
  const auto sa = SaturationArrivals(trace, GpuMilli{20000}, 1.3, a);
  EXPECT_EQ(sa, SaturationArrivals(trace, GpuMilli{20000}, 1.3, b));
  EXPECT_NE(sa, SaturationArrivals(trace, GpuMilli{20000}, 1.3, c));
}

TEST(SaturationArrivals, CpuOnlyTraceStopsWithoutCopies) {
  const std::vector<PodSpec> trace = {Pod("a", 0, 0), Pod("b", 0, 0)};
  Rng rng(3);
  EXPECT_EQ(SaturationArrivals(trace, GpuMilli{1000}, 1.3, rng).size(), 2u);
}

TEST(SaturationArrivals, OpenbDefaultInflatesToAbout10866Pods) {
  const std::string nodes_path = testing::DataDir() + "/openb/openb_node_list_gpu_node.csv";
  const std::string pods_path = testing::DataDir() + "/openb/openb_pod_list_default.csv";
  if (!std::filesystem::exists(pods_path)) GTEST_SKIP() << "no " << pods_path;
  const std::vector<PodSpec> pods = *ReadOpenbPods(pods_path);
  const GpuMilli capacity{6212 * 1000};
  // Expected count: the trace's pods plus the GPU room left under 130% divided by the mean
  // GPU request of a uniformly drawn pod (6,086,800 milli-GPU over 8152 pods).
  double requested = 0;
  for (const PodSpec& p : pods) requested += static_cast<double>(p.TotalGpu().value);
  const double expected = static_cast<double>(pods.size()) + (1.3 * static_cast<double>(capacity.value) - requested) /
                                                                 (requested / static_cast<double>(pods.size()));
  double mean = 0;
  for (std::uint64_t seed = 42; seed <= 51; ++seed) {
    SCOPED_TRACE(seed);
    Rng rng(seed);
    const std::vector<std::size_t> order = SaturationArrivals(pods, capacity, 1.3, rng);
    ExpectSaturationRule(pods, order, 1.3 * 6212 * 1000);
    // The 10,866 came from one draw of the simulator's own generator; a draw
    // varies by about 55 pods (one standard deviation), so allow three.
    EXPECT_NEAR(static_cast<double>(order.size()), 10866, 170);
    mean += static_cast<double>(order.size()) / 10;
  }
  EXPECT_NEAR(expected, 10815.6, 0.5);
  EXPECT_NEAR(mean, expected, 60);
}

// A trace that asks for more than the target is cut down (the simulator's tuneDownPods):
// ten one-GPU pods on 4 GPUs at 150% keep six, in the order the seed shuffled them.
TEST(SaturationArrivals, TraceAboveTheTargetLosesRandomPodsDownToIt) {
  std::vector<PodSpec> trace;
  for (int i = 0; i < 10; ++i) trace.push_back(Pod("p" + std::to_string(i), 1, 1000));
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE(seed);
    Rng rng(seed);
    const std::vector<std::size_t> order = SaturationArrivals(trace, GpuMilli{4000}, 1.5, rng);
    ASSERT_EQ(order.size(), 6u);  // 6 x 1000 = 6000 = 1.5 x 4000
    Rng again(seed);              // the names are already sorted: the first draws shuffle them
    std::vector<std::size_t> shuffled(trace.size());
    std::iota(shuffled.begin(), shuffled.end(), std::size_t{0});
    again.Shuffle(shuffled);
    auto next = shuffled.begin();  // the kept pods are a subsequence of the shuffled trace
    for (const std::size_t pod : order) {
      next = std::find(next, shuffled.end(), pod);
      ASSERT_NE(next, shuffled.end()) << pod << " out of order or kept twice";
      ++next;
    }
  }
}

TEST(SaturationArrivals, CutStopsAtTheFirstRemovalThatReachesTheTarget) {
  // 2 x 2000 + 3 x 1000 + 4 CPU-only = 7000 milli-GPU against a target of 4000: removals go
  // on (CPU-only ones free nothing) until at most 4000 is left, and the last one removed
  // took the total from above 4000, so more than 4000 - 2000 (the largest pod) is left.
  const std::vector<PodSpec> trace = {Pod("a", 2, 1000), Pod("b", 2, 1000), Pod("c", 1, 1000),
                                      Pod("d", 1, 1000), Pod("e", 1, 1000), Pod("f", 0, 0),
                                      Pod("g", 0, 0),    Pod("h", 0, 0),    Pod("i", 0, 0)};
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    SCOPED_TRACE(seed);
    Rng rng(seed);
    const std::vector<std::size_t> order = SaturationArrivals(trace, GpuMilli{4000}, 1.0, rng);
    std::int64_t requested = 0;
    for (const std::size_t pod : order) requested += trace[pod].TotalGpu().value;
    EXPECT_LE(requested, 4000);
    EXPECT_GT(requested, 2000);
    std::vector<std::size_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());  // no pod twice
  }
}

TEST(SaturationArrivals, OpenbMultigpu50IsCutTo130PercentOfTheGpus) {
  const std::string pods_path = testing::DataDir() + "/openb/openb_pod_list_multigpu50.csv";
  if (!std::filesystem::exists(pods_path)) GTEST_SKIP() << "no " << pods_path;
  const std::vector<PodSpec> pods = *ReadOpenbPods(pods_path);
  const double target = 1.3 * 6212 * 1000;  // the list asks for 11,358,800 milli-GPU, 183%
  double mean = 0;
  for (std::uint64_t seed = 42; seed <= 51; ++seed) {
    SCOPED_TRACE(seed);
    Rng rng(seed);
    const std::vector<std::size_t> order = SaturationArrivals(pods, GpuMilli{6212 * 1000}, 1.3, rng);
    double requested = 0;
    for (const std::size_t pod : order) requested += static_cast<double>(pods[pod].TotalGpu().value);
    EXPECT_LE(requested, target);
    EXPECT_GT(requested, target - 8000);  // within the largest pod (8 GPUs) of the target
    mean += static_cast<double>(order.size()) / 10;
  }
  // A uniform random subset keeps pods in proportion to the GPUs kept: 9061 x 130/182.9.
  EXPECT_NEAR(mean, 9061 * target / 11358800, 100);
}

TEST(ReplayEvents, PodThatComesAndGoesAtOnceArrivesFirst) {
  const std::vector<PodSpec> trace = {Pod("a", 1, 1000, 0, 5), Pod("z", 1, 1000, 5, 5), Pod("b", 1, 1000, 5)};
  const std::vector<TraceEvent> e = ReplayEvents(trace);
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(e[1].pod, 0u);  // a leaves at 5 first
  EXPECT_FALSE(e[1].arrival);
  EXPECT_TRUE(e[2].arrival);  // then z and b arrive
  EXPECT_TRUE(e[3].arrival);
  EXPECT_EQ(e[4].pod, 1u);  // and z leaves
  EXPECT_FALSE(e[4].arrival);
}

TEST(ReplayEvents, OrdersByTimeWithDeparturesFirst) {
  const std::vector<PodSpec> trace = {Pod("a", 1, 1000, 0, 10), Pod("b", 1, 1000, 10, 20), Pod("c", 1, 1000, 5)};
  const std::vector<TraceEvent> e = ReplayEvents(trace);
  ASSERT_EQ(e.size(), 5u);  // c never leaves
  EXPECT_EQ(e[0].pod, 0u);
  EXPECT_EQ(e[1].pod, 2u);
  EXPECT_EQ(e[2].pod, 0u);  // a leaves at 10 ...
  EXPECT_FALSE(e[2].arrival);
  EXPECT_EQ(e[3].pod, 1u);  // ... before b arrives at 10
  EXPECT_TRUE(e[3].arrival);
  EXPECT_EQ(e[4].pod, 1u);
}

}  // namespace
}  // namespace gpufit
