#include "gpufit/optimize/memory_envelope.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gpufit/optimize/colocate.h"

namespace gpufit {
namespace {

PodSeries MakePod(std::vector<float> mem, std::vector<float> util, std::size_t first = 0,
                  std::size_t last = static_cast<std::size_t>(-1)) {
  PodSeries p;
  p.first = first;
  p.last = last == static_cast<std::size_t>(-1) ? mem.size() - 1 : last;
  p.fb_used_mib = std::move(mem);
  p.gpu_util_pct = std::move(util);
  return p;
}

TEST(PooledPeakSurprises, BothDirectionsPerPodRunningInBothHalves) {
  Telemetry t;
  t.samples = 6;  // halves [0, 3) and [3, 6)
  // Pod 0: peaks 10 then 14 -> surprises 4 (forward) and 0 (backward).
  t.pods.push_back(MakePod({5, 10, 7, 14, 2, 3}, {0, 0, 0, 0, 0, 0}));
  // Pod 1: peaks 30 then 20 -> 0 and 10.
  t.pods.push_back(MakePod({30, 1, 1, 20, 1, 1}, {0, 0, 0, 0, 0, 0}));
  // Pod 2 runs only in the first half (life 0..2): no surprise from it.
  t.pods.push_back(MakePod({50, 50, 50, 0, 0, 0}, {0, 0, 0, 0, 0, 0}, 0, 2));
  const std::vector<double> s = PooledPeakSurprises(t, {0, 1, 2});
  EXPECT_EQ(s, (std::vector<double>{0, 0, 4, 10}));
  // Pods not asked for are not pooled.
  EXPECT_EQ(PooledPeakSurprises(t, {0}), (std::vector<double>{0, 4}));
}

TEST(SurpriseMargin, NearestRankOfOneMinusRisk) {
  const std::vector<double> s{0, 0, 4, 10};
  EXPECT_EQ(SurpriseMargin(s, 0), 10);     // the largest
  EXPECT_EQ(SurpriseMargin(s, 0.25), 4);   // rank ceil(0.75 x 4) = 3
  EXPECT_EQ(SurpriseMargin(s, 0.5), 0);    // rank 2
  EXPECT_EQ(SurpriseMargin(s, 0.99), 0);   // rank 1 at least
  EXPECT_EQ(SurpriseMargin({}, 0), 0);
}

TEST(ActiveDuty, DistributionOverActiveSamplesOnly) {
  // Active samples 30, 30, 70.2 (rounded up to 71); the zeros are left out.
  const ActiveDuty d = ActiveDutyOf(MakePod({1, 1, 1, 1, 1}, {0, 30, 0, 30, 70.2f}));
  EXPECT_DOUBLE_EQ(d.p[30], 2.0 / 3);
  EXPECT_DOUBLE_EQ(d.p[71], 1.0 / 3);
  EXPECT_DOUBLE_EQ(d.p[0], 0);
  // Never active: always 0.
  EXPECT_DOUBLE_EQ(ActiveDutyOf(MakePod({1, 1}, {0, 0})).p[0], 1);
}

TEST(CollisionProbabilityIfActive, HandComputedCases) {
  const ActiveDuty a = ActiveDutyOf(MakePod({1, 1, 1, 1}, {30, 30, 30, 70}));  // 30 w.p. 3/4, 70 w.p. 1/4
  const ActiveDuty b = ActiveDutyOf(MakePod({1, 1}, {40, 40}));              // always 40
  const ActiveDuty c = ActiveDutyOf(MakePod({1, 1}, {31, 0}));               // 31 when active
  EXPECT_DOUBLE_EQ(CollisionProbabilityIfActive({&a}), 0);
  // a + b > 100 only when a is 70: 1/4.
  EXPECT_DOUBLE_EQ(CollisionProbabilityIfActive({&a, &b}), 0.25);
  // a + c: 30 + 31 = 61, 70 + 31 = 101 > 100: 1/4.
  EXPECT_DOUBLE_EQ(CollisionProbabilityIfActive({&a, &c}), 0.25);
  // a + a: 30 + 70 = 100 is no collision; only 70 + 70 (1/16) is.
  EXPECT_DOUBLE_EQ(CollisionProbabilityIfActive({&a, &a}), 1.0 / 16);
  // a + b + c: 30 + 40 + 31 = 101 always over.
  EXPECT_DOUBLE_EQ(CollisionProbabilityIfActive({&a, &b, &c}), 1);
  // Exactly 100 is no collision: 60 + 40.
  const ActiveDuty d = ActiveDutyOf(MakePod({1}, {60}));
  EXPECT_DOUBLE_EQ(CollisionProbabilityIfActive({&b, &d}), 0);
}

// Two pods, each busy (80%) at different times in the data: time-aligned they never
// collide and share one GPU; as if always active they would collide at every sample.
TEST(ColocateIfActive, ComplementaryInSampleIsNotTrustedWhenAsked) {
  Telemetry t;
  t.samples = 4;
  t.pods.push_back(MakePod({100, 100, 100, 100}, {80, 80, 0, 0}));
  t.pods.push_back(MakePod({100, 100, 100, 100}, {0, 0, 80, 80}));
  ColocateOptions o;
  o.gpu_memory = MiB{1000};
  o.max_collision_share = 0.01;
  o.threads = 1;
  EXPECT_EQ(Colocate(t, o).groups.size(), 1u);
  o.collisions_if_active = true;
  EXPECT_EQ(Colocate(t, o).groups.size(), 2u);
}

// The margin is kept free: pods of 300 and 400 MiB share a 1000 MiB GPU, not with a
// 400 MiB margin (300 + 400 > 600).
TEST(ColocateMargin, KeepsTheMarginFree) {
  Telemetry t;
  t.samples = 2;
  t.pods.push_back(MakePod({300, 300}, {0, 0}));
  t.pods.push_back(MakePod({400, 400}, {0, 0}));
  ColocateOptions o;
  o.gpu_memory = MiB{1000};
  o.threads = 1;
  EXPECT_EQ(Colocate(t, o).groups.size(), 1u);
  o.memory_margin_mib = 300;
  EXPECT_EQ(Colocate(t, o).groups.size(), 1u);  // 700 <= 700
  o.memory_margin_mib = 400;
  EXPECT_EQ(Colocate(t, o).groups.size(), 2u);
  o.memory_margin_mib = 650;  // the 400 MiB pod no longer fits alone
  EXPECT_EQ(Colocate(t, o).too_big, (std::vector<std::size_t>{1}));
}

}  // namespace
}  // namespace gpufit
