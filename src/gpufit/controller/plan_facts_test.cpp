#include "gpufit/controller/plan_facts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufit::controller {
namespace {

using ::testing::HasSubstr;

// Two replicas of deployment/ml/a share GPU 0 with caps 30000 and 34000 MiB; pod b (no
// workload: key pod/b) is too big for the target and gets an l4; pod c keeps its GPU.
constexpr const char* kPlan = R"({
  "schema_version": 1,
  "totals": {"gpus_before": 4, "gpus_after": 2, "usd_per_month_before": 4000.5,
             "usd_per_month_after": 1500.25, "usd_per_month_saved": 2500.25},
  "pods": [
    {"pod": "ml/a-0", "workload": "deployment/ml/a", "group": 0,
     "right_sizing": {"required_mib": 20000, "recommended_gpu": "a100-80gb"}},
    {"pod": "ml/a-1", "workload": "deployment/ml/a", "group": 0,
     "right_sizing": {"required_mib": 21000, "recommended_gpu": "a100-80gb"}},
    {"pod": "b[0]", "workload": null, "group": null,
     "right_sizing": {"required_mib": 90000, "recommended_gpu": "h200-141gb"}},
    {"pod": "c", "workload": null, "group": null,
     "right_sizing": {"required_mib": 5000, "recommended_gpu": "l4"}}
  ],
  "groups": [{"pods": ["ml/a-0", "ml/a-1"], "memory_caps_mib": [30000, 34000]}],
  "kept_on_current_gpu": ["c"],
  "workload_profiles": {"workloads": [{"workload": "deployment/ml/a", "memory_peak_mib": 25000.5},
                                      {"workload": "pod/b", "memory_peak_mib": 80000}]},
  "summary": {"status": {"colocation": {"status": "held", "why": "..."},
                         "right_sizing": {"status": "did not hold", "why": "..."}}}
})";

TEST(ReadPlanFacts, TotalsComeFromTheTotalsObject) {
  const Result<PlanFacts> f = ReadPlanFacts(kPlan, "plan.json");
  ASSERT_TRUE(f.has_value()) << f.error().message;
  EXPECT_EQ(f->gpus_before, 4);
  EXPECT_EQ(f->gpus_after, 2);
  EXPECT_DOUBLE_EQ(f->usd_per_month_before, 4000.5);
  EXPECT_DOUBLE_EQ(f->usd_per_month_after, 1500.25);
  EXPECT_DOUBLE_EQ(f->usd_per_month_saved, 2500.25);
}

TEST(ReadPlanFacts, AWorkloadsCapIsTheLargestOfItsPodsGroupCaps) {
  const Result<PlanFacts> f = ReadPlanFacts(kPlan, "plan.json");
  ASSERT_TRUE(f.has_value());
  ASSERT_EQ(f->workloads.size(), 3u);
  const WorkloadFacts& a = f->workloads[0];
  EXPECT_EQ(a.workload, "deployment/ml/a");
  EXPECT_EQ(a.cap_mib, 34000);  // the group's caps, not required_mib (21000)
  EXPECT_DOUBLE_EQ(a.fitted_peak_mib, 25000.5);
  EXPECT_EQ(a.strategy, "colocation");
  EXPECT_EQ(a.verdict, "held");
  EXPECT_THAT(a.pods, ::testing::ElementsAre("ml/a-0", "ml/a-1"));
}

TEST(ReadPlanFacts, APodTooBigForTheTargetIsRightSizedWithItsVerdict) {
  const Result<PlanFacts> f = ReadPlanFacts(kPlan, "plan.json");
  ASSERT_TRUE(f.has_value());
  const WorkloadFacts& b = f->workloads[1];
  EXPECT_EQ(b.workload, "pod/b");  // "[0]" dropped
  EXPECT_EQ(b.cap_mib, 90000);
  EXPECT_EQ(b.strategy, "right_sizing");
  EXPECT_EQ(b.verdict, "did not hold");
  EXPECT_EQ(f->workload_of.at("b[0]"), "pod/b");
}

TEST(ReadPlanFacts, AKeptPodIsNotTested) {
  const Result<PlanFacts> f = ReadPlanFacts(kPlan, "plan.json");
  ASSERT_TRUE(f.has_value());
  const WorkloadFacts& c = f->workloads[2];
  EXPECT_EQ(c.workload, "pod/c");
  EXPECT_EQ(c.strategy, "kept");
  EXPECT_EQ(c.verdict, "not tested");
  EXPECT_DOUBLE_EQ(c.fitted_peak_mib, 0);
}

TEST(ReadPlanFacts, SectionsAloneHaveNoWorkloads) {
  const Result<PlanFacts> f = ReadPlanFacts(R"({"schema_version": 1, "training": {}})", "plan.json");
  ASSERT_TRUE(f.has_value());
  EXPECT_TRUE(f->workloads.empty());
  EXPECT_EQ(f->gpus_before, 0);
}

TEST(ReadPlanFacts, BadDocumentsAreNamedErrors) {
  struct Case {
    const char* name;
    std::string text;
    const char* says;
  };
  const Case cases[] = {
      {"not json", "{", "plan.json: not a plan.json"},
      {"other schema", R"({"schema_version": 2})", "schema_version must be 1, got 2"},
      {"no schema", R"({"pods": []})", "schema_version must be 1, got none"},
      {"wrong type", R"({"schema_version": 1, "pods": [], "groups": [], "totals": {"gpus_before": "x"}})",
       "plan.json: not a plan.json of schema_version 1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Result<PlanFacts> f = ReadPlanFacts(c.text, "plan.json");
    ASSERT_FALSE(f.has_value());
    EXPECT_EQ(f.error().code, Code::kInvalidArgument);
    EXPECT_THAT(f.error().message, HasSubstr(c.says));
  }
}

}  // namespace
}  // namespace gpufit::controller
