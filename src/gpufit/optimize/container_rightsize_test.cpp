#include "gpufit/optimize/container_rightsize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace gpufit {
namespace {

constexpr std::size_t kSamples = 500;

ContainerSeries Series(const std::string& pod, const std::string& name, const std::string& image, std::mt19937& rng,
                       double cpu_scale, double memory_base) {
  std::lognormal_distribution<float> cpu(0, 0.6f);
  std::uniform_real_distribution<float> mem(0, 512);
  ContainerSeries c;
  c.pod = pod;
  c.container = name;
  c.image = image;
  for (std::size_t k = 0; k < kSamples; ++k) {
    c.cpu_cores.push_back(static_cast<float>(cpu_scale) * cpu(rng));
    c.cpu_throttled_ratio.push_back(0);
    c.memory_working_set_mib.push_back(static_cast<float>(memory_base) + mem(rng));
  }
  return c;
}

// The oracle: nearest rank = the ceil(q/100 x n)-th smallest.
double Percentile(std::vector<float> v, double q) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q / 100.0 * static_cast<double>(v.size())));
  return v[std::max<std::size_t>(rank, 1) - 1];
}

TEST(ContainerRightsize, RequestsFromIndependentPercentilesAndPeaks) {
  std::mt19937 rng(5);
  Telemetry t;
  t.samples = kSamples;
  t.containers = {Series("ml/serve-0", "server", "vllm/vllm-openai:v0.6.3", rng, 2.0, 30000),
                  Series("ml/serve-0", "istio-proxy", "docker.io/istio/proxyv2:1.23.0", rng, 0.05, 80),
                  Series("web/api-0", "app", "registry.example/uvicorn-api:1.2", rng, 0.3, 300)};
  t.containers[0].cpu_request = MilliCpu{8000};
  t.containers[0].memory_request = MiB{65536};
  t.containers[1].cpu_request = MilliCpu{2000};
  t.containers[1].cpu_limit = MilliCpu{2000};
  t.containers[1].memory_request = MiB{1024};
  t.containers[2].cpu_request = MilliCpu{1000};
  t.containers[2].memory_request = MiB{2048};
  for (ContainerSeries& c : t.containers) c.cpu_cores[3] = std::nanf("");  // a gap is not a sample
  const NodeRates gpu = SplitNodePrice(55.04, 8, 192, 2048), cpu{};
  const auto rates = [&](const std::string& pod) { return pod.starts_with("ml/") ? gpu : cpu; };
  for (const double q : {95.0, 90.0}) {
    const std::vector<ContainerRecommendation> r =
        RightsizeContainers(t, rates, {}, {.cpu_percentile = q, .memory_buffer = 0.2, .min_window_hours = 0});
    ASSERT_EQ(r.size(), 3u);
    for (const ContainerRecommendation& c : r) {
      const auto it = std::find_if(t.containers.begin(), t.containers.end(),
                                   [&](const ContainerSeries& s) { return s.container == c.container; });
      std::vector<float> cpu_samples;
      for (float x : it->cpu_cores)
        if (!std::isnan(x)) cpu_samples.push_back(x);
      const double p = Percentile(cpu_samples, q);
      const double peak = *std::max_element(it->memory_working_set_mib.begin(), it->memory_working_set_mib.end());
      EXPECT_EQ(c.cpu_samples, kSamples - 1);
      EXPECT_DOUBLE_EQ(c.cpu_cores_percentile, p) << c.container;
      EXPECT_EQ(c.cpu_request.value, std::max<std::int64_t>(10, static_cast<std::int64_t>(std::ceil(p * 1000 - 1e-6))));
      EXPECT_FALSE(c.cpu_limit.has_value());  // KRR: no CPU limit
      EXPECT_EQ(c.memory_request.value,
                std::max<std::int64_t>(100, static_cast<std::int64_t>(std::ceil(peak * 1.2 - 1e-6))));
      EXPECT_EQ(c.memory_limit, c.memory_request);
      const double now = (static_cast<double>(c.cpu_request_now->value) / 1000 * c.rates.usd_per_core_hour +
                          static_cast<double>(c.memory_request_now->value) / 1024 * c.rates.usd_per_gib_hour) *
                         730;
      EXPECT_NEAR(c.usd_per_month_now, now, 1e-9);
    }
    EXPECT_EQ(ClassifyContainer(r[0].container, r[0].image), r[0].kind);
  }
  const std::vector<ContainerRecommendation> r = RightsizeContainers(t, rates, {}, {.min_window_hours = 0});
  // The GPU node's proxy frees 2 cores and ~900 MiB at GPU-node rates: it ranks above the
  // API server on a CPU node that frees about as much.
  EXPECT_EQ(r[1].container, "istio-proxy");
  EXPECT_EQ(r[1].kind, ContainerKind::kServiceMeshProxy);
  EXPECT_TRUE(r[1].rates.gpu_node);
  EXPECT_EQ(r[2].kind, ContainerKind::kApiServer) << r[0].container << " " << r[2].container << " " << r[2].image;
  EXPECT_GT(r[1].usd_per_month_saving(), r[2].usd_per_month_saving());
}

TEST(ContainerRightsize, ThrottledContainersAreNotLoweredAndStarvedPodsGetTheirCores) {
  std::mt19937 rng(9);
  Telemetry t;
  t.samples = kSamples;
  t.containers = {Series("train/loader", "trainer", "registry.example/train:1", rng, 1.0, 8000),
                  Series("train/loader", "log-shipper", "fluent/fluent-bit:3.1", rng, 0.02, 40)};
  for (float& x : t.containers[0].cpu_cores) x = std::min(x, 2.0f);
  for (float& x : t.containers[0].cpu_throttled_ratio) x = 0.5f;
  t.containers[0].cpu_request = MilliCpu{2000};
  t.containers[0].cpu_limit = MilliCpu{2000};
  const auto rates = [](const std::string&) { return NodeRates{}; };
  std::vector<ContainerRecommendation> r = RightsizeContainers(t, rates, {});
  const auto trainer = [&] {
    return *std::find_if(r.begin(), r.end(), [](const ContainerRecommendation& c) { return c.container == "trainer"; });
  };
  EXPECT_EQ(trainer().cpu_request.value, 2000);  // not below what it is capped at
  CpuStarvation s;
  s.pod_name = "train/loader";
  s.recommended_cores = 6;
  r = RightsizeContainers(t, rates, {s});
  const auto shipper =
      *std::find_if(r.begin(), r.end(), [](const ContainerRecommendation& c) { return c.container == "log-shipper"; });
  EXPECT_EQ(shipper.kind, ContainerKind::kLogAgent);
  EXPECT_EQ(trainer().cpu_request.value + shipper.cpu_request.value, 6000);  // the pod's 6 cores
}

TEST(ContainerRightsize, TooFewSamplesNoRecommendation) {
  std::mt19937 rng(2);
  Telemetry t;
  t.containers = {Series("a/b", "c", "i", rng, 1, 100)};
  t.containers[0].cpu_cores.resize(99);
  EXPECT_TRUE(RightsizeContainers(t, [](const std::string&) { return NodeRates{}; }, {}).empty());
}

// A container with a flat 1000 MiB working set that asks for 4096 MiB (request and limit).
ContainerSeries FlatMemory(std::size_t samples) {
  ContainerSeries c;
  c.pod = "ml/serve-0";
  c.container = "server";
  c.cpu_cores.assign(samples, 0.5f);
  c.cpu_throttled_ratio.assign(samples, 0.0f);
  c.memory_working_set_mib.assign(samples, 1000.0f);
  c.cpu_request = MilliCpu{2000};
  c.memory_request = MiB{4096};
  c.memory_limit = MiB{4096};
  return c;
}

TEST(ContainerRightsize, MemoryIsNotShrunkOnAWindowShorterThanADay) {
  // 2 h and 16 h of 60 s samples (120 and 960 >= 100 samples): the 1000 MiB peak + 15% =
  // 1150 MiB would shrink the 4096 MiB request; under 24 h memory is kept, CPU still goes
  // to the p95 of 0.5 cores = 500m.
  for (const std::size_t samples : {std::size_t{120}, std::size_t{960}}) {
    SCOPED_TRACE(samples);
    Telemetry t;
    t.samples = samples;
    t.containers = {FlatMemory(samples)};
    const std::vector<ContainerRecommendation> r =
        RightsizeContainers(t, [](const std::string&) { return NodeRates{}; }, {});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].memory_request, MiB{4096});
    EXPECT_EQ(r[0].memory_limit, MiB{4096});
    EXPECT_EQ(r[0].cpu_request, MilliCpu{500});
    EXPECT_NE(r[0].evidence.find("less than the 24 h needed to shrink memory"), std::string::npos) << r[0].evidence;
  }
}

TEST(ContainerRightsize, MemoryIsShrunkOnADayOrMore) {
  Telemetry t;
  t.samples = 1440;  // 24 h of 60 s samples
  t.containers = {FlatMemory(1440)};
  const std::vector<ContainerRecommendation> r =
      RightsizeContainers(t, [](const std::string&) { return NodeRates{}; }, {});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].memory_request, MiB{1150});  // ceil(1000 x 1.15)
  EXPECT_EQ(r[0].memory_limit, MiB{1150});
}

TEST(ContainerRightsize, MemoryIsNotShrunkWhenASampleIsMissingNextToItsPeak) {
  // 48 h; the peak 2000 MiB at sample 1000, sample 1001 missing: a larger value may hide there.
  Telemetry t;
  t.samples = 2880;
  t.containers = {FlatMemory(2880)};
  std::vector<float>& memory = t.containers[0].memory_working_set_mib;
  memory[1000] = 2000;
  memory[1001] = std::nanf("");
  const auto rates = [](const std::string&) { return NodeRates{}; };
  std::vector<ContainerRecommendation> r = RightsizeContainers(t, rates, {});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].memory_request, MiB{4096});
  EXPECT_EQ(r[0].memory_limit, MiB{4096});
  EXPECT_NE(r[0].evidence.find("missing within 10 minutes of its peak"), std::string::npos) << r[0].evidence;
  // The same gap 11 samples (11 minutes) from the peak: shrunk to ceil(2000 x 1.15) = 2300.
  memory[1001] = 1000;
  memory[1011] = std::nanf("");
  r = RightsizeContainers(t, rates, {});
  EXPECT_EQ(r[0].memory_request, MiB{2300});
  // Samples missing before the container started are no gap.
  memory[1011] = 1000;
  for (std::size_t k = 0; k < 1000; ++k) memory[k] = std::nanf("");
  r = RightsizeContainers(t, rates, {});
  EXPECT_EQ(r[0].memory_request, MiB{2300});
}

TEST(ContainerRightsize, AHeldContainerWithoutAMemoryLimitGetsNone) {
  Telemetry t;
  t.samples = 120;
  t.containers = {FlatMemory(120)};
  t.containers[0].memory_limit.reset();
  const std::vector<ContainerRecommendation> r =
      RightsizeContainers(t, [](const std::string&) { return NodeRates{}; }, {});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].memory_request, MiB{4096});
  EXPECT_EQ(r[0].memory_limit, std::optional<MiB>{});  // a limit where there was none shrinks it
}

TEST(NodeRates, SplitsTheNodePriceInOpenCostProportions) {
  // p5.48xlarge: 55.04 USD/h, 8 GPUs, 192 cores, 2048 GiB.
  const double reference = 8 * 0.95 + 192 * 0.031611 + 2048 * 0.004237;
  const NodeRates r = SplitNodePrice(55.04, 8, 192, 2048);
  EXPECT_NEAR(r.usd_per_core_hour, 0.031611 * 55.04 / reference, 1e-12);
  EXPECT_NEAR(r.usd_per_gib_hour, 0.004237 * 55.04 / reference, 1e-12);
  // The parts add back to the price, with the GPUs at 0.95 x scale each.
  EXPECT_NEAR(192 * r.usd_per_core_hour + 2048 * r.usd_per_gib_hour + 8 * 0.95 * 55.04 / reference, 55.04, 1e-9);
  EXPECT_TRUE(r.gpu_node);
}

}  // namespace
}  // namespace gpufit
