#include "gpufit/placement/scores.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "gpufit/placement/fgd.h"
#include "gpufit/placement/gpu_pickers.h"
#include "gpufit/placement/gpufit_policy.h"
#include "gpufit/placement/test_cluster.h"

namespace gpufit {
namespace {

using testing::MakeCluster;
using testing::MakeWorkload;

TEST(BestFitScore, ScoresTheFreeResourcesLeftAfterPlacing) {
  // 64 cores and 2 GPUs free; the pod takes 4 cores and half a GPU:
  // waste = .5 * 60000/128000 + .5 * 1500/8000 = .328125 -> int(100 * .671875) = 67.
  const ClusterState c = MakeCluster({{.gpus = 2}});
  EXPECT_EQ(BestFitScore().Score(MakeWorkload({.cpu = 4000, .milli = 500}), c.node(0)), 67);
}

TEST(BestFitScore, PrefersTheFullerNode) {
  const ClusterState c = MakeCluster({{.gpus = 8}, {.gpus = 8, .gpu_used = {1000, 1000, 1000}}});
  const Workload w = MakeWorkload({});
  EXPECT_GT(BestFitScore().Score(w, c.node(1)), BestFitScore().Score(w, c.node(0)));
}

TEST(DotProductScore, ScoresOneMinusHalfTheNormalizedDotProduct) {
  // free (64000/128000, 2000/8000) . request (4000/128000, 500/8000) = .015625 + .015625
  // -> int(100 * (1 - .03125 / 2)) = 98.
  const ClusterState c = MakeCluster({{.gpus = 2}});
  EXPECT_EQ(DotProductScore().Score(MakeWorkload({.cpu = 4000, .milli = 500}), c.node(0)), 98);
}

TEST(GpuPackingScore, RanksSharedGpusThenUsedNodesThenIdleNodes) {
  const ClusterState c = MakeCluster({{.gpus = 8}, {.gpus = 8, .gpu_used = {700}}, {.gpus = 8, .gpu_used = {1000}}});
  GpuPackingScore s;
  // Idle node: max(33 - 8 idle GPUs, 8) = 25.
  EXPECT_EQ(s.Score(MakeWorkload({.milli = 200}), c.node(0)), 25);
  // Shares GPU 0 with 300 free: 100 - (300 * 100 / 1000) / 10 = 97.
  EXPECT_EQ(s.Score(MakeWorkload({.milli = 200}), c.node(1)), 97);
  // A whole GPU on a node already in use: 50 - 1 idle GPU taken = 49.
  EXPECT_EQ(s.Score(MakeWorkload({.milli = 1000}), c.node(2)), 49);
  // CPU-only pods score 0 everywhere.
  EXPECT_EQ(s.Score(MakeWorkload({.gpus = 0}), c.node(1)), 0);
}

TEST(GpuClusteringScore, KeepsPodsOfOneKindTogether) {
  ClusterState c = MakeCluster({{.gpus = 8}, {.gpus = 8, .gpu_used = {500, 500}}, {.gpus = 8}});
  c.Place(2, MakeWorkload({.gpus = 2}), 0b11);  // a 2-GPU pod on node 2
  GpuClusteringScore s;
  const Workload share = MakeWorkload({.milli = 300});
  EXPECT_EQ(s.Score(share, c.node(0)), 25);                     // no GPU pod yet: 25 + 0
  EXPECT_EQ(s.Score(share, c.node(1)), 75 + 25 * 1000 / 8000);  // only sharing pods: 75 + 3
  EXPECT_EQ(s.Score(share, c.node(2)), 0 + 25 * 2000 / 8000);   // other kinds only: 0 + 6
}

std::shared_ptr<const std::vector<TypicalPod>> OneGpuTarget() {
  return std::make_shared<const std::vector<TypicalPod>>(
      std::vector<TypicalPod>{{.cpu = MilliCpu{1000}, .gpu_count = 1, .gpu_per_gpu = GpuMilli{1000}, .share = 1.0}});
}

TEST(FgdScore, ScoresTheSigmoidOfTheFragmentationDecrease) {
  // Target: whole-GPU pods only. Free [1000, 600]: fragment 600 now.
  // Half a GPU on GPU 0 -> [500, 600]: fragment 1100, delta -500: int(100 * sigmoid(-.5)) = 37.
  // Half a GPU on GPU 1 -> [1000, 100]: fragment 100, delta +500: int(100 * sigmoid(.5)) = 62.
  const ClusterState c = MakeCluster({{.gpus = 2, .gpu_used = {0, 400}}});
  auto model = std::make_shared<FgdModel>(OneGpuTarget());
  FgdScore score(model);
  const Workload half = MakeWorkload({.milli = 500});
  score.PreScore(half, c);
  EXPECT_EQ(score.Score(half, c.node(0)), static_cast<int>(100.0 / (1.0 + std::exp(-0.5))));
  EXPECT_EQ(score.Score(half, c.node(0)), 62);
  Rng rng(1);
  EXPECT_EQ(FgdGpu(model).Pick(half, c.node(0), rng), GpuSet{0b10});
}

TEST(FgdScore, CachedScoreFollowsNodeChanges) {
  ClusterState c = MakeCluster({{.gpus = 2}});
  auto model = std::make_shared<FgdModel>(OneGpuTarget());
  FgdScore score(model);
  const Workload half = MakeWorkload({.milli = 500});
  score.PreScore(half, c);
  const std::int64_t idle = score.Score(half, c.node(0));    // [1000,1000] -> [500,1000]: delta -500
  c.Place(0, half, 0b01);                                    // now [500, 1000]
  const std::int64_t shared = score.Score(half, c.node(0));  // -> [0, 1000]: delta +500
  EXPECT_EQ(idle, 37);
  EXPECT_EQ(shared, 62);
}

TEST(GpuPickers, ChooseAsTheirRulesSay) {
  const ClusterState c = MakeCluster({{.gpus = 4, .gpu_used = {0, 500, 800, 0}}});
  Rng rng(3);
  const Workload w = MakeWorkload({.milli = 200});
  EXPECT_EQ(BestFitGpu().Pick(w, c.node(0), rng), GpuSet{0b0100});  // least free that fits: 200 on GPU 2
  EXPECT_EQ(FirstIdleGpus(MakeWorkload({.gpus = 2}), c.node(0)), GpuSet{0b1001});
  int counts[4] = {};
  RandomGpu random;
  for (int i = 0; i < 4000; ++i) ++counts[std::countr_zero(random.Pick(w, c.node(0), rng))];
  for (int g = 0; g < 4; ++g) EXPECT_NEAR(counts[g], 1000, 150) << "GPU " << g;  // all four fit
}

TEST(GpufitScore, PenalizesGpusLeftWithoutCpu) {
  // Two nodes, both with 2 idle GPUs; node 0 has 24 cores free, node 1 has 64. The target
  // workload brings 10 cores per GPU (rho = 10 millicores per milli-GPU). A 16-core
  // CPU-only pod on node 0 leaves 8 cores for 2000 milli-GPU: 1200 stranded, on node 1
  // nothing. FGD's fragment: on node 0 the target pod no longer gets its 10 cores, so all
  // 2000 free milli-GPU become fragment; on node 1 nothing changes.
  const ClusterState c = MakeCluster({{.cpu = 24000, .gpus = 2}, {.cpu = 64000, .gpus = 2}});
  auto target = std::make_shared<const std::vector<TypicalPod>>(
      std::vector<TypicalPod>{{.cpu = MilliCpu{10000}, .gpu_count = 1, .gpu_per_gpu = GpuMilli{1000}, .share = 1.0}});
  auto model = std::make_shared<GpufitModel>(target, GpufitPolicyOptions{.stranding_weight = 2});
  EXPECT_DOUBLE_EQ(model->rho(), 10.0);
  GpufitScore score(model);
  const Workload cpu_pod = MakeWorkload({.cpu = 16000, .gpus = 0});
  score.PreScore(cpu_pod, c);
  // node 0: frag 0 -> 2000 (8 cores < 10: the target pod cannot run): delta -2000;
  // stranded 0 -> 2000 - 8000/10 = 1200: value = -2000 - 2 * 1200 = -4400 (x1000 in the score).
  EXPECT_EQ(score.Score(cpu_pod, c.node(0)), -4'400'000);
  EXPECT_EQ(score.Score(cpu_pod, c.node(1)), 0);
}

}  // namespace
}  // namespace gpufit
