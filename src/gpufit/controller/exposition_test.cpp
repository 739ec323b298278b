#include "gpufit/controller/exposition.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

namespace gpufit::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

PlanFacts OnePlan() {
  PlanFacts p;
  p.gpus_before = 12;
  p.gpus_after = 5;
  p.usd_per_month_before = 1000;
  p.usd_per_month_after = 400.5;
  p.usd_per_month_saved = 599.5;
  p.workloads = {{.workload = "deployment/ml/web",
                  .pods = {"web-0"},
                  .cap_mib = 20480,
                  .fitted_peak_mib = 18000.5,
                  .strategy = "colocation",
                  .verdict = "did not hold"}};
  return p;
}

TEST(EscapeLabelValue, BackslashQuoteAndLineFeedAreEscaped) {
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(EscapeLabelValue("pod/ns/x-1"), "pod/ns/x-1");
}

TEST(MetricsText, PerWorkloadCapAndOneVerdictGaugeSetOfFour) {
  const PlanFacts plan = OnePlan();
  const std::string text = MetricsText(&plan, nullptr, RunRecord{});
  EXPECT_THAT(text, HasSubstr("gpufit_workload_memory_cap_mib{workload=\"deployment/ml/web\",strategy=\"colocation\"} "
                              "20480\n"));
  EXPECT_THAT(text, HasSubstr("gpufit_workload_fitted_peak_mib{workload=\"deployment/ml/web\"} 18000.5\n"));
  for (const char* v : {"held", "provisional", "not_tested"})
    EXPECT_THAT(text, HasSubstr(fmt::format("gpufit_workload_verdict{{workload=\"deployment/ml/web\",strategy="
                                            "\"colocation\",verdict=\"{}\"}} 0\n",
                                            v)));
  EXPECT_THAT(text, HasSubstr("verdict=\"did_not_hold\"} 1\n"));
}

TEST(MetricsText, PlanTotals) {
  const PlanFacts plan = OnePlan();
  const std::string text = MetricsText(&plan, nullptr, RunRecord{});
  EXPECT_THAT(text, HasSubstr("gpufit_plan_gpus{when=\"before\"} 12\ngpufit_plan_gpus{when=\"after\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("gpufit_plan_usd_per_month{when=\"after\"} 400.5\n"));
  EXPECT_THAT(text, HasSubstr("gpufit_plan_usd_per_month_saved 599.5\n"));
  EXPECT_THAT(text, HasSubstr("gpufit_plan_workloads 1\n"));
}

TEST(MetricsText, DriftCountsAndPerPodExcess) {
  const PlanFacts plan = OnePlan();
  DriftReport d;
  d.over_envelope = {{.pod = "web-0", .workload = "deployment/ml/web", .peak_mib = 21000, .cap_mib = 20480}};
  d.new_workloads = {"pod/ml/\"odd\""};
  d.peaks = {{.workload = "deployment/ml/web",
              .fitted_peak_mib = 18000,
              .recent_peak_mib = 21000,
              .ratio = 1.5,
              .drifted = true}};
  const std::string text = MetricsText(&plan, &d, RunRecord{});
  EXPECT_THAT(text, HasSubstr("gpufit_drift_pods_over_envelope 1\n"));
  EXPECT_THAT(text,
              HasSubstr("gpufit_drift_pod_over_envelope_mib{pod=\"web-0\",workload=\"deployment/ml/web\"} 520\n"));
  EXPECT_THAT(text, HasSubstr("gpufit_drift_new_workloads 1\n"));
  EXPECT_THAT(text, HasSubstr("gpufit_drift_new_workload{workload=\"pod/ml/\\\"odd\\\"\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("gpufit_drift_peak_ratio{workload=\"deployment/ml/web\"} 1.5\n"));
  EXPECT_THAT(text, HasSubstr("gpufit_drift_workloads_peak_drifted 1\n"));
}

TEST(MetricsText, LastRunOutcomeAndCounters) {
  const RunRecord runs{.success = false,
                       .finished_unix_s = 1700000100.25,
                       .duration_s = 3.5,
                       .last_success_unix_s = 1700000000,
                       .successes = 2,
                       .failures = 1,
                       .error = "boom"};
  const std::string text = MetricsText(nullptr, nullptr, runs);
  EXPECT_THAT(text, HasSubstr("gpufit_last_run_success 0\n"));
  EXPECT_THAT(text, HasSubstr("gpufit_last_run_timestamp_seconds 1700000100.250\n"));
  EXPECT_THAT(text, HasSubstr("gpufit_last_run_duration_seconds 3.500\n"));
  EXPECT_THAT(text, HasSubstr("gpufit_last_success_timestamp_seconds 1700000000.000\n"));
  EXPECT_THAT(text, HasSubstr("gpufit_runs_total{outcome=\"success\"} 2\ngpufit_runs_total{outcome=\"failure\"} 1\n"));
  EXPECT_THAT(text, Not(HasSubstr("gpufit_plan_gpus{")));  // no plan yet: headers only
}

// Every sample follows its own family's TYPE line, and every family has HELP and TYPE once.
TEST(MetricsText, EachSampleFollowsItsFamilysHeader) {
  const PlanFacts plan = OnePlan();
  const DriftReport d;
  std::istringstream lines(MetricsText(&plan, &d,
                                       RunRecord{.success = true,
                                                 .finished_unix_s = 1,
                                                 .duration_s = 1,
                                                 .last_success_unix_s = 1,
                                                 .successes = 1,
                                                 .failures = 0,
                                                 .error = ""}));
  std::string line, family;
  std::map<std::string, int> types;
  int samples = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      family = line.substr(7, line.find(' ', 7) - 7);
      ++types[family];
    } else if (line.rfind("# HELP ", 0) != 0) {
      ++samples;
      EXPECT_EQ(line.substr(0, family.size()), family) << line;
      EXPECT_EQ(line.rfind("gpufit_", 0), 0u) << line;
    }
  }
  for (const auto& [name, n] : types) EXPECT_EQ(n, 1) << name;
  EXPECT_EQ(types.size(), 18u);  // the families of exposition.h
  EXPECT_GT(samples, 15);
}

}  // namespace
}  // namespace gpufit::controller
