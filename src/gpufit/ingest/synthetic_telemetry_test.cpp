#include "gpufit/ingest/synthetic_telemetry.h"

#include <gtest/gtest.h>

namespace gpufit {
namespace {

TEST(SyntheticTelemetry, SameSeedSameTelemetry) {
  const Telemetry a = GenerateSyntheticTelemetry({.pods = 20, .samples = 300, .seed = 3});
  const Telemetry b = GenerateSyntheticTelemetry({.pods = 20, .samples = 300, .seed = 3});
  ASSERT_EQ(a.pods.size(), 20u);
  for (std::size_t i = 0; i < a.pods.size(); ++i) {
    EXPECT_EQ(a.pods[i].pod, b.pods[i].pod);
    EXPECT_EQ(a.pods[i].fb_used_mib, b.pods[i].fb_used_mib);
  }
}

TEST(SyntheticTelemetry, HasTheDocumentedMixAndShapes) {
  const Telemetry t = GenerateSyntheticTelemetry({.pods = 20, .samples = 1440, .step_s = 60});
  int inference = 0, training = 0, idle = 0;
  for (const PodSeries& p : t.pods) {
    ASSERT_EQ(p.fb_used_mib.size(), 1440u);
    ASSERT_EQ(p.gpu_util_pct.size(), 1440u);
    for (float u : p.gpu_util_pct) ASSERT_TRUE(u >= 0 && u <= 100);
    inference += p.pod.starts_with("infer-");
    training += p.pod.starts_with("train-");
    idle += p.pod.starts_with("idle-");
    if (p.pod.starts_with("train-")) {
      EXPECT_GE(p.first * 60, 20u * 3600) << "training starts at night";
      EXPECT_EQ(p.fb_used_mib[0], 0) << "not running before its start";
    }
  }
  EXPECT_EQ(training, 5);  // 20 / 4
  EXPECT_EQ(idle, 3);      // 20 * 15 / 100
  EXPECT_EQ(inference, 12);
}

}  // namespace
}  // namespace gpufit
