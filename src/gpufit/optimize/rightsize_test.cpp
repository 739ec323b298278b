#include "gpufit/optimize/rightsize.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufit {
namespace {

using ::testing::HasSubstr;

PodProfile WithPeak(double mib) {
  PodProfile p;
  p.pod = "x";
  p.fb_used_mib.peak = mib;
  return p;
}

TEST(RightSize, PicksTheCheapestGpuWhoseMemoryHoldsPeakPlusHeadroom) {
  const GpuCatalog& c = GpuCatalog::Embedded();
  const GpuModel h100 = *c.Find("h100-80gb");
  struct Case {
    double peak_mib;
    const char* expect;
    std::int64_t required_mib;  // ceil(peak x 1.1), by hand
  };
  // Cheapest first: t4 (15360 MiB, 0.526), l4 (23034, 0.8048), a10g (23028, 1.006),
  // l40s (46068, 1.861), a100-40gb (40960, 2.7447), a100-80gb (81920, 3.4309), ...
  const Case cases[] = {
      {13963, "t4", 15360},             // 15359.3 -> 15360 <= 15360: exactly full
      {14000, "l4", 15400},             // 15400 > 15360
      {20000, "l4", 22000},             // 22000 <= 23034 (not 22001)
      {40000, "l40s", 44000},           // 44000 <= 46068
      {42000, "a100-80gb", 46200},      // 46200 > 46068; a100-40gb is too small
      {80000, "h100-94gb-nvl", 88000},  // neither 81920 nor 81559; NVL 95830 at 6.88 before h200
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.peak_mib);
    const RightSizing r = RightSize(WithPeak(k.peak_mib), h100, c, 0.10);
    ASSERT_TRUE(r.recommended_gpu.has_value());
    EXPECT_EQ(*r.recommended_gpu, k.expect);
    EXPECT_EQ(r.required.value, k.required_mib);
    EXPECT_EQ(r.current_gpu, "h100-80gb");
  }
}

TEST(RightSize, NothingLargeEnoughKeepsTheCurrentGpu) {
  const GpuCatalog& c = GpuCatalog::Embedded();
  const RightSizing r = RightSize(WithPeak(150000), *c.Find("h200-141gb"), c, 0.10);
  EXPECT_FALSE(r.recommended_gpu.has_value());
  EXPECT_THAT(r.reason, HasSubstr("no catalog GPU has that much memory"));
  EXPECT_DOUBLE_EQ(r.usd_per_month_recommended, r.usd_per_month_current);
}

TEST(RightSize, ModelsWithTheMemoryThatRefuseThePodAreNamedNotCalledTooSmall) {
  // A serving pod on an H100 with a 40000 MiB peak, --gpus l40s,a100-80gb: its need,
  // ceil(40000 x 1.1) = 44000 MiB, fits the L40S (46068) and the A100 80GB (81920), but both
  // are slower than the H100 and the pod is latency-bound; the H100 is not in --gpus.
  const GpuCatalog& c = GpuCatalog::Embedded();
  const RefuseModel refuse = [](const GpuModel& m) -> std::string {
    if (m.id == "l40s") return "latency-bound and 3.88x slower";
    if (m.id == "a100-80gb") return "latency-bound and 3.17x slower";
    return "not in --gpus";
  };
  const RightSizing r = RightSize(WithPeak(40000), *c.Find("h100-80gb"), c, 0.10, 0, refuse);
  EXPECT_FALSE(r.recommended_gpu.has_value());
  EXPECT_EQ(r.required.value, 44000);
  EXPECT_THAT(r.reason, ::testing::Not(HasSubstr("no catalog GPU has that much memory")));
  EXPECT_THAT(r.reason, HasSubstr("not l40s: latency-bound and 3.88x slower"));
  EXPECT_THAT(r.reason, HasSubstr("not a100-80gb: latency-bound and 3.17x slower"));
  EXPECT_THAT(r.reason, HasSubstr("keep h100-80gb"));
  EXPECT_DOUBLE_EQ(r.usd_per_month_recommended, r.usd_per_month_current);
}

TEST(RightSize, MonthlyPricesUseA730HourMonth) {
  const GpuCatalog& c = GpuCatalog::Embedded();
  const RightSizing r = RightSize(WithPeak(10000), *c.Find("h100-80gb"), c, 0.0);
  EXPECT_DOUBLE_EQ(r.usd_per_month_current, 6.88 * 730);
  EXPECT_DOUBLE_EQ(r.usd_per_month_recommended, 0.526 * 730);
}

}  // namespace
}  // namespace gpufit
