#include "gpufit/training/spot_decision.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gpufit/training/checkpoint.h"

namespace gpufit {
namespace {

constexpr double kH = 3600;

TrainingJob Job(Checkpointing c = Checkpointing::kApplication) {
  return {.name = "j",
          .gpu_count = 8,
          .gpu_model = "A100",
          .work = Seconds{48 * kH},
          .checkpoint_write = Seconds{300},
          .restore = Seconds{600},
          .checkpointing = c};
}

InterruptionModel Market(double mtbi_hours, Seconds notice = kAwsSpotNotice) {
  InterruptionModel m;
  m.spot = SpotMarket{.interruptions_per_hour = 1 / mtbi_hours, .notice = notice, .basis = "test"};
  m.gpu_mtbf_hours = 50000;
  return m;
}

const GpuPrices kPrices{.on_demand_per_gpu_hour = Usd{3.0}, .spot_per_gpu_hour = Usd{0.9}};

TEST(PoissonTailTest, MatchesHandValues) {
  EXPECT_NEAR(PoissonTailAbove(1, 0), 1 - std::exp(-1), 1e-12);
  EXPECT_NEAR(PoissonTailAbove(1, 1.5), 1 - 2 * std::exp(-1), 1e-12);
  EXPECT_NEAR(PoissonTailAbove(2, 2), 1 - 5 * std::exp(-2), 1e-12);
  EXPECT_EQ(PoissonTailAbove(0, 3), 0);
}

TEST(OutlookTest, OnDemandSeesOnlyHardwareFailuresAtThePerGpuMtbf) {
  const TrainingJob job = Job();
  const RunOutlook o = Outlook(job, CapacityType::kOnDemand, Market(10), kPrices);
  // Job MTBF = 50,000 h / 8 GPUs; tau = Daly(300 s, 6,250 h).
  EXPECT_NEAR(o.mtbf.count(), 6250 * kH, 1e-6);
  EXPECT_NEAR(o.interval.count(), DalyInterval(Seconds{300}, Seconds{6250 * kH}).count(), 1e-6);
  EXPECT_NEAR(o.expected_wall.count(), DalyWallTime(job.work, o.interval, Seconds{300}, Seconds{600}, o.mtbf).count(),
              1e-6);
  EXPECT_NEAR(o.expected_cost.value, 8 * o.expected_wall.count() / kH * 3.0, 1e-9);
  // Lost = wall - failure-free run with Daly's T_s / tau writes, x 8 GPUs.
  const double free_h = (job.work + job.work / o.interval * job.checkpoint_write).count() / kH;
  EXPECT_NEAR(o.expected_lost_gpu_hours, 8 * (o.expected_wall.count() / kH - free_h), 1e-9);
  EXPECT_GT(o.expected_lost_gpu_hours, 0);
  EXPECT_FALSE(o.uses_notice);
}

TEST(OutlookTest, AGangFailsWhenAnyPodsNodeDoesSoYoungDalyUseTheGangsMtbf) {
  // 4 pods x 8 GPUs on 4 spot nodes, each node reclaimed every 500 h, 50,000 h per GPU.
  // By hand: lambda = 4 x 8 / 50,000 + 4 / 500 = 0.00864 /h, M = 115.7407 h = 416,666.67 s
  // (one pod alone: 8 / 50,000 + 1 / 500 = 0.00216 /h, M = 462.96 h).
  // Young: sqrt(2 x 300 x 416,666.67) = sqrt(2.5e8) = 15,811.39 s.
  // Daly: x = 300 / (2 M) = 3.6e-4; 15,811.39 (1 + sqrt(x)/3 + x/9) - 300 = 15,612.02 s.
  // Daly's T_w = M e^(600/M) (e^((tau + 300)/M) - 1) 48 h / tau = 49.9404 h; lost GPU-hours
  // = 32 GPUs x (T_w - 48 h - (48 h / tau) 300 s) = 32.576; cost 32 x 49.9404 h x 0.9 USD.
  TrainingJob gang = Job();
  gang.pods = 4;
  const RunOutlook o = Outlook(gang, CapacityType::kSpot, Market(500), kPrices);
  EXPECT_NEAR(o.mtbf.count(), 416666.67, 0.01);
  EXPECT_NEAR(o.young_interval.count(), 15811.39, 0.01);
  EXPECT_NEAR(o.interval.count(), 15612.02, 0.01);
  EXPECT_NEAR(o.expected_wall.count() / kH, 49.9404, 1e-4);
  EXPECT_NEAR(o.expected_lost_gpu_hours, 32.576, 1e-3);
  EXPECT_NEAR(o.expected_cost.value, 1438.28, 0.01);
}

TEST(OutlookTest, SpotReclaimsAreFailuresUnlessTheNoticeSavesTheWork) {
  // Application checkpoints: a reclaim loses work; M = 1 / (1/10 h + 8/50,000 h).
  const RunOutlook app = Outlook(Job(), CapacityType::kSpot, Market(10), kPrices);
  EXPECT_NEAR(app.mtbf.count() / kH, 1 / (0.1 + 8.0 / 50000), 1e-9);
  EXPECT_FALSE(app.uses_notice);
  // Transparent C/R writes in 300 s: too slow for AWS's 120 s notice...
  EXPECT_FALSE(Outlook(Job(Checkpointing::kTransparent), CapacityType::kSpot, Market(10), kPrices).uses_notice);
  // ...but a 60 s write fits, and then only hardware failures lose work.
  TrainingJob fast = Job(Checkpointing::kTransparent);
  fast.checkpoint_write = Seconds{60};
  const RunOutlook t = Outlook(fast, CapacityType::kSpot, Market(10), kPrices);
  EXPECT_TRUE(t.uses_notice);
  EXPECT_NEAR(t.mtbf.count() / kH, 50000.0 / 8, 1e-9);
  const Seconds base = DalyWallTime(fast.work, t.interval, Seconds{60}, Seconds{600}, t.mtbf);
  EXPECT_NEAR(t.expected_wall.count(), base.count() / (1 - (660.0 / 36000)), 1e-6);
  // 30 s (GCP, Azure) is too short for it.
  EXPECT_FALSE(Outlook(fast, CapacityType::kSpot, Market(10, kGcpSpotNotice), kPrices).uses_notice);
}

TEST(OutlookTest, WithoutCheckpointsTheRunIsOneSegment) {
  const TrainingJob job = Job(Checkpointing::kNone);
  const RunOutlook o = Outlook(job, CapacityType::kSpot, Market(100), kPrices);
  const double m = o.mtbf.count();
  EXPECT_NEAR(o.expected_wall.count(), m * std::exp(600 / m) * std::expm1(job.work.count() / m), 1e-3);
  EXPECT_EQ(o.checkpoint_gpu_hours, 0);
}

TEST(DecideSpotTest, ChoosesByCostRiskAndSlack) {
  // No deadline, rare reclaims: spot, saving about 70%.
  const SpotDecision a = DecideSpot(Job(), Market(1000), kPrices);
  EXPECT_EQ(a.choice, SpotChoice::kSpot);
  EXPECT_NEAR(a.expected_saving.value, a.on_demand.expected_cost.value - a.spot.expected_cost.value, 1e-9);
  EXPECT_GT(a.expected_saving.value / a.on_demand.expected_cost.value, 0.6);

  // No checkpoints and a reclaim every 5 h for a 48 h job: spot would cost far more.
  EXPECT_EQ(DecideSpot(Job(Checkpointing::kNone), Market(5), kPrices).choice, SpotChoice::kOnDemand);

  // A deadline with 25% slack and a reclaim every 10 h: plain spot is too risky, the
  // fallback fits, and its latest switch leaves room for the rest on on-demand.
  TrainingJob d = Job();
  d.deadline = Seconds{48 * 1.25 * kH};
  const SpotDecision b = DecideSpot(d, Market(10), kPrices);
  EXPECT_EQ(b.choice, SpotChoice::kSpotWithFallback);
  ASSERT_TRUE(b.latest_switch);
  EXPECT_NEAR(b.latest_switch->count(),
              (*d.deadline - d.work - std::ceil(d.work / b.on_demand.interval) * d.checkpoint_write - d.restore -
               b.switch_margin)
                  .count(),
              1e-6);
  // On on-demand the 8-GPU job fails once in 6,250 h; it checkpoints at least every half
  // of its slack. Over the on-demand run (work, writes, one more write and R), P(a failure)
  // = 1 - e^(-phase / 6250 h) < 1%, so no margin is needed and that is the risk.
  EXPECT_EQ(b.switch_margin.count(), 0);
  EXPECT_LE(b.on_demand.interval.count(), (*d.deadline - d.work - d.restore).count() / 2);
  const double phase_h = 48 + std::ceil(d.work / b.on_demand.interval - 1e-9) * 300.0 / 3600 + (300.0 + 600.0) / 3600;
  EXPECT_NEAR(b.miss_risk, -std::expm1(-phase_h / 6250), 1e-9);

  // A deadline shorter than the work: nothing helps; on-demand with risk 1.
  // With 10% slack, 5-minute writes every 1.3 h on spot eat more than the slack: no switch
  // can help, plain spot is too risky: on-demand.
  d.deadline = Seconds{48 * 1.10 * kH};
  EXPECT_EQ(DecideSpot(d, Market(10), kPrices).choice, SpotChoice::kOnDemand);
  d.deadline = Seconds{40 * kH};
  const SpotDecision c = DecideSpot(d, Market(10), kPrices);
  EXPECT_EQ(c.choice, SpotChoice::kOnDemand);
  EXPECT_EQ(c.miss_risk, 1);
}

}  // namespace
}  // namespace gpufit
