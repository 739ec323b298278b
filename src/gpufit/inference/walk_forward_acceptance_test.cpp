// Issue 16 part 4 on the real LoRA trace (skipped without ../shared/data): gpufit's
// schedule fitted on UTC days 1..k meets the SLO (wait <= 1 s for 99%) on day k + 1 for
// every k from 7 to 13; its GPU-hours, static peak's and the clairvoyant's re-derived here.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <numeric>

#include "gpufit/core/test_support.h"
#include "gpufit/inference/walk_forward.h"

namespace gpufit {
namespace {

TEST(WalkForwardAcceptanceTest, LoraTraceMeetsTheSloOnEveryLaterDay) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "seven walk-forward fits are too slow under AddressSanitizer; the Release build runs them";
#endif
  const std::string path = testing::DataDir() + "/gentd26-lora/lora_request_trace_first14d.csv";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const auto log = ReadLoraRequestTrace(path);
  ASSERT_TRUE(log) << log.error().message;
  const WalkForwardOptions options;
  const auto r = RunWalkForward(*log, options);
  ASSERT_TRUE(r) << r.error().message;
  std::printf("%s", WalkForwardToMarkdown(*r).c_str());
  ASSERT_EQ(r->dates.size(), 14u);
  ASSERT_EQ(r->tests.size(), 7u);
  // Requests per UTC day of 2024-11-22 .. 28, counted with Python csv + datetime.
  const std::size_t expected[] = {1472, 431, 1160, 1485, 1775, 1355, 1932};
  const double midnight_22 = 1732233600;  // 2024-11-22 00:00:00 UTC
  double gpufit = 0, peak = 0;
  for (std::size_t i = 0; i < r->tests.size(); ++i) {
    const TestDay& t = r->tests[i];
    SCOPED_TRACE(t.date);
    EXPECT_EQ(t.fit_days, static_cast<int>(7 + i));
    EXPECT_EQ(t.requests, expected[i]);
    EXPECT_TRUE(t.gpufit.slo_met);
    EXPECT_GE(t.gpufit.slo_attainment, 0.99);
    // The day's requests straight from the log, replayed here on the reported schedule.
    const double from = midnight_22 + 86400.0 * static_cast<double>(i);
    RequestTrace day;
    std::vector<double> service;
    double work_s = 0;
    for (const LoggedRequest& q : log->requests) {
      if (q.arrival_utc_s < from || q.arrival_utc_s >= from + 86400) continue;
      day.requests.push_back({.arrival_s = q.arrival_utc_s - from, .input_tokens = 0, .output_tokens = 0});
      service.push_back(q.service_s);
      work_s += q.service_s;
    }
    ASSERT_EQ(day.requests.size(), expected[i]);
    ASSERT_EQ(t.schedule.size(), 17280u);  // 5 s steps
    const ReplayResult replay = ReplayRequests(
        day, service, {}, {.window_s = 5, .replicas = t.schedule},
        {.concurrency = 1, .cold_start_s = options.cold_start_s, .slo_s = 1, .slo_metric = SloMetric::kWait});
    EXPECT_DOUBLE_EQ(replay.slo_attainment, t.gpufit.slo_attainment);
    EXPECT_NEAR(t.gpufit.gpu_hours, std::accumulate(t.schedule.begin(), t.schedule.end(), 0.0) * 5 / 3600, 1e-9);
    EXPECT_DOUBLE_EQ(t.static_peak.gpu_hours, 24.0 * t.static_replicas);
    // Every policy provisions at least the day's work (one request per replica).
    EXPECT_GE(t.clairvoyant.gpu_hours, work_s / 3600);
    EXPECT_GE(t.gpufit.gpu_hours, t.clairvoyant.gpu_hours);
    // The cache: fewer loads than one model per node, and the saving is those loads.
    EXPECT_GT(t.cache.HitRate(), t.single_model.HitRate());
    EXPECT_NEAR(t.load_s_saved, static_cast<double>(t.single_model.misses - t.cache.misses) * kGenTd26MedianModelLoadS,
                1e-6);
    gpufit += t.gpufit.gpu_hours;
    peak += t.static_peak.gpu_hours;
  }
  EXPECT_LT(gpufit, peak);  // over the seven days, the schedule costs less than static peak
}

}  // namespace
}  // namespace gpufit
