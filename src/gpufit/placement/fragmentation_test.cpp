#include "gpufit/placement/fragmentation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "gpufit/core/rng.h"
#include "gpufit/placement/test_oracle.h"

namespace gpufit {
namespace {

NodeFree Node(std::int64_t cpu, std::vector<std::int64_t> gpus, int model = 0) {
  NodeFree n{.cpu = MilliCpu{cpu}, .model = model, .gpu_count = static_cast<int>(gpus.size())};
  for (std::size_t g = 0; g < gpus.size(); ++g) n.gpu[g] = GpuMilli{gpus[g]};
  return n;
}

TypicalPod Shape(std::int64_t cpu, int gpus, std::int64_t milli, double share) {
  return {.cpu = MilliCpu{cpu}, .gpu_count = gpus, .gpu_per_gpu = GpuMilli{milli}, .share = share};
}

// Worked by hand: free GPUs [1000, 300] (1300 free), 8 cores free.
//   half a GPU, 4 cores (share .5): fits on GPU 0; GPU 1's 300 are a fragment -> .5 * 300
//   one GPU, 2 cores (share .25):   fits on GPU 0; fragment 300                -> .25 * 300
//   CPU only (share .25):           uses no GPU: all 1300 are a fragment       -> .25 * 1300
const std::vector<TypicalPod> kTarget = {Shape(4000, 1, 500, 0.5), Shape(2000, 1, 1000, 0.25), Shape(1000, 0, 0, 0.25)};

TEST(FragMilli, CountsGpusTooSmallForEachTypicalPod) {
  EXPECT_DOUBLE_EQ(FragMilli(Node(8000, {1000, 300}), kTarget), 0.5 * 300 + 0.25 * 300 + 0.25 * 1300);
}

TEST(FragMilli, AllFreeGpuIsFragmentForAPodThatLacksCpu) {
  // 3 cores: the 4-core pod cannot run, so all 1300 count for it.
  EXPECT_DOUBLE_EQ(FragMilli(Node(3000, {1000, 300}), kTarget), 0.5 * 1300 + 0.25 * 300 + 0.25 * 1300);
}

TEST(FragMilli, AllFreeGpuIsFragmentForAPodOfAnotherGpuType) {
  std::vector<TypicalPod> target = {Shape(0, 1, 500, 1.0)};
  target[0].any_model = false;
  target[0].model_mask = 0b10;  // accepts model 1 only
  EXPECT_DOUBLE_EQ(FragMilli(Node(8000, {1000, 300}, /*model=*/0), target), 1300);
  EXPECT_DOUBLE_EQ(FragMilli(Node(8000, {1000, 300}, /*model=*/1), target), 300);
}

TEST(FragMilli, MultiGpuPodNeedsThatManyGpus) {
  const std::vector<TypicalPod> two_gpus = {Shape(0, 2, 1000, 1.0)};
  EXPECT_DOUBLE_EQ(FragMilli(Node(8000, {1000, 300}), two_gpus), 1300);  // one idle GPU is not enough
  EXPECT_DOUBLE_EQ(FragMilli(Node(8000, {1000, 1000, 300}), two_gpus), 300);
}

TEST(FragMilli, NodeWithoutFreeGpuHasNoFragment) {
  EXPECT_DOUBLE_EQ(FragMilli(Node(8000, {0, 0}), kTarget), 0);
  EXPECT_DOUBLE_EQ(FragMilli(Node(8000, {}, -1), kTarget), 0);
}

TEST(FragMilli, AgreesWithTheDefinitionOnRandomNodes) {
  Rng rng(7);
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<std::int64_t> gpus(rng.Below(9));
    for (auto& g : gpus) g = static_cast<std::int64_t>(rng.Below(11)) * 100;
    std::vector<TypicalPod> target;
    const std::size_t shapes = 1 + rng.Below(6);
    for (std::size_t k = 0; k < shapes; ++k) {
      const int count = static_cast<int>(rng.Below(4));
      TypicalPod t = Shape(static_cast<std::int64_t>(rng.Below(9)) * 1000, count,
                           count == 0 ? 0 : (count > 1 ? 1000 : 50 + static_cast<std::int64_t>(rng.Below(951))),
                           1.0 / static_cast<double>(shapes));
      if (rng.Below(3) == 0) {
        t.any_model = false;
        t.model_mask = rng.Below(4);
      }
      target.push_back(t);
    }
    const NodeFree n = Node(static_cast<std::int64_t>(rng.Below(9)) * 1000, gpus, static_cast<int>(rng.Below(2)));
    SCOPED_TRACE(trial);
    EXPECT_NEAR(FragMilli(n, target), testing::FragOracle(n, target), 1e-9);
  }
}

PodSpec Pod(std::int64_t cpu, int gpus, std::int64_t milli, std::vector<std::string> models = {}) {
  PodSpec p;
  p.cpu = MilliCpu{cpu};
  p.gpu_count = gpus;
  p.gpu_per_gpu = GpuMilli{milli};
  p.gpu_models = std::move(models);
  return p;
}

ClusterState OneT4Node() {
  return *ClusterState::FromSpecs(
      {{.name = "n", .cpu = MilliCpu{8000}, .memory = MiB{1}, .gpu_count = 1, .gpu_model = "T4"}});
}

TEST(TypicalPods, KeepsTheMostFrequentShapesUntilThePopularityIsReached) {
  // Shapes by count: A x5, B x3, C x1, D x1 (10 pods). At 80%: A (5 < 8) then B (8): stop.
  std::vector<PodSpec> pods;
  for (int i = 0; i < 5; ++i) pods.push_back(Pod(1000, 1, 500));   // A
  for (int i = 0; i < 3; ++i) pods.push_back(Pod(2000, 1, 1000));  // B
  pods.push_back(Pod(3000, 0, 0));                                 // C
  pods.push_back(Pod(4000, 2, 1000));                              // D
  const std::vector<TypicalPod> t = TypicalPods(pods, OneT4Node(), {.popularity = 0.8});
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].cpu.value, 1000);
  EXPECT_DOUBLE_EQ(t[0].share, 5.0 / 8);  // renormalized over the kept shapes
  EXPECT_EQ(t[1].cpu.value, 2000);
  EXPECT_DOUBLE_EQ(t[1].share, 3.0 / 8);

  // At 95%: 5, 8, 9 (< 9.5), 10: all four; C and D tie at one pod each, the larger shape
  // (more CPU) first, as the simulator's reverse sort orders them.
  const std::vector<TypicalPod> all = TypicalPods(pods, OneT4Node(), {.popularity = 0.95});
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[2].cpu.value, 4000);
  EXPECT_EQ(all[3].cpu.value, 3000);
  EXPECT_DOUBLE_EQ(all[3].share, 0.1);
}

TEST(TypicalPods, CpuOnlyPodsCanBeLeftOutAndZeroCpuCountsAsOneTenthCore) {
  const std::vector<PodSpec> pods = {Pod(0, 1, 500), Pod(3000, 0, 0)};
  const std::vector<TypicalPod> t = TypicalPods(pods, OneT4Node(), {.popularity = 1.0, .include_cpu_pods = false});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].cpu.value, 100);  // Kubernetes' non-zero default request
  EXPECT_DOUBLE_EQ(t[0].share, 1.0);
}

TEST(TypicalPods, GpuTypesResolveAgainstTheCluster) {
  const std::vector<TypicalPod> t = TypicalPods({Pod(1000, 1, 500, {"V100", "T4"})}, OneT4Node(), {.popularity = 1});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_FALSE(t[0].any_model);
  EXPECT_EQ(t[0].model_mask, 1u);  // T4 is the cluster's model 0; V100 is not in the cluster
}

}  // namespace
}  // namespace gpufit
