#include "gpufit/optimize/multi_gpu.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// One series of 10 one-minute samples at constant memory (MiB) and duty (percent).
PodSeries Series(const std::string& name, const std::string& device, float mib, float duty) {
  PodSeries p;
  p.pod = name;
  p.device = device;
  p.fb_used_mib.assign(10, mib);
  p.gpu_util_pct.assign(10, duty);
  p.first = 0;
  p.last = 9;
  return p;
}

Telemetry Of(std::vector<PodSeries> pods) {
  Telemetry t;
  t.samples = 10;
  t.pods = std::move(pods);
  return t;
}

TEST(FindMultiGpuPods, FromTelemetryDevicesAndFromThePodSpec) {
  const Telemetry t = Of({Series("ml/one", "GPU-a", 100, 10), Series("ml/spec", "", 100, 10),
                          Series("ml/t[0]", "GPU-b", 100, 10), Series("ml/t[1]", "GPU-c", 100, 10)});
  const std::vector<MultiGpuPod> m = FindMultiGpuPods(t, {{"ml/spec", 4}, {"ml/one", 1}});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].pod, "ml/spec");
  EXPECT_THAT(m[0].series, ElementsAre(1u));
  EXPECT_EQ(m[0].devices, 4);
  EXPECT_THAT(m[0].evidence, HasSubstr("pod spec asks for 4"));
  EXPECT_EQ(m[1].pod, "ml/t");
  EXPECT_THAT(m[1].series, ElementsAre(2u, 3u));
  EXPECT_EQ(m[1].devices, 2);
  EXPECT_FALSE(m[1].mig);
  EXPECT_FALSE(m[1].ask_for_one);  // full GPUs: not a MIG instance CUDA ignores
}

// Issue 18: a pod given two MIG instances of which CUDA uses only the first gets "ask for 1"
// with the figures, instead of being dropped.
TEST(FindMultiGpuPods, TwoMigInstancesOneIdleAskForOne) {
  const Telemetry t = Of({Series("ml/infer[0]", "GPU-x/gi1", 9000, 70), Series("ml/infer[1]", "GPU-x/gi2", 12, 0),
                          Series("ml/both[0]", "MIG-1", 9000, 70), Series("ml/both[1]", "MIG-2", 8000, 30)});
  const std::vector<MultiGpuPod> m = FindMultiGpuPods(t, {});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].pod, "ml/both");
  EXPECT_TRUE(m[0].mig);
  EXPECT_FALSE(m[0].ask_for_one);  // both instances busy
  EXPECT_EQ(m[1].pod, "ml/infer");
  ASSERT_TRUE(m[1].ask_for_one);
  const AskForOne& a = *m[1].ask_for_one;
  EXPECT_EQ(a.busy, 0u);
  EXPECT_THAT(a.idle, ElementsAre(1u));
  EXPECT_EQ(a.busy_peak_mib, 9000);
  EXPECT_EQ(a.busy_peak_duty_pct, 70);
  EXPECT_EQ(a.idle_peak_mib, 12);
  EXPECT_EQ(a.idle_peak_duty_pct, 0);
  EXPECT_THAT(a.text, HasSubstr("ask for 1 MIG instance instead of 2: 1 of its 2 instances stayed idle"));
  EXPECT_THAT(a.text, HasSubstr("(GPU-x/gi1) peaked at 9000 MiB and 70.0% duty"));
}

TEST(FindMultiGpuPods, AnInstanceAboveTheIdleLinesIsInUse) {
  // 64 MiB (a CUDA context's worth) or 1 % duty is use: no instance is idle.
  const Telemetry t = Of({Series("p[0]", "MIG-1", 9000, 70), Series("p[1]", "MIG-2", kIdleMemoryMib, 0),
                          Series("q[0]", "MIG-3", 9000, 70), Series("q[1]", "MIG-4", 0, kIdleDutyPct)});
  for (const MultiGpuPod& m : FindMultiGpuPods(t, {})) EXPECT_FALSE(m.ask_for_one) << m.pod;
}

}  // namespace
}  // namespace gpufit
