#include "gpufit/optimize/lower_bound.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace gpufit
