// The drain planner (training/drain_plan.h) checked by hand on a small cluster, then
// replayed in the training simulator: acceptance "a maintenance drain of nodes running
// multi-GPU jobs produces a plan whose replay loses at most one checkpoint interval per job".
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "gpufit/sim/training_sim.h"
#include "gpufit/training/drain_plan.h"

namespace gpufit {
namespace {

constexpr double kH = 3600;
const GpuPrices kPrices{.on_demand_per_gpu_hour = Usd{3.0}, .spot_per_gpu_hour = Usd{0.9}};
const Seconds kTau{2 * kH};

struct Scenario {
  std::vector<TrainingNode> nodes;
  std::vector<TrainingJob> jobs;
  std::vector<JobRunPolicy> policies;
  TrainingSimOptions options;
};

// d0, d1 are drained at 7 h; k0..k2 stay. Jobs (placed best fit in this order at t = 0):
// A 8 GPUs -> d0; B 4 (transparent) -> d1; C, E 2 each (one budget, maxUnavailable 1) -> d1;
// F 4 -> k0. 20 h of work, tau 2 h, delta 5 min, R 10 min: checkpoints end at
// 2.0833, 4.1667, 6.25, 8.3333 h.
Scenario Make() {
  Scenario s;
  for (const char* n : {"d0", "d1", "k0", "k1", "k2"}) {
    s.nodes.push_back({.name = n, .gpu_count = 8, .gpu_model = "A100", .capacity = CapacityType::kOnDemand});
  }
  const auto job = [](std::string name, int gpus, Checkpointing c, std::string group) {
    return TrainingJob{.name = std::move(name),
                       .gpu_count = gpus,
                       .gpu_model = "A100",
                       .work = Seconds{20 * kH},
                       .checkpoint_write = Seconds{300},
                       .restore = Seconds{600},
                       .checkpointing = c,
                       .disruption_group = std::move(group)};
  };
  s.jobs = {job("A", 8, Checkpointing::kApplication, ""), job("B", 4, Checkpointing::kTransparent, ""),
            job("C", 2, Checkpointing::kApplication, "g"), job("E", 2, Checkpointing::kApplication, "g"),
            job("F", 4, Checkpointing::kApplication, "")};
  for (std::size_t i = 0; i < s.jobs.size(); ++i) {
    s.policies.push_back({.choice = SpotChoice::kOnDemand,
                          .spot_interval = kTau,
                          .on_demand_interval = kTau,
                          .switch_margin = Seconds{0},
                          .prices = kPrices});
  }
  s.options.poisson_reclaims = false;
  s.options.hardware_failures = false;
  return s;
}

TEST(DrainReplayTest, PlanIsRightByHandAndItsReplayLosesAtMostOneIntervalPerJob) {
  Scenario s = Make();
  const Seconds now{5.5 * kH}, drain{7 * kH};
  s.options.snapshot_at = now;
  const auto before = SimulateTraining(s.nodes, s.jobs, s.policies, s.options);
  ASSERT_TRUE(before) << before.error().message;
  std::vector<std::optional<JobPlacement>> running(s.jobs.size());
  for (const RunningJob& r : before->snapshot) running[r.job] = JobPlacement{r.node, r.schedule};
  ASSERT_EQ(running[0]->node, 0u);  // A on d0
  ASSERT_EQ(running[3]->node, 1u);  // E on d1

  const auto plan = PlanDrain(s.nodes, s.jobs, running, {"d0", "d1"}, now, drain);
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_TRUE(plan->problems.empty());
  std::map<std::string, DrainStep> by_job;
  for (const DrainStep& st : plan->steps) by_job[s.jobs[st.job].name] = st;
  ASSERT_EQ(by_job.size(), 4u);  // F is not on a drained node
  // A, B, C stop right after the checkpoint ending at 6.25 h, losing nothing.
  for (const char* name : {"A", "B", "C"}) {
    EXPECT_EQ(by_job[name].action, DrainAction::kAfterCheckpoint) << name;
    EXPECT_NEAR(by_job[name].stop_at.count() / kH, 6.25, 1e-9) << name;
    EXPECT_EQ(by_job[name].lost_work.count(), 0) << name;
  }
  // E shares C's budget: it stops when C is back (6.25 h + R), losing the 10 min computed since.
  EXPECT_EQ(by_job["E"].action, DrainAction::kStopAndLose);
  EXPECT_NEAR(by_job["E"].stop_at.count() / kH, 6.25 + 1.0 / 6, 1e-9);
  EXPECT_NEAR(by_job["E"].lost_work.count() / kH, 1.0 / 6, 1e-9);
  // Targets, biggest first, best fit: A -> k1 (8 free), B -> k0 (4 free), C and E -> k2.
  EXPECT_EQ(s.nodes[*by_job["A"].target].name, "k1");
  EXPECT_EQ(s.nodes[*by_job["B"].target].name, "k0");
  EXPECT_EQ(s.nodes[*by_job["C"].target].name, "k2");
  EXPECT_EQ(s.nodes[*by_job["E"].target].name, "k2");

  // Replay: the drained nodes are cordoned now, down from 7 h to 9 h; the plan's stops run.
  TrainingSimOptions replay = s.options;
  replay.snapshot_at.reset();
  for (const char* n : {"d0", "d1"}) {
    replay.maintenance.push_back({.node = n, .start = drain, .duration = Seconds{2 * kH}, .cordon_at = now});
  }
  replay.reserve_at = now;
  for (const DrainStep& st : plan->steps) {
    replay.migrations.push_back({.job = s.jobs[st.job].name,
                                 .stop_at = st.stop_at,
                                 .emergency_checkpoint = st.action == DrainAction::kEmergencyCheckpoint,
                                 .target_node = st.target ? s.nodes[*st.target].name : ""});
  }
  const auto with_plan = SimulateTraining(s.nodes, s.jobs, s.policies, replay);
  ASSERT_TRUE(with_plan) << with_plan.error().message;
  EXPECT_EQ(with_plan->completed, 5);
  for (std::size_t j = 0; j < s.jobs.size(); ++j) {
    EXPECT_LE(with_plan->jobs[j].lost_work, kTau) << s.jobs[j].name;
    const double planned = by_job.contains(s.jobs[j].name) ? by_job[s.jobs[j].name].lost_work.count() : 0;
    EXPECT_NEAR(with_plan->jobs[j].lost_work.count(), planned, 1e-6) << s.jobs[j].name;
  }
  // A restored on k1 right after its checkpoint: 20 h + 10 writes + R = 20 h 60 min.
  EXPECT_NEAR(with_plan->jobs[0].finish->count() / kH, 20 + 10 * 300 / kH + 600 / kH, 1e-9);

  // Without the plan the pods get the 30 s grace at 7 h: each loses the 0.75 h since 6.25 h.
  TrainingSimOptions unplanned = s.options;
  unplanned.snapshot_at.reset();
  for (const char* n : {"d0", "d1"})
    unplanned.maintenance.push_back(
        {.node = n, .start = drain, .duration = Seconds{2 * kH}, .cordon_at = std::nullopt});
  const auto without = SimulateTraining(s.nodes, s.jobs, s.policies, unplanned);
  ASSERT_TRUE(without) << without.error().message;
  EXPECT_NEAR(without->jobs[0].lost_work.count() / kH, 0.75, 1e-6);
  EXPECT_LT(with_plan->lost_gpu_hours, without->lost_gpu_hours);
}

}  // namespace
}  // namespace gpufit
