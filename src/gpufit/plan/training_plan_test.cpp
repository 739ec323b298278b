#include "gpufit/plan/training_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "gpufit/core/test_support.h"

namespace gpufit {
namespace {

constexpr const char* kWorkload = R"(
jobs:
  - {name: pretrain, gpus: 8, gpu_model: a100-80gb, work_h: 48, checkpoint_write_s: 60, restore_s: 300}
  - {name: fragile, gpus: 8, gpu_model: a100-80gb, work_h: 48, checkpoint_write_s: 60, restore_s: 300,
     checkpointing: none}
  - {name: due, gpus: 8, gpu_model: h100-80gb, work_h: 20, checkpoint_write_s: 300, restore_s: 600, deadline_h: 25}
interruptions:
  spot: {mtbi_h: 4, notice_s: 120}
)";

TEST(TrainingPlanTest, RecommendationsIntervalsAndLabels) {
  const testing::TempDir dir;
  auto w = ReadTrainingWorkload(dir.Write("jobs.yaml", kWorkload));
  ASSERT_TRUE(w) << w.error().message;
  const auto plan = BuildTrainingPlan(*w, GpuCatalog::Embedded(), CapacityLabels::kKarpenter, "jobs.yaml");
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->jobs.size(), 3u);
  // Catalog prices: a100-80gb 3.4309 on-demand, 1.0842 spot.
  EXPECT_DOUBLE_EQ(plan->jobs[0].prices.spot_per_gpu_hour.value, 1.0842);
  EXPECT_EQ(plan->jobs[0].decision.choice, SpotChoice::kSpot);
  EXPECT_EQ(plan->jobs[1].decision.choice, SpotChoice::kOnDemand);  // loses everything every 4 h
  EXPECT_EQ(plan->jobs[2].decision.choice, SpotChoice::kSpotWithFallback);
  const TrainingRecommendation& r = plan->jobs[0];
  EXPECT_EQ(r.annotations.at(kCheckpointIntervalAnnotation), fmt::format("{:.0f}", std::round(r.interval.count())));
  EXPECT_EQ(r.env.at(kCheckpointIntervalEnv), r.annotations.at(kCheckpointIntervalAnnotation));
  EXPECT_EQ(r.scheduling.node_selector.at("karpenter.sh/capacity-type"), "spot");
  EXPECT_EQ(plan->jobs[1].scheduling.node_selector.at("karpenter.sh/capacity-type"), "on-demand");
  EXPECT_FALSE(plan->jobs[1].annotations.contains(kCheckpointIntervalAnnotation));
  EXPECT_TRUE(plan->jobs[2].annotations.contains(kSwitchAtAnnotation));

  const nlohmann::json j = nlohmann::json::parse(TrainingPlanToJson(*plan));
  EXPECT_EQ(j["jobs"][0]["podSpec"]["nodeSelector"]["karpenter.sh/capacity-type"], "spot");
  EXPECT_EQ(j["jobs"][0]["recommendation"], "spot");
  EXPECT_NEAR(j["totals"]["expected_on_demand_cost_usd"].get<double>(), plan->on_demand_cost.value, 1e-9);
  EXPECT_NE(TrainingPlanToMarkdown(*plan).find("| pretrain | 8 | application | spot |"), std::string::npos);
}

TEST(TrainingPlanTest, ProviderLabelsAreTheDocumentedOnes) {
  // ../shared/reference/formats.md section g.
  EXPECT_EQ(
      ConstraintsFor(CapacityType::kSpot, CapacityLabels::kEks).node_selector.at("eks.amazonaws.com/capacityType"),
      "SPOT");
  EXPECT_EQ(
      ConstraintsFor(CapacityType::kOnDemand, CapacityLabels::kEks).node_selector.at("eks.amazonaws.com/capacityType"),
      "ON_DEMAND");
  const SchedulingConstraints gke = ConstraintsFor(CapacityType::kSpot, CapacityLabels::kGke);
  EXPECT_EQ(gke.node_selector.at("cloud.google.com/gke-spot"), "true");
  ASSERT_EQ(gke.tolerations.size(), 1u);
  EXPECT_EQ(gke.tolerations[0].key, "cloud.google.com/gke-spot");
  const SchedulingConstraints gke_off = ConstraintsFor(CapacityType::kOnDemand, CapacityLabels::kGke);
  ASSERT_EQ(gke_off.required_affinity.size(), 1u);
  EXPECT_EQ(gke_off.required_affinity[0].op, "DoesNotExist");
  const SchedulingConstraints aks = ConstraintsFor(CapacityType::kSpot, CapacityLabels::kAks);
  EXPECT_EQ(aks.node_selector.at("kubernetes.azure.com/scalesetpriority"), "spot");
  EXPECT_EQ(aks.tolerations[0].effect, "NoSchedule");
  EXPECT_EQ(ConstraintsFor(CapacityType::kOnDemand, CapacityLabels::kAks).required_affinity[0].values,
            std::vector<std::string>{"spot"});
}

TEST(TrainingPlanTest, UnknownGpuModelWithoutPriceIsAnError) {
  const testing::TempDir dir;
  auto w = ReadTrainingWorkload(
      dir.Write("jobs.yaml", "jobs:\n  - {name: a, gpus: 1, gpu_model: V100M32, work_h: 1, checkpoint_size_gib: 1}\n"));
  ASSERT_TRUE(w);
  const auto plan = BuildTrainingPlan(*w, GpuCatalog::Embedded(), CapacityLabels::kGke, "x");
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message.find("V100M32"), std::string::npos);
}

}  // namespace
}  // namespace gpufit
