#include "gpufit/analyze/container_profile.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gpufit {
namespace {

TEST(ProfileContainer, SkipsSamplesWithoutDataAndKeepsRequests) {
  const float nan = std::nanf("");
  ContainerSeries c;
  c.pod = "ml/p";
  c.container = "istio-proxy";
  // 20 CPU samples 0.05, 0.10, ..., 1.00 cores and two gaps.
  for (int i = 1; i <= 20; ++i) c.cpu_cores.push_back(0.05F * static_cast<float>(i));
  c.cpu_cores.insert(c.cpu_cores.begin() + 3, nan);
  c.cpu_cores.push_back(nan);
  c.cpu_throttled_ratio.assign(c.cpu_cores.size(), nan);
  c.memory_working_set_mib = {nan, 100, 300, 200};
  c.cpu_request = MilliCpu{100};
  const ContainerProfile p = ProfileContainer(c);
  EXPECT_EQ(p.cpu_samples, 20u);
  // Nearest rank over 20 values: p95 is the 19th (0.95), p50 the 10th (0.50).
  EXPECT_FLOAT_EQ(static_cast<float>(p.cpu_cores.p95), 0.95F);
  EXPECT_FLOAT_EQ(static_cast<float>(p.cpu_cores.p50), 0.50F);
  EXPECT_FLOAT_EQ(static_cast<float>(p.cpu_cores.peak), 1.0F);
  EXPECT_NEAR(p.cpu_cores.mean, 0.525, 1e-6);
  EXPECT_EQ(p.memory_samples, 3u);
  EXPECT_EQ(p.memory_working_set_mib.peak, 300);
  EXPECT_EQ(p.memory_working_set_mib.mean, 200);
  EXPECT_EQ(p.cpu_throttled_ratio.peak, 0);  // no data: zeros
  EXPECT_EQ(p.cpu_request->value, 100);
  EXPECT_FALSE(p.memory_request);
}

}  // namespace
}  // namespace gpufit
