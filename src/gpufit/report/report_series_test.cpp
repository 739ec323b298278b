#include "gpufit/report/report_series.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <stdexcept>

namespace gpufit::report {
namespace {

using nlohmann::json;

PodSeries Pod(const std::string& name, std::size_t samples) {
  PodSeries p;
  p.pod = name;
  p.fb_used_mib.assign(samples, 0);
  p.gpu_util_pct.assign(samples, 0);
  p.first = 0;
  p.last = samples - 1;
  return p;
}

// 960 samples: two grid samples per drawn point (kMaxPoints = 480).
Telemetry TwoPods() {
  Telemetry t;
  t.start_s = 0;
  t.step_s = 1800;
  t.samples = 960;
  t.pods = {Pod("ns/a", 960), Pod("ns/b", 960), Pod("ns/c", 960)};
  // Bucket 0 (samples 0, 1): a peaks at 0, b at 1; the sum peaks at 1 (1 + 20 = 21 > 10 + 1).
  t.pods[0].fb_used_mib[0] = 10, t.pods[0].fb_used_mib[1] = 1;
  t.pods[1].fb_used_mib[0] = 1, t.pods[1].fb_used_mib[1] = 20;
  for (std::size_t k = 2; k < 960; ++k) t.pods[0].fb_used_mib[k] = 5, t.pods[1].fb_used_mib[k] = 5;
  // Duty of a: the sample's index on the first day, 0 later; b lives samples 2..3 (hour 1).
  for (std::size_t k = 0; k < 48; ++k) t.pods[0].gpu_util_pct[k] = static_cast<float>(k);
  t.pods[1].first = 2, t.pods[1].last = 3;
  t.pods[1].gpu_util_pct[2] = 40, t.pods[1].gpu_util_pct[3] = 60;
  return t;
}

const char* kPlan = R"({"capacity_mib": 81559, "memory_envelope": {"packing_capacity_mib": 80000},
  "groups": [{"pods": ["ns/a", "ns/b"]}, {"pods": ["ns/c"]}],
  "backtest": {"splits": [{"test_samples": [480, 960]}]}})";

TEST(ReportSeries, StackIsTheBucketsPeakSampleNotEachPodsOwnPeak) {
  const json s = json::parse(ReportSeriesJson(TwoPods(), kPlan));
  EXPECT_EQ(s["bucket_samples"], 2);
  ASSERT_EQ(s["gpu_memory"].size(), 1u);  // the lone pod's GPU is not shared
  const json& g = s["gpu_memory"][0];
  EXPECT_EQ(g["gpu"], 0);
  EXPECT_EQ(g["pods"], json({"ns/a", "ns/b"}));
  EXPECT_EQ(g["hours"].size(), 480u);
  EXPECT_EQ(g["mib"][0][0], 1.0);   // a at sample 1
  EXPECT_EQ(g["mib"][1][0], 20.0);  // b at sample 1
  EXPECT_EQ(g["mib"][0][1], 5.0);
  EXPECT_EQ(g["peak_mib"], 21.0);
  EXPECT_EQ(g["capacity_mib"], 81559.0);
  EXPECT_EQ(g["packing_capacity_mib"], 80000.0);
  EXPECT_DOUBLE_EQ(g["hours"][1].get<double>(), 1.0);  // sample 2 x 1800 s
}

TEST(ReportSeries, HoldoutIsTheBacktestsTestPart) {
  const json s = json::parse(ReportSeriesJson(TwoPods(), kPlan));
  EXPECT_DOUBLE_EQ(s["holdout"]["begin_h"].get<double>(), 240.0);  // 480 x 1800 s
  EXPECT_DOUBLE_EQ(s["holdout"]["end_h"].get<double>(), 480.0);
  EXPECT_TRUE(json::parse(ReportSeriesJson(TwoPods(), R"({"groups": []})"))["holdout"].is_null());
}

TEST(ReportSeries, DutyByHourOfDayOverEachPodsLife) {
  const json s = json::parse(ReportSeriesJson(TwoPods(), kPlan));
  const json& d = s["duty_by_hour"];
  ASSERT_EQ(d["pods"].size(), 3u);
  EXPECT_EQ(d["pods"][2], "ns/b");  // the shortest life last
  // a, hour h of day 0: samples 2h and 2h + 1 (values 2h, 2h + 1); the 19 later days are 0.
  // Mean over 20 days: (4h + 1) / 40.
  for (int h = 0; h < 24; ++h) EXPECT_NEAR(d["pct"][0][h].get<double>(), (4.0 * h + 1) / 40.0, 0.051) << h;
  EXPECT_EQ(d["pct"][2][1], 50.0);  // b: samples 2, 3 fall in hour 1
  EXPECT_TRUE(d["pct"][2][0].is_null());
  EXPECT_EQ(s["duty_pods_omitted"], 0);
}

TEST(ReportSeries, RejectsAPlanThatIsNotJson) {
  EXPECT_THROW(ReportSeriesJson(TwoPods(), "[1, 2"), std::invalid_argument);
}

}  // namespace
}  // namespace gpufit::report
