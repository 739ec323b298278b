#include "gpufit/optimize/cpu_starvation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace gpufit {
namespace {

constexpr std::size_t kSamples = 600;

// A pod's GPU and CPU series on a 60 s grid.
struct Pod {
  std::string name;
  std::vector<float> util, cpu, throttled;
  std::optional<MilliCpu> limit;
};

Telemetry Make(const std::vector<Pod>& pods) {
  Telemetry t;
  t.samples = kSamples;
  t.step_s = 60;
  for (const Pod& p : pods) {
    PodSeries s;
    s.pod = p.name;
    s.fb_used_mib.assign(kSamples, 20000);
    s.gpu_util_pct = p.util;
    s.first = 0;
    s.last = kSamples - 1;
    t.pods.push_back(s);
    ContainerSeries c;
    c.pod = p.name;
    c.container = "main";
    c.cpu_cores = p.cpu;
    c.cpu_throttled_ratio = p.throttled;
    c.memory_working_set_mib.assign(kSamples, 4096);
    c.cpu_limit = p.limit;
    t.containers.push_back(c);
  }
  return t;
}

// A data loader that needs 6 cores to keep the GPU busy, capped at 2: the GPU runs at
// 100 x 2 / 6 = 33.3% (noise +-2 points), CPU at 1.9-2.0 cores, CFS-throttled 40-70%.
Pod CappedAtTwoNeedingSix(std::mt19937& rng) {
  std::uniform_real_distribution<float> noise(-2, 2), cpu(1.9f, 2.0f), thr(0.4f, 0.7f);
  Pod p{.name = "train/loader", .util = {}, .cpu = {}, .throttled = {}, .limit = MilliCpu{2000}};
  for (std::size_t k = 0; k < kSamples; ++k) {
    const float c = cpu(rng);
    p.cpu.push_back(c);
    p.util.push_back(100.0f * c / 6.0f + noise(rng));
    p.throttled.push_back(thr(rng));
  }
  return p;
}

TEST(CpuStarvation, PodCappedAtTwoCoresNeedingSixIsFoundAndGivenSix) {
  std::mt19937 rng(7);
  const Telemetry t = Make({CappedAtTwoNeedingSix(rng)});
  const std::vector<CpuStarvation> s = DetectCpuStarvation(t);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].pod_name, "train/loader");
  EXPECT_EQ(s[0].activity_metric, kDcgmGpuUtil);
  EXPECT_EQ(s[0].starved_samples, kSamples);
  EXPECT_DOUBLE_EQ(s[0].cpu_limit_cores, 2.0);
  EXPECT_NEAR(s[0].recommended_cores, 6.0, 0.6);  // the acceptance: within 10% of 6
  EXPECT_FALSE(s[0].capped);
  // Expected activity: each sample scales by recommended / used, up to 100%.
  EXPECT_NEAR(s[0].activity_mean_pct_now, 100.0 * 1.95 / 6.0, 1.0);
  EXPECT_GT(s[0].activity_mean_pct_expected, 90.0);
  EXPECT_LE(s[0].activity_mean_pct_expected, 100.0);
}

TEST(CpuStarvation, SmActiveIsTheActivityWhereTheProfilingMetricIsOn) {
  std::mt19937 rng(3);
  Telemetry t = Make({CappedAtTwoNeedingSix(rng)});
  // SM active at 60% of the duty cycle: the fit is on SM active, so 100% SM needs 10 cores.
  for (float u : t.pods[0].gpu_util_pct) t.pods[0].sm_active_pct.push_back(0.6f * u);
  const std::vector<CpuStarvation> s = DetectCpuStarvation(t);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].activity_metric, kDcgmSmActive);
  EXPECT_NEAR(s[0].recommended_cores, 10.0, 1.0);
}

TEST(CpuStarvation, LowGpuWithoutCpuPressureIsNotFlagged) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(2, 15), c(0.3f, 0.8f);
  Pod idle{.name = "ml/idle", .util = {}, .cpu = {}, .throttled = {}, .limit = MilliCpu{4000}};
  for (std::size_t k = 0; k < kSamples; ++k) {
    idle.util.push_back(u(rng));
    idle.cpu.push_back(c(rng));
    idle.throttled.push_back(0);
  }
  // Busy GPU while throttled: the GPU is not waiting.
  Pod busy{.name = "ml/busy", .util = {}, .cpu = {}, .throttled = {}, .limit = MilliCpu{2000}};
  for (std::size_t k = 0; k < kSamples; ++k) {
    busy.util.push_back(95);
    busy.cpu.push_back(2.0f);
    busy.throttled.push_back(0.5f);
  }
  // Starved in 5% of its samples only (under the 10% share).
  Pod brief{.name = "ml/brief", .util = {}, .cpu = {}, .throttled = {}, .limit = MilliCpu{2000}};
  for (std::size_t k = 0; k < kSamples; ++k) {
    const bool squeezed = k % 20 == 0;
    brief.util.push_back(squeezed ? 20 : 80);
    brief.cpu.push_back(squeezed ? 2.0f : 1.0f);
    brief.throttled.push_back(squeezed ? 0.6f : 0);
  }
  EXPECT_TRUE(DetectCpuStarvation(Make({idle, busy, brief})).empty());
}

TEST(CpuStarvation, ThrottlingWithoutALimitAndTheCap) {
  // No limit on the container (throttled by a namespace quota, say): throttling alone is
  // the pressure. GPU at 5% on 2 cores: 100% would take 40 cores, over the 24-core cap.
  Pod p{.name = "ml/quota", .util = {}, .cpu = {}, .throttled = {}, .limit = std::nullopt};
  for (std::size_t k = 0; k < kSamples; ++k) {
    p.util.push_back(5);
    p.cpu.push_back(2);
    p.throttled.push_back(0.5f);
  }
  const std::vector<CpuStarvation> s = DetectCpuStarvation(Make({p}));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_DOUBLE_EQ(s[0].cpu_limit_cores, 0);
  EXPECT_NEAR(s[0].cores_needed, 40, 1e-3);
  EXPECT_TRUE(s[0].capped);
  EXPECT_DOUBLE_EQ(s[0].recommended_cores, 24);
  // Expected: 5% x 24 / 2 = 60%.
  EXPECT_NEAR(s[0].activity_mean_pct_expected, 60, 1e-3);
}

TEST(CpuStarvation, NoContainerDataNoJudgement) {
  std::mt19937 rng(1);
  Telemetry t = Make({CappedAtTwoNeedingSix(rng)});
  t.containers.clear();
  EXPECT_TRUE(DetectCpuStarvation(t).empty());
  // NaN CPU samples are not observed samples.
  t = Make({CappedAtTwoNeedingSix(rng)});
  for (std::size_t k = 0; k < kSamples; k += 2) t.containers[0].cpu_cores[k] = std::nanf("");
  const auto s = DetectCpuStarvation(t);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].observed_samples, kSamples / 2);
}

}  // namespace
}  // namespace gpufit
