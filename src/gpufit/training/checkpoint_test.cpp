#include "gpufit/training/checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gpufit/training/checkpoint_schedule.h"

namespace gpufit {
namespace {

constexpr double kMin = 60;
Seconds Min(double m) { return Seconds{m * kMin}; }
double InMin(Seconds s) { return s.count() / kMin; }

// ../shared/reference/formulas.md 1.2: delta = 5 min; Daly's Figs. 3-5 print 117, 57, 9.1.
TEST(CheckpointTest, ReproducesTheWorkedExamplesOfFormulasMd) {
  struct Row {
    double m, young, daly1, daly;
  };
  for (const Row& r : {Row{1440, 120.0, 115.0, 116.7}, Row{360, 60.0, 55.0, 56.7}, Row{15, 12.2, 7.2, 9.1}}) {
    SCOPED_TRACE(r.m);
    EXPECT_NEAR(InMin(YoungInterval(Min(5), Min(r.m))), r.young, 0.05);
    EXPECT_NEAR(InMin(DalyFirstOrderInterval(Min(5), Min(r.m))), r.daly1, 0.05);
    EXPECT_NEAR(InMin(DalyInterval(Min(5), Min(r.m))), r.daly, 0.05);
  }
  // delta >= 2M: the interval is M.
  EXPECT_DOUBLE_EQ(InMin(DalyInterval(Min(10), Min(4))), 4);
}

TEST(CheckpointTest, ExpectedLostWorkMatchesTheCheckValue) {
  // formulas.md 1.3: T = 120 min, M = 1440 min -> 59.17 min, and about T/2 - T^2/(12M).
  EXPECT_NEAR(InMin(ExpectedLostPerFailure(Min(120), Min(1440))), 59.17, 0.005);
  EXPECT_NEAR(InMin(ExpectedLostPerFailure(Min(120), Min(1440))), 60 - 120.0 * 120 / (12 * 1440), 0.01);
}

TEST(CheckpointTest, JobMtbfShrinksWithItsParts) {
  // formulas.md 1.4: 64 machines, 1 year each -> 136.9 h; delta = 2 min -> about 3.0 h.
  const Seconds m = JobMtbf(Seconds{8760 * 3600.0}, 64);
  EXPECT_NEAR(m.count() / 3600, 136.9, 0.05);
  EXPECT_NEAR(YoungInterval(Min(2), m).count() / 3600, 3.0, 0.05);
}

TEST(CheckpointTest, MonthlyBandsConvertAsStated) {
  // formulas.md 1.4: 5% -> 14,232 h; 10% -> 6,929 h; 15% -> 4,492 h; 20% -> 3,271 h.
  EXPECT_NEAR(1 / RatePerHourFromMonthlyFraction(0.05), 14232, 1);
  EXPECT_NEAR(1 / RatePerHourFromMonthlyFraction(0.10), 6929, 1);
  EXPECT_NEAR(1 / RatePerHourFromMonthlyFraction(0.15), 4492, 1);
  EXPECT_NEAR(1 / RatePerHourFromMonthlyFraction(0.20), 3271, 1);
}

TEST(CheckpointTest, DalyIntervalNearlyMinimisesDalysWallTime) {
  // Brute force over tau: the higher-order optimum is within 0.1% of the true minimum.
  for (const double m : {15.0, 360.0, 1440.0}) {
    const Seconds work = Min(10000), delta = Min(5), restart = Min(3);
    double best = std::numeric_limits<double>::infinity();
    for (double tau = 0.5; tau < 4 * m; tau += 0.01) {
      best = std::min(best, DalyWallTime(work, Min(tau), delta, restart, Min(m)).count());
    }
    const double at_daly = DalyWallTime(work, DalyInterval(delta, Min(m)), delta, restart, Min(m)).count();
    EXPECT_LE(at_daly, best * 1.001) << m;
  }
}

TEST(CheckpointTest, WallTimeWithoutFailuresIsWorkPlusCheckpoints) {
  const Seconds inf{std::numeric_limits<double>::infinity()};
  EXPECT_DOUBLE_EQ(DalyWallTime(Min(600), Min(60), Min(5), Min(3), inf).count(), Min(650).count());
  // Small failure rates approach it from above.
  EXPECT_GT(DalyWallTime(Min(600), Min(60), Min(5), Min(3), Min(1e7)).count(), Min(650).count());
  EXPECT_NEAR(DalyWallTime(Min(600), Min(60), Min(5), Min(3), Min(1e7)).count(), Min(650).count(), 1);
}

TEST(CheckpointScheduleTest, TimelineOfCommitsAndLosses) {
  // 250 min of work from 50 committed, tau 100, delta 10, compute from t = 1000:
  // segments 100 + 100 (ckpt ends 1110, 1220), last 0... remaining 200 -> two segments.
  const CheckpointSchedule s{
      .compute_start = Min(1000), .committed = Min(50), .work = Min(250), .tau = Min(100), .delta = Min(10)};
  EXPECT_EQ(s.Segments(), 2);
  EXPECT_DOUBLE_EQ(InMin(s.Finish()), 1220);
  EXPECT_DOUBLE_EQ(InMin(s.CommittedAt(Min(1105))), 50);  // writing the first checkpoint
  EXPECT_DOUBLE_EQ(InMin(s.ComputedAt(Min(1105))), 150);
  EXPECT_DOUBLE_EQ(InMin(s.LostAt(Min(1105))), 100);
  EXPECT_DOUBLE_EQ(InMin(s.CommittedAt(Min(1110))), 150);  // committed
  EXPECT_DOUBLE_EQ(InMin(s.LostAt(Min(1140))), 30);
  EXPECT_DOUBLE_EQ(InMin(s.NextCheckpointEnd(Min(1140))), 1220);
  EXPECT_DOUBLE_EQ(InMin(s.NextCheckpointEnd(Min(1110))), 1110);
  EXPECT_DOUBLE_EQ(InMin(s.LastCheckpointEnd(Min(1140))), 1110);
  EXPECT_DOUBLE_EQ(InMin(s.CommittedAt(Min(1220))), 250);
  // A shorter last segment: 230 remaining -> 100, 100, 30.
  const CheckpointSchedule t{
      .compute_start = Min(0), .committed = Min(20), .work = Min(250), .tau = Min(100), .delta = Min(10)};
  EXPECT_EQ(t.Segments(), 3);
  EXPECT_DOUBLE_EQ(InMin(t.Finish()), 230 + 30);
  EXPECT_DOUBLE_EQ(InMin(t.ComputedAt(Min(250))), 250);
  EXPECT_DOUBLE_EQ(InMin(t.CommittedAt(Min(250))), 220);
}

}  // namespace
}  // namespace gpufit
