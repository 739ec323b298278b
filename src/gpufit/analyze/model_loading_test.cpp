#include "gpufit/analyze/model_loading.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "gpufit/core/test_support.h"
#include "gpufit/ingest/files/gentd26_serving_reader.h"
#include "gpufit/ingest/files/telemetry_readers.h"

namespace gpufit {
namespace {

// One pod over 100 minutes at 60 s; loads at minutes 10 (30 s), 50 (20 s) and 80 (1 s).
// GPU memory rises by 4096 MiB across the first two loads and by 100 MiB across the third.
Telemetry OnePod() {
  Telemetry t;
  t.start_s = 0;
  t.step_s = 60;
  t.samples = 100;
  PodSeries p;
  p.pod = "sd-0";
  p.first = 0;
  p.last = 99;
  for (std::size_t k = 0; k < 100; ++k) {
    const float base = k > 10 ? 4096.0f : 0.0f, second = k > 50 ? 4096.0f : 0.0f, third = k > 80 ? 100.0f : 0.0f;
    p.fb_used_mib.push_back(1000 + base + second + third);
    p.gpu_util_pct.push_back(10);
  }
  t.pods.push_back(p);
  return t;
}

TEST(ModelLoading, ByHandOnOnePod) {
  const std::vector<ModelLoad> loads = {{.pod = "sd-0", .time_s = 600, .seconds = 30},
                                        {.pod = "sd-0", .time_s = 3000, .seconds = 20},
                                        {.pod = "sd-0", .time_s = 4800, .seconds = 1},
                                        {.pod = "gone", .time_s = 100, .seconds = 5}};
  const ModelLoadingReport r = AnalyzeModelLoading(OnePod(), loads, 3.0, {.cache_gb_per_s = 2.0});
  ASSERT_EQ(r.pods.size(), 1u);  // "gone" is counted apart, in no figure
  EXPECT_EQ(r.pods_not_in_telemetry, 1u);
  EXPECT_EQ(r.loads_not_in_telemetry, 1u);
  EXPECT_EQ(r.loads, 3u);
  EXPECT_DOUBLE_EQ(r.cold_start_p50_s, 20);
  const PodModelLoading& p = r.pods[0];
  EXPECT_EQ(p.pod, "sd-0");
  EXPECT_EQ(p.loads, 3u);
  EXPECT_DOUBLE_EQ(p.first_s, 30);
  EXPECT_DOUBLE_EQ(p.p50_s, 20);
  EXPECT_DOUBLE_EQ(p.loading_s, 51);
  EXPECT_DOUBLE_EQ(p.life_s, 6000);
  EXPECT_DOUBLE_EQ(p.share, 51.0 / 6000);
  // Size: the two 4096 MiB rises (the 100 MiB one is under 256 MiB).
  EXPECT_DOUBLE_EQ(p.model_mib, 4096);
  // Cached: 4 GiB / 2 GB/s = 2.147 s. Repeats: 20 s saves 17.85 s, 1 s saves nothing.
  const double cached = 4096.0 * 1048576 / 2e9;
  EXPECT_NEAR(p.cached_load_s, cached, 1e-9);
  EXPECT_NEAR(p.saved_s, 20 - cached, 1e-9);
  EXPECT_EQ(r.repeat_loads, 2u);
  EXPECT_NEAR(r.loading_gpu_hours, 51.0 / 3600, 1e-12);
  EXPECT_NEAR(r.saved_gpu_hours, (20 - cached) / 3600, 1e-12);
  // Per month: saved GPU-hours over a 100-minute window, x 730 h x 3 USD.
  EXPECT_NEAR(r.saved_usd_per_month, (20 - cached) / 3600 / (100.0 / 60) * 730 * 3, 1e-9);
  // A given size overrides the estimate.
  const ModelLoadingReport given = AnalyzeModelLoading(OnePod(), loads, 3.0, {.model_gib = 1.0});
  EXPECT_DOUBLE_EQ(given.pods[0].model_mib, 1024);
}

#if !defined(__SANITIZE_ADDRESS__)
TEST(ModelLoading, GenTd26ColdStartShareAndCacheSaving) {
  const std::filesystem::path dir = std::filesystem::path(testing::DataDir()) / "gentd26";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no GenTD26 data at " << dir;
  const Result<Telemetry> t = ReadTelemetry(dir.string());
  ASSERT_TRUE(t) << t.error().message;
  const Result<std::vector<ModelLoad>> loads =
      ReadGenTd26ModelLoads((dir / "basemodel_update_latency_anon.csv").string());
  ASSERT_TRUE(loads) << loads.error().message;
  const ModelLoadingReport r = AnalyzeModelLoading(*t, *loads, 3.4309);
  // The oracle: the raw file summed by hand, for pods in the telemetry.
  std::map<std::string, const PodSeries*> pods;
  for (const PodSeries& p : t->pods) pods[p.pod] = &p;
  std::ifstream in(dir / "basemodel_update_latency_anon.csv");
  std::string line;
  std::getline(in, line);
  ASSERT_EQ(line, "timestamp_anon,value,container_ip");
  double loading_s = 0;
  std::size_t rows = 0;
  std::map<std::string, int> per_pod;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string ts, value, pod;
    std::getline(ss, ts, ',');
    std::getline(ss, value, ',');
    std::getline(ss, pod, ',');
    ++rows;
    ++per_pod[pod];
    if (pods.count(pod)) loading_s += std::stod(value) / 1000;
  }
  double life_h = 0;
  for (const auto& [pod, n] : per_pod)
    if (pods.count(pod)) life_h += static_cast<double>(pods[pod]->running_samples()) * t->step_s / 3600;
  EXPECT_EQ(r.loads, rows);
  EXPECT_EQ(r.repeat_loads, rows - per_pod.size());
  EXPECT_NEAR(r.loading_gpu_hours, loading_s / 3600, 1e-6);
  EXPECT_NEAR(r.share, loading_s / 3600 / life_h, 1e-9);
  EXPECT_GT(r.share, 0.01);  // about 1.8%: 46 GPU-hours of 2,526
  EXPECT_LT(r.share, 0.03);
  EXPECT_GT(r.cold_start_p50_s, 10);
  EXPECT_GT(r.model_mib, 1024);  // a Stable Diffusion checkpoint: gigabytes
  EXPECT_GT(r.saved_gpu_hours, 0);
  EXPECT_LT(r.saved_gpu_hours, r.loading_gpu_hours);
  EXPECT_GT(r.saved_usd_per_month, 0);
}
#endif

}  // namespace
}  // namespace gpufit
