#include "gpufit/optimize/throughput_scaling.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

namespace gpufit {
namespace {

using ::testing::HasSubstr;

GpuModel Model(const char* id) { return *GpuCatalog::Embedded().Find(id); }

PodSeries Constant(float duty, std::size_t samples = 100) {
  PodSeries p;
  p.pod = "ns/p";
  p.fb_used_mib.assign(samples, 1000);
  p.gpu_util_pct.assign(samples, duty);
  p.first = 0;
  p.last = samples - 1;
  return p;
}

TEST(SlowdownFactor, TakesTheWorseOfTheComputeAndBandwidthRatios) {
  // Datasheet figures of data/gpu_catalog.yaml, ratios by hand.
  // H100 SXM -> A100 80GB: 989.4 / 312 = 3.1712 (compute), 3350 / 2039 = 1.6430 (bandwidth).
  EXPECT_NEAR(*SlowdownFactor(Model("h100-80gb"), Model("a100-80gb")), 989.4 / 312, 1e-12);
  // A100 80GB -> H100: 312 / 989.4 = 0.3153, 2039 / 3350 = 0.6087: credited the smaller speedup.
  EXPECT_NEAR(*SlowdownFactor(Model("a100-80gb"), Model("h100-80gb")), 2039.0 / 3350, 1e-12);
  // H100 -> L40S: 989.4 / 362.05 = 2.733, 3350 / 864 = 3.877: bandwidth bound.
  EXPECT_NEAR(*SlowdownFactor(Model("h100-80gb"), Model("l40s")), 3350.0 / 864, 1e-12);
  // H100 -> H200: 989.4 / 989 = 1.0004 (rounding of the same die) and 0.698: counted as 1.
  EXPECT_DOUBLE_EQ(*SlowdownFactor(Model("h100-80gb"), Model("h200-141gb")), 1.0);
  EXPECT_DOUBLE_EQ(*SlowdownFactor(Model("l4"), Model("l4")), 1.0);
  // The T4 lists 0 BF16 TFLOPS, the A10G none: unknown.
  EXPECT_FALSE(SlowdownFactor(Model("l4"), Model("t4")).has_value());
  EXPECT_FALSE(SlowdownFactor(Model("a10g"), Model("l4")).has_value());
}

TEST(AdmitPod, BatchWorkFitsWhileItsScaledDutyStaysUnder100) {
  const GpuModel h100 = Model("h100-80gb"), a100 = Model("a100-80gb");
  // 31% x 3.1712 = 98.3%: fits; 32% x 3.1712 = 101.5% at all 100 samples: refused.
  const Admission fits = AdmitPod(Constant(31), h100, a100, /*latency_bound=*/false, 1);
  EXPECT_TRUE(fits.admitted) << fits.reason;
  EXPECT_NEAR(fits.factor, 3.1712, 1e-4);
  const Admission over = AdmitPod(Constant(32), h100, a100, false, 1);
  EXPECT_FALSE(over.admitted);
  EXPECT_THAT(over.reason, HasSubstr("passes 100% at 100 samples (allowed 1)"));
  // One busy sample is within a limit of 1; two are not.
  PodSeries burst = Constant(10);
  burst.gpu_util_pct[5] = 90;
  EXPECT_TRUE(AdmitPod(burst, h100, a100, false, 1).admitted);
  burst.gpu_util_pct[6] = 90;
  EXPECT_FALSE(AdmitPod(burst, h100, a100, false, 1).admitted);
}

TEST(AdmitPod, LatencyBoundPodsGoToNoSlowerModel) {
  const GpuModel h100 = Model("h100-80gb");
  const Admission slower = AdmitPod(Constant(5), h100, Model("a100-80gb"), true, 1);
  EXPECT_FALSE(slower.admitted);
  EXPECT_THAT(slower.reason, HasSubstr("latency would grow"));
  EXPECT_TRUE(AdmitPod(Constant(5), h100, Model("h200-141gb"), true, 1).admitted);
  EXPECT_TRUE(AdmitPod(Constant(90), Model("a100-80gb"), h100, true, 1).admitted);  // faster: 90 x 0.6087
}

TEST(AdmitPod, NeverActivePodsGoAnywhereAndUnknownSpeedIsRefused) {
  const GpuModel l4 = Model("l4"), t4 = Model("t4");
  EXPECT_TRUE(AdmitPod(Constant(0), l4, t4, true, 0).admitted);
  PodSeries missing = Constant(0);
  missing.gpu_util_pct[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(NeverActive(missing));
  const Admission busy = AdmitPod(Constant(1), l4, t4, false, 0);
  EXPECT_FALSE(busy.admitted);
  EXPECT_THAT(busy.reason, HasSubstr("unknown"));
  // Duty outside the pod's life does not count.
  PodSeries late = Constant(0);
  late.first = 10;
  late.gpu_util_pct[2] = 50;
  EXPECT_TRUE(NeverActive(late));
}

}  // namespace
}  // namespace gpufit
