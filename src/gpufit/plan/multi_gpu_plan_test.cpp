// Issue 18, point 2: pods on several GPUs never enter a sharing plan.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpufit/plan/plan.h"
#include "gpufit/plan/plan_writers.h"

namespace gpufit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// 60 one-minute samples at constant memory (MiB) and duty (percent).
PodSeries Series(const std::string& name, float mib, float duty, const std::string& field = kDcgmGpuUtil,
                 const std::string& device = "") {
  PodSeries p;
  p.pod = name;
  p.fb_used_mib.assign(60, mib);
  p.gpu_util_pct.assign(60, duty);
  p.first = 0;
  p.last = 59;
  p.util_field = field;
  p.device = device;
  return p;
}

Telemetry Of(std::vector<PodSeries> pods) {
  Telemetry t;
  t.step_s = 60;
  t.samples = 60;
  t.pods = std::move(pods);
  return t;
}

PlanOptions Options() {
  PlanOptions o;
  o.target_gpu = "h100-80gb";
  return o;
}

// Three pods of 10000 MiB at 10 % would share one H100. ml/m's pod spec asks for 2 GPUs:
// it keeps both (whole, alone), a and b share one: 1 + 1 + 2 = 4 GPUs before, 1 + 2 after.
TEST(BuildPlan, APodWhoseSpecAsksForTwoGpusIsKeptWholeNotPacked) {
  PlanOptions o = Options();
  o.spec_devices = {{"ml/m", 2}};
  const Telemetry t = Of({Series("ml/a", 10000, 10), Series("ml/b", 10000, 10), Series("ml/m", 10000, 10)});
  const Result<Plan> plan = BuildPlan(t, GpuCatalog::Embedded(), o, "test");
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->replay.gpus.size(), 1u);
  EXPECT_THAT(plan->replay.gpus[0].pods, ElementsAre(0u, 1u));
  EXPECT_FALSE(plan->group_of[2]);
  EXPECT_THAT(plan->kept_on_current_gpu(), ElementsAre(2u));
  EXPECT_EQ(plan->totals.gpus_before, 4u);
  EXPECT_EQ(plan->totals.gpus_after, 3u);
  const double h100 = GpuCatalog::Embedded().Find("h100-80gb")->on_demand_per_gpu_hour.value;
  EXPECT_DOUBLE_EQ(plan->totals.usd_per_month_before, 4 * h100 * 730);
  EXPECT_DOUBLE_EQ(plan->totals.usd_per_month_after, 3 * h100 * 730);
  EXPECT_THAT(plan->right_sizing[2].reason, HasSubstr("kept whole on h100-80gb: pod ml/m holds 2 devices"));
}

// From telemetry alone: one series per device ("[i]") keeps them both, each a GPU.
TEST(BuildPlan, APodOnTwoDevicesInTheTelemetryIsKeptWhole) {
  const Telemetry t = Of({Series("ml/a", 10000, 10), Series("ml/t[0]", 10000, 10, kDcgmGpuUtil, "GPU-1"),
                          Series("ml/t[1]", 10000, 10, kDcgmGpuUtil, "GPU-2")});
  const Result<Plan> plan = BuildPlan(t, GpuCatalog::Embedded(), Options(), "test");
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->replay.gpus.size(), 1u);
  EXPECT_THAT(plan->replay.gpus[0].pods, ElementsAre(0u));
  EXPECT_THAT(plan->kept_on_current_gpu(), ElementsAre(1u, 2u));
  EXPECT_EQ(plan->totals.gpus_before, 3u);
  EXPECT_EQ(plan->totals.gpus_after, 3u);
  const nlohmann::json j = nlohmann::json::parse(PlanToJson(*plan));
  ASSERT_EQ(j["multi_gpu"].size(), 1u);
  EXPECT_EQ(j["multi_gpu"][0]["pod"], "ml/t");
  EXPECT_EQ(j["multi_gpu"][0]["devices"], 2);
  EXPECT_EQ(j["kept_on_current_gpu"], nlohmann::json::array({"ml/t[0]", "ml/t[1]"}));
}

// Two MIG instances, the second never used: kept (not dropped) and told to ask for one, in
// plan.json and the summary; each pod's duty-cycle field is recorded in both.
TEST(BuildPlan, IdleSecondMigInstanceGivesAskForOneAndFieldsAreRecorded) {
  const Telemetry t = Of({Series("ml/a", 10000, 10), Series("ml/i[0]", 9000, 60, kDcgmGrEngineActive, "GPU-x/gi1"),
                          Series("ml/i[1]", 0, 0, kDcgmGrEngineActive, "GPU-x/gi2")});
  const Result<Plan> plan = BuildPlan(t, GpuCatalog::Embedded(), Options(), "test");
  ASSERT_TRUE(plan) << plan.error().message;
  const nlohmann::json j = nlohmann::json::parse(PlanToJson(*plan));
  const auto& ask = j["multi_gpu"][0]["ask_for_one"];
  ASSERT_TRUE(ask.is_object()) << j["multi_gpu"].dump(2);
  EXPECT_EQ(ask["devices_now"], 2);
  EXPECT_EQ(ask["devices_recommended"], 1);
  EXPECT_EQ(ask["busy"], "ml/i[0]");
  EXPECT_EQ(ask["busy_device"], "GPU-x/gi1");
  EXPECT_EQ(ask["busy_peak_mib"], 9000.0);
  EXPECT_EQ(ask["idle"], nlohmann::json::array({"ml/i[1]"}));
  EXPECT_EQ(j["pods"][0]["profile"]["duty_cycle_field"], kDcgmGpuUtil);
  EXPECT_EQ(j["pods"][1]["profile"]["duty_cycle_field"], kDcgmGrEngineActive);
  EXPECT_EQ(j["pods"][1]["profile"]["device"], "GPU-x/gi1");
  const std::string md = PlanToMarkdown(*plan);
  EXPECT_THAT(md, HasSubstr("DCGM_FI_DEV_GPU_UTIL for ml/a; DCGM_FI_PROF_GR_ENGINE_ACTIVE for the other 2 pods."));
  EXPECT_THAT(md, HasSubstr("| ml/i | 2 | its telemetry shows 2 devices | ask for 1 MIG instance instead of 2"));
}

}  // namespace
}  // namespace gpufit
