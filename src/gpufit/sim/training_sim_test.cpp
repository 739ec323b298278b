#include "gpufit/sim/training_sim.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "gpufit/training/checkpoint.h"

namespace gpufit {
namespace {

constexpr double kH = 3600;
const GpuPrices kPrices{.on_demand_per_gpu_hour = Usd{3.0}, .spot_per_gpu_hour = Usd{0.9}};

std::vector<TrainingNode> Nodes(int count, CapacityType c, const std::string& prefix) {
  std::vector<TrainingNode> nodes;
  for (int i = 0; i < count; ++i) {
    nodes.push_back({.name = prefix + std::to_string(i), .gpu_count = 8, .gpu_model = "A100", .capacity = c});
  }
  return nodes;
}

TrainingJob Job(std::string name, Seconds work, Seconds delta, Seconds restore, Checkpointing c) {
  return {.name = std::move(name),
          .gpu_count = 8,
          .gpu_model = "A100",
          .work = work,
          .checkpoint_write = delta,
          .restore = restore,
          .checkpointing = c};
}

JobRunPolicy Spot(Seconds tau) {
  return {.choice = SpotChoice::kSpot,
          .spot_interval = tau,
          .on_demand_interval = tau,
          .switch_margin = Seconds{0},
          .prices = kPrices};
}

// Nothing random: one reclaim of node s0 at `at` (with AWS's notice).
TrainingSimOptions OneReclaimAt(Seconds at) {
  TrainingSimOptions opt;
  opt.poisson_reclaims = false;
  opt.hardware_failures = false;
  opt.reclaims = {{.node = "s0", .at = at}};
  return opt;
}

TEST(TrainingSimTest, AReclaimLosesTheWorkSinceTheLastCheckpoint) {
  // 10 h of work, tau 2 h, delta 0.1 h, R 0.2 h; reclaimed at 5 h (in the third segment,
  // which began at 4.2 h): 0.8 h lost; restarted on s1: 5 + 0.2 + 6 h + 3 writes = 11.5 h.
  const auto nodes = Nodes(2, CapacityType::kSpot, "s");
  const std::vector<TrainingJob> jobs{
      Job("a", Seconds{10 * kH}, Seconds{360}, Seconds{720}, Checkpointing::kApplication)};
  const TrainingSimOptions opt = OneReclaimAt(Seconds{5 * kH});
  const auto r = SimulateTraining(nodes, jobs, {Spot(Seconds{2 * kH})}, opt);
  ASSERT_TRUE(r) << r.error().message;
  const JobOutcome& o = r->jobs[0];
  ASSERT_TRUE(o.finish);
  EXPECT_NEAR(o.finish->count() / kH, 11.5, 1e-9);
  EXPECT_NEAR(o.lost_work.count() / kH, 0.8, 1e-9);
  EXPECT_EQ(o.interruptions, 1);
  EXPECT_NEAR(o.restoring.count() / kH, 0.2, 1e-9);
  EXPECT_NEAR(o.writing.count() / kH, 0.5, 1e-9);
  EXPECT_NEAR(o.spot_gpu_hours, 8 * 11.5, 1e-9);
  EXPECT_NEAR(o.cost.value, 8 * 11.5 * 0.9, 1e-9);
  EXPECT_NEAR(r->lost_gpu_hours, 8 * (0.8 + 0.2), 1e-9);
  EXPECT_EQ(r->spot_reclaims, 1);
}

TEST(TrainingSimTest, TransparentCheckpointingUsesTheNotice) {
  // delta = 60 s fits AWS's 120 s notice (with the 10 s margin): an emergency write at the
  // notice saves everything; the run is work + 6 writes + one restore = 10 + 0.1 + 0.2 h.
  const auto nodes = Nodes(2, CapacityType::kSpot, "s");
  const std::vector<TrainingJob> jobs{
      Job("a", Seconds{10 * kH}, Seconds{60}, Seconds{720}, Checkpointing::kTransparent)};
  const TrainingSimOptions opt = OneReclaimAt(Seconds{5 * kH});
  const auto r = SimulateTraining(nodes, jobs, {Spot(Seconds{2 * kH})}, opt);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NEAR(r->jobs[0].finish->count() / kH, 10.3, 1e-9);
  EXPECT_EQ(r->jobs[0].lost_work.count(), 0);
  EXPECT_NEAR(r->jobs[0].writing.count() / kH, 0.1, 1e-9);
}

TEST(TrainingSimTest, WithoutCheckpointsAReclaimLosesEverything) {
  const auto nodes = Nodes(2, CapacityType::kSpot, "s");
  const std::vector<TrainingJob> jobs{Job("a", Seconds{10 * kH}, Seconds{360}, Seconds{720}, Checkpointing::kNone)};
  const TrainingSimOptions opt = OneReclaimAt(Seconds{5 * kH});
  const auto r = SimulateTraining(nodes, jobs, {Spot(Seconds{10 * kH})}, opt);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NEAR(r->jobs[0].lost_work.count() / kH, 5, 1e-9);
  EXPECT_NEAR(r->jobs[0].finish->count() / kH, 5 + 0.2 + 10, 1e-9);
}

// Acceptance: the simulator's Monte Carlo mean run time under exponential interruptions
// agrees with Daly's closed form within 2%. 2,000 independent 8-GPU jobs on their own spot
// nodes (a reclaim moves a job to another node; the exponential is memoryless, so each job
// sees rate 1/M throughout, restores included).
TEST(TrainingSimTest, MonteCarloMeanRunTimeMatchesDalysClosedForm) {
  const Seconds m{6 * kH}, delta{300}, restart{600};
  const Seconds tau = DalyInterval(delta, m);
  const Seconds work = 20 * tau;
  constexpr int kJobs = 2000;
  const auto nodes = Nodes(kJobs + 500, CapacityType::kSpot, "s");
  std::vector<TrainingJob> jobs;
  std::vector<JobRunPolicy> policies;
  for (int i = 0; i < kJobs; ++i) {
    jobs.push_back(Job("j" + std::to_string(i), work, delta, restart, Checkpointing::kApplication));
    policies.push_back(Spot(tau));
  }
  TrainingSimOptions opt;
  opt.hardware_failures = false;
  opt.interruptions.spot = {.interruptions_per_hour = 1 / 6.0, .notice = kAwsSpotNotice, .basis = "MTBI 6 h"};
  opt.seed = 11;
  const auto r = SimulateTraining(nodes, jobs, policies, opt);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->completed, kJobs);
  const double daly = DalyWallTime(work, tau, delta, restart, m).count() / kH;
  std::printf("Monte Carlo mean run time %.4f h over %d jobs; Daly closed form %.4f h (ratio %.4f)\n",
              r->mean_completion_h, kJobs, daly, r->mean_completion_h / daly);
  EXPECT_NEAR(r->mean_completion_h / daly, 1.0, 0.02) << "simulated " << r->mean_completion_h << " h, Daly " << daly;
  // Each job saw about T_w / M interruptions.
  double interruptions = 0;
  for (const JobOutcome& o : r->jobs) interruptions += o.interruptions;
  EXPECT_NEAR(interruptions / kJobs / (daly / 6), 1.0, 0.05);
}

TEST(TrainingSimTest, DeadlineFallbackMeetsEveryDeadlineThatPlainSpotMisses) {
  // Reclaims every 4 h on average; 20 h jobs with 25% slack. Plain spot misses some;
  // spot-with-fallback switches to on-demand in time and misses none.
  auto nodes = Nodes(60, CapacityType::kSpot, "s");
  for (const TrainingNode& n : Nodes(60, CapacityType::kOnDemand, "od")) nodes.push_back(n);
  InterruptionModel model;
  model.spot = {.interruptions_per_hour = 0.25, .notice = kAwsSpotNotice, .basis = "MTBI 4 h"};
  std::vector<TrainingJob> jobs;
  for (int i = 0; i < 50; ++i) {
    TrainingJob j =
        Job("j" + std::to_string(i), Seconds{20 * kH}, Seconds{300}, Seconds{600}, Checkpointing::kApplication);
    j.deadline = Seconds{25 * kH};
    jobs.push_back(j);
  }
  TrainingSimOptions opt;
  opt.interruptions = model;
  opt.hardware_failures = false;
  opt.seed = 3;
  std::vector<JobRunPolicy> spot, fallback;
  for (const TrainingJob& j : jobs) {
    spot.push_back(ForcedPolicy(j, CapacityType::kSpot, model, kPrices));
    const SpotDecision d = DecideSpot(j, model, kPrices);
    ASSERT_EQ(d.choice, SpotChoice::kSpotWithFallback) << d.reason;
    fallback.push_back(PolicyFromDecision(d, kPrices));
  }
  const auto a = SimulateTraining(nodes, jobs, spot, opt);
  const auto b = SimulateTraining(nodes, jobs, fallback, opt);
  ASSERT_TRUE(a && b);
  EXPECT_GT(a->deadline_misses, 0);
  EXPECT_EQ(b->deadline_misses, 0);
  EXPECT_GT(b->switched, 0);
  EXPECT_EQ(b->completed, 50);
}

TEST(TrainingSimTest, DeadlineFallbackFollowsCommittedWorkForTransparentJobs) {
  // Transparent jobs whose 300 s write does not fit AWS's 120 s notice: a reclaim loses the
  // work since their last checkpoint, so the switch time must follow the committed work,
  // not what an emergency write could save (an earlier version missed 780 of 2,000 here).
  auto nodes = Nodes(60, CapacityType::kSpot, "s");
  for (const TrainingNode& n : Nodes(60, CapacityType::kOnDemand, "od")) nodes.push_back(n);
  InterruptionModel model;
  model.spot = {.interruptions_per_hour = 0.5, .notice = kAwsSpotNotice, .basis = "MTBI 2 h"};
  std::vector<TrainingJob> jobs;
  std::vector<JobRunPolicy> policies;
  for (int i = 0; i < 100; ++i) {
    TrainingJob j =
        Job("j" + std::to_string(i), Seconds{20 * kH}, Seconds{300}, Seconds{600}, Checkpointing::kTransparent);
    j.gpu_count = 4;
    j.deadline = Seconds{28 * kH};
    const SpotDecision d = DecideSpot(j, model, kPrices);
    ASSERT_EQ(d.choice, SpotChoice::kSpotWithFallback) << d.reason;
    policies.push_back(PolicyFromDecision(d, kPrices));
    jobs.push_back(j);
  }
  for (const std::uint64_t seed : {1, 2, 3, 4, 5}) {
    TrainingSimOptions opt;
    opt.interruptions = model;
    opt.seed = seed;
    const auto r = SimulateTraining(nodes, jobs, policies, opt);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->deadline_misses, 0) << "seed " << seed;
    EXPECT_EQ(r->completed, 100);
    EXPECT_GT(r->switched, 0);
  }
}

TEST(TrainingSimTest, JobsThatCannotFinishStopTheRunWithAnError) {
  // A job without checkpoints whose node is reclaimed every 6 minutes on average: it would
  // need about e^100 tries; the event budget ends the run with an explanation.
  const auto nodes = Nodes(2, CapacityType::kSpot, "s");
  const std::vector<TrainingJob> jobs{Job("a", Seconds{10 * kH}, Seconds{60}, Seconds{60}, Checkpointing::kNone)};
  TrainingSimOptions opt;
  opt.interruptions.spot = {.interruptions_per_hour = 10, .notice = kAwsSpotNotice, .basis = "test"};
  opt.max_events = 100000;
  const auto r = SimulateTraining(nodes, jobs, {Spot(Seconds{10 * kH})}, opt);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kFailedPrecondition);
  EXPECT_NE(r.error().message.find("too frequent"), std::string::npos);
}

TEST(TrainingSimTest, RejectsJobsNoNodeCanTake) {
  const auto nodes = Nodes(1, CapacityType::kOnDemand, "od");
  TrainingJob big = Job("big", Seconds{kH}, Seconds{60}, Seconds{60}, Checkpointing::kApplication);
  big.gpu_count = 16;
  const JobRunPolicy od{.choice = SpotChoice::kOnDemand,
                        .spot_interval = Seconds{kH},
                        .on_demand_interval = Seconds{kH},
                        .switch_margin = Seconds{0},
                        .prices = kPrices};
  const auto r = SimulateTraining(nodes, {big}, {od}, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("big"), std::string::npos);
}

}  // namespace
}  // namespace gpufit
