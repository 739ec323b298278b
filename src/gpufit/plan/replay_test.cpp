#include "gpufit/plan/replay.h"

#include <gtest/gtest.h>

namespace gpufit {
namespace {

Telemetry TwoPods() {
  Telemetry t;
  t.samples = 4;
  PodSeries a{.pod = "a", .fb_used_mib = {50, 50, 10, 0}, .gpu_util_pct = {60, 0, 70, 0}, .first = 0, .last = 2};
  PodSeries b{.pod = "b", .fb_used_mib = {40, 20, 20, 20}, .gpu_util_pct = {50, 0, 20, 90}, .first = 0, .last = 3};
  t.pods = {a, b};
  return t;
}

TEST(Replay, CountsSamplesOverEachPodsOwnCap) {
  // a: 50, 50, 10 in its life against 45 -> 2 samples, 5 over; b has no cap.
  const CapReplay r = ReplayCaps(TwoPods(), {45.0, std::nullopt});
  EXPECT_EQ(r.samples_over, 2);
  EXPECT_DOUBLE_EQ(r.worst_over_mib, 5);
  ASSERT_EQ(r.pods.size(), 1u);
  EXPECT_EQ(r.pods[0], "a: peak 50 MiB > cap 45 MiB");
  EXPECT_EQ(ReplayCaps(TwoPods(), {50.0, 40.0}).samples_over, 0);  // at the cap is within it
}

TEST(Replay, CountsOverflowsAndCollisionsByHand) {
  // Sums: memory 90, 70, 30, 20 against 80 -> one overflow (sample 0);
  // duty 110, 0, 90, 90 -> one collision (sample 0), share 1/4.
  const Replay r = ReplayColocation(TwoPods(), {{0, 1}}, 80, 0.25);
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_EQ(r.memory_overflows, 1);
  EXPECT_EQ(r.gpus[0].collisions, 1);
  EXPECT_DOUBLE_EQ(r.max_collision_share, 0.25);
  EXPECT_DOUBLE_EQ(r.gpus[0].peak_mib, 90);
  EXPECT_DOUBLE_EQ(r.gpus[0].mean_util_pct, (100 + 0 + 90 + 90) / 4.0);
  EXPECT_EQ(r.gpus[0].occupied_samples, 4u);
  EXPECT_FALSE(r.safe) << "an overflow is never safe";
}

TEST(Replay, SeparateGpusAreSafe) {
  const Replay r = ReplayColocation(TwoPods(), {{0}, {1}}, 80, 0.0);
  EXPECT_EQ(r.memory_overflows, 0);
  EXPECT_EQ(r.max_collision_share, 0.0);
  EXPECT_TRUE(r.safe);
  EXPECT_EQ(r.gpus[0].occupied_samples, 3u);
}

TEST(Replay, ShareAboveTheLimitIsUnsafe) {
  const Replay r = ReplayColocation(TwoPods(), {{0, 1}}, 100, 0.2);
  EXPECT_EQ(r.memory_overflows, 0);
  EXPECT_FALSE(r.safe);
  EXPECT_TRUE(ReplayColocation(TwoPods(), {{0, 1}}, 100, 0.25).safe);
}

}  // namespace
}  // namespace gpufit
