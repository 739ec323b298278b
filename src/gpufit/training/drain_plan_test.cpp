#include "gpufit/training/drain_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufit {
namespace {

using ::testing::HasSubstr;

constexpr double kH = 3600;

// g0..g3 run a gang of 4 pods x 8 GPUs; s0, s1 are free. All on-demand A100.
std::vector<TrainingNode> Nodes() {
  std::vector<TrainingNode> n;
  for (const char* name : {"g0", "g1", "g2", "g3", "s0", "s1"}) n.push_back({name, 8, "A100", CapacityType::kOnDemand});
  return n;
}

// 10 h of work from t = 0, checkpoint every 1 h, each write 0.1 h (checkpoints end at 1.1 h,
// 2.2 h, ...), restore 0.2 h.
TrainingJob Gang(int max_unavailable = 1) {
  return {.name = "pretrain",
          .gpu_count = 8,
          .gpu_model = "A100",
          .work = Seconds{10 * kH},
          .checkpoint_write = Seconds{0.1 * kH},
          .restore = Seconds{0.2 * kH},
          .checkpointing = Checkpointing::kApplication,
          .disruption_group = "pretrain-pdb",
          .max_unavailable = max_unavailable,
          .pods = 4,
          .gang = "label kueue.x-k8s.io/pod-group-name=pretrain"};
}

JobPlacement OnG0ToG3(const TrainingJob& job) {
  return {.node = 0,
          .schedule = CheckpointSchedule::ForRun(job, Seconds{0}, Seconds{0}, Seconds{kH}),
          .other_pods = {1, 2, 3}};
}

TEST(PlanDrainTest, DrainingOnePodsNodeStopsTheWholeGangAndEveryPodLosesItsWork) {
  const std::vector<TrainingJob> jobs{Gang()};
  // Drain g1 (the gang's second pod) at 1.6 h, now 1.5 h: no checkpoint ends in [1.5, 1.6] h.
  const auto plan = PlanDrain(Nodes(), jobs, {OnG0ToG3(jobs[0])}, {"g1"}, Seconds{1.5 * kH}, Seconds{1.6 * kH});
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->steps.size(), 1u);
  const DrainStep& s = plan->steps[0];
  EXPECT_EQ(s.action, DrainAction::kStopAndLose);
  EXPECT_NEAR(s.stop_at.count() / kH, 1.5, 1e-9);
  // By hand: the segment began at 1.1 h, so 0.4 h is lost by each of the 4 pods x 8 GPUs:
  // 0.4 x 32 = 12.8 GPU-hours (not one pod's 0.4 x 8 = 3.2); down 0.2 h x 32 = 6.4 GPU-hours.
  EXPECT_NEAR(s.lost_work.count() / kH, 0.4, 1e-9);
  EXPECT_NEAR(plan->lost_gpu_hours, 12.8, 1e-9);
  EXPECT_NEAR(plan->downtime_gpu_hours, 6.4, 1e-9);
  // The pod on g1 moves to s0 (best fit, first of equals); the others restart in place.
  EXPECT_EQ(s.pod_nodes, (std::vector<std::size_t>{0, 4, 2, 3}));
  ASSERT_TRUE(s.target);
  EXPECT_EQ(*s.target, 4u);
  EXPECT_FALSE(s.budget_blocks_eviction);
  EXPECT_TRUE(plan->problems.empty());
}

TEST(PlanDrainTest, AGangWithTwoDrainedNodesWaitsWhenOnlyOnePodHasRoom) {
  std::vector<TrainingNode> nodes = Nodes();
  nodes.pop_back();  // only s0 is free
  const std::vector<TrainingJob> jobs{Gang()};
  const auto plan = PlanDrain(nodes, jobs, {OnG0ToG3(jobs[0])}, {"g0", "g1"}, Seconds{1.5 * kH}, Seconds{1.6 * kH});
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_TRUE(plan->steps[0].pod_nodes.empty());
  EXPECT_FALSE(plan->steps[0].target);
  ASSERT_EQ(plan->problems.size(), 1u);
  EXPECT_THAT(plan->problems[0], HasSubstr("no room now for 1 of its 4 pods"));
}

TEST(PlanDrainTest, MaxUnavailableZeroIsPlannedAsCheckpointThenStopTheGangTogether) {
  const std::vector<TrainingJob> jobs{Gang(/*max_unavailable=*/0)};
  // Now 1.0 h, drain at 1.5 h: the checkpoint ending at 1.1 h is in the window.
  const auto plan = PlanDrain(Nodes(), jobs, {OnG0ToG3(jobs[0])}, {"g3"}, Seconds{1.0 * kH}, Seconds{1.5 * kH});
  ASSERT_TRUE(plan) << plan.error().message;
  const DrainStep& s = plan->steps[0];
  EXPECT_EQ(s.action, DrainAction::kAfterCheckpoint);
  EXPECT_NEAR(s.stop_at.count() / kH, 1.1, 1e-9);
  EXPECT_EQ(s.lost_work.count(), 0);
  EXPECT_TRUE(s.budget_blocks_eviction);
  ASSERT_EQ(plan->problems.size(), 1u);
  const std::string& p = plan->problems[0];
  EXPECT_THAT(p,
              HasSubstr("'pretrain-pdb' has maxUnavailable 0, so the drain cannot evict any of its 4 pods and waits"));
  EXPECT_THAT(p, HasSubstr("let the periodic checkpoint end at 1.100 h, then stop all 4 pods together yourself"));
  EXPECT_THAT(p, HasSubstr("relax the budget"));
  EXPECT_THAT(p, HasSubstr("otherwise the drain waits"));
}

TEST(PlanDrainTest, ABudgetCountsTheGangsPodsAsDownUntilItIsBack) {
  // One budget of maxUnavailable 4: the gang's eviction is allowed, and while its 4 pods are
  // down (1.1 h to 1.3 h) no other eviction of the budget is, so the one-pod job on s0
  // stops when the gang is back at 1.3 h, losing the 0.2 h computed since its 1.1 h checkpoint.
  std::vector<TrainingJob> jobs{Gang(4), Gang(4)};
  jobs[1].name = "eval";
  jobs[1].pods = 1;
  std::vector<std::optional<JobPlacement>> running{
      OnG0ToG3(jobs[0]), JobPlacement{4, CheckpointSchedule::ForRun(jobs[1], Seconds{0}, Seconds{0}, Seconds{kH})}};
  const auto plan = PlanDrain(Nodes(), jobs, running, {"g0", "s0"}, Seconds{1.0 * kH}, Seconds{1.5 * kH});
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->steps.size(), 2u);
  EXPECT_EQ(jobs[plan->steps[0].job].name, "pretrain");
  EXPECT_NEAR(plan->steps[0].stop_at.count() / kH, 1.1, 1e-9);
  EXPECT_EQ(jobs[plan->steps[1].job].name, "eval");
  EXPECT_EQ(plan->steps[1].action, DrainAction::kStopAndLose);
  EXPECT_NEAR(plan->steps[1].stop_at.count() / kH, 1.3, 1e-9);
  EXPECT_NEAR(plan->steps[1].lost_work.count() / kH, 0.2, 1e-9);
}

}  // namespace
}  // namespace gpufit
