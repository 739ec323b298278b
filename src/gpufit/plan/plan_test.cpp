#include "gpufit/plan/plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpufit/ingest/synthetic_telemetry.h"
#include "gpufit/plan/plan_writers.h"

namespace gpufit {
namespace {

using ::testing::HasSubstr;

const Telemetry& Demo() {
  static const Telemetry t = GenerateSyntheticTelemetry({.pods = 16, .samples = 720, .step_s = 120});
  return t;
}

PlanOptions Options() {
  PlanOptions o;
  o.target_gpu = "h100-80gb";
  o.search_budget = 20'000'000;
  return o;
}

TEST(BuildPlan, TotalsAgreeWithTheGroupsAndPrices) {
  const Result<Plan> plan = BuildPlan(Demo(), GpuCatalog::Embedded(), Options(), "demo");
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  const PlanTotals& t = plan->totals;
  EXPECT_EQ(t.gpus_before, 16u);
  EXPECT_EQ(t.gpus_after, plan->replay.gpus.size() + plan->too_big.size());
  EXPECT_LE(t.gpus_lower_bound, t.gpus_after);
  EXPECT_LE(t.gpus_after, t.gpus_first_fit_decreasing);
  EXPECT_DOUBLE_EQ(t.usd_per_month_before, 16 * 6.88 * 730);
  EXPECT_DOUBLE_EQ(t.usd_per_month_after, static_cast<double>(t.gpus_after) * 6.88 * 730);
  EXPECT_TRUE(plan->replay.safe);
  // Every pod is in exactly one group.
  std::size_t placed = 0;
  for (const GpuReplay& g : plan->replay.gpus) placed += g.pods.size();
  EXPECT_EQ(placed + plan->too_big.size(), 16u);
}

TEST(BuildPlan, JsonCarriesTheDocumentedFields) {
  const Result<Plan> plan = BuildPlan(Demo(), GpuCatalog::Embedded(), Options(), "demo");
  ASSERT_TRUE(plan.has_value());
  const nlohmann::json j = nlohmann::json::parse(PlanToJson(*plan));
  for (const char* key :
       {"gpus_before", "gpus_after", "gpus_lower_bound", "usd_per_month_before", "usd_per_month_after"}) {
    EXPECT_TRUE(j["totals"].contains(key)) << key;
  }
  EXPECT_EQ(j["replay"]["memory_overflows"], 0);
  EXPECT_TRUE(j["replay"].contains("max_collision_share"));
  EXPECT_EQ(j["pods"].size(), 16u);
  EXPECT_EQ(j["groups"].size(), plan->replay.gpus.size());
}

TEST(BuildPlan, BadOptionsNameTheOption) {
  struct Case {
    const char* name;
    PlanOptions options;
    Code code;
    const char* expect;
  };
  PlanOptions unknown = Options(), headroom = Options(), share = Options(), reserve = Options();
  unknown.target_gpu = "v100";
  headroom.headroom = -0.1;
  share.max_collision_share = 1.5;
  reserve.reserve = MiB{90000};
  const Case cases[] = {
      {"unknown gpu", unknown, Code::kNotFound, "unknown GPU model 'v100'"},
      {"negative headroom", headroom, Code::kInvalidArgument, "--headroom"},
      {"share above one", share, Code::kInvalidArgument, "--max-collision-share"},
      {"reserve above memory", reserve, Code::kInvalidArgument, "--reserve-mib"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Result<Plan> plan = BuildPlan(Demo(), GpuCatalog::Embedded(), c.options, "demo");
    ASSERT_FALSE(plan.has_value());
    EXPECT_EQ(plan.error().code, c.code);
    EXPECT_THAT(plan.error().message, HasSubstr(c.expect));
  }
}

}  // namespace
}  // namespace gpufit
