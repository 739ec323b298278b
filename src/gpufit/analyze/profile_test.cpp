#include "gpufit/analyze/profile.h"

#include <gtest/gtest.h>

namespace gpufit {
namespace {

TEST(NearestRank, MatchesTheDefinition) {
  std::vector<float> v = {15, 20, 35, 40, 50};
  // Nearest rank: ceil(q/100 * 5). p30 -> rank 2 -> 20; p40 -> 2 -> 20; p50 -> 3 -> 35; p100 -> 50.
  EXPECT_EQ(NearestRank(v, 30), 20);
  EXPECT_EQ(NearestRank(v, 40), 20);
  EXPECT_EQ(NearestRank(v, 50), 35);
  EXPECT_EQ(NearestRank(v, 100), 50);
  EXPECT_EQ(NearestRank(v, 0), 15);
}

TEST(Profile, OnlyTheRunningSamplesCount) {
  PodSeries p{
      .pod = "x", .fb_used_mib = {0, 100, 300, 200, 0}, .gpu_util_pct = {0, 0, 50, 100, 0}, .first = 1, .last = 3};
  const PodProfile r = Profile(p, 3600);  // one sample = one hour
  EXPECT_EQ(r.running_samples, 3u);
  EXPECT_EQ(r.fb_used_mib.peak, 300);
  EXPECT_EQ(r.fb_used_mib.p50, 200);  // rank ceil(1.5) = 2 of {100, 200, 300}
  EXPECT_DOUBLE_EQ(r.fb_used_mib.mean, 200);
  EXPECT_DOUBLE_EQ(r.idle_share, 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(r.gpu_hours_allocated, 3);
  EXPECT_DOUBLE_EQ(r.gpu_hours_used, 1.5);
  EXPECT_DOUBLE_EQ(r.gpu_hours_wasted(), 1.5);
}

}  // namespace
}  // namespace gpufit
