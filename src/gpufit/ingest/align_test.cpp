#include "gpufit/ingest/align.h"

#include <gtest/gtest.h>

namespace gpufit {
namespace {

RawSeries Series(std::vector<double> t, std::vector<float> v) { return {std::move(t), std::move(v)}; }

TEST(AlignToGrid, StepIsTheMedianSpacingAndLateStartsAreZero) {
  RawTelemetry raw;
  raw.fb_used_mib["a"] = Series({0, 60, 120, 180}, {1, 2, 3, 4});
  raw.gpu_util_pct["a"] = Series({0, 60, 120, 180}, {5, 5, 5, 5});
  raw.fb_used_mib["b"] = Series({120, 180}, {7, 8});  // starts late
  raw.gpu_util_pct["b"] = Series({120, 180}, {1, 1});
  const Result<Telemetry> t = AlignToGrid(raw, "test");
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_EQ(t->step_s, 60);
  EXPECT_EQ(t->samples, 4u);
  ASSERT_EQ(t->pods.size(), 2u);
  EXPECT_EQ(t->pods[1].pod, "b");
  EXPECT_EQ(t->pods[1].first, 2u);
  EXPECT_EQ(t->pods[1].fb_used_mib, (std::vector<float>{0, 0, 7, 8}));
}

TEST(AlignToGrid, GapsTakeTheLargerNeighbour) {
  RawTelemetry raw;
  raw.fb_used_mib["a"] = Series({0, 60, 240, 300}, {10, 30, 20, 20});  // 120 and 180 missing
  raw.gpu_util_pct["a"] = Series({0, 60, 120, 180, 240, 300}, {0, 0, 0, 0, 0, 0});
  const Result<Telemetry> t = AlignToGrid(raw, "test");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->pods[0].fb_used_mib, (std::vector<float>{10, 30, 30, 30, 20, 20}));
  EXPECT_EQ(t->pods[0].filled_samples, 2u);
}

TEST(AlignToGrid, DuplicatesInOneSlotKeepTheLargest) {
  RawTelemetry raw;
  raw.fb_used_mib["a"] = Series({0, 2, 60, 120, 180}, {5, 9, 1, 1, 1});  // 0 and 2 s land on sample 0
  raw.gpu_util_pct["a"] = Series({0, 60, 120, 180}, {1, 1, 1, 1});
  const Result<Telemetry> t = AlignToGrid(raw, "test");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->pods[0].fb_used_mib[0], 9);
}

TEST(AlignToGrid, PodWithOneMetricIsSkippedWithAReason) {
  RawTelemetry raw;
  raw.fb_used_mib["a"] = Series({0, 60}, {1, 1});
  raw.gpu_util_pct["a"] = Series({0, 60}, {1, 1});
  raw.fb_used_mib["lonely"] = Series({0}, {1});
  const Result<Telemetry> t = AlignToGrid(raw, "test");
  ASSERT_TRUE(t.has_value());
  ASSERT_EQ(t->skipped.size(), 1u);
  EXPECT_EQ(t->skipped[0], "lonely: no DCGM_FI_DEV_GPU_UTIL samples");
}

TEST(AlignToGrid, NoPodWithBothMetricsIsAnError) {
  RawTelemetry raw;
  raw.fb_used_mib["a"] = Series({0}, {1});
  const Result<Telemetry> t = AlignToGrid(raw, "file.csv");
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().code, Code::kInvalidArgument);
  EXPECT_NE(t.error().message.find("file.csv"), std::string::npos);
}

}  // namespace
}  // namespace gpufit
