#include "gpufit/backtest/split.h"

#include <gtest/gtest.h>

namespace gpufit {
namespace {

PodSeries Pod(std::string name, std::size_t n, std::size_t first, std::size_t last) {
  PodSeries p;
  p.pod = std::move(name);
  p.first = first;
  p.last = last;
  for (std::size_t k = 0; k < n; ++k) {
    const bool runs = k >= first && k <= last;
    p.fb_used_mib.push_back(runs ? static_cast<float>(100 + k) : 0);
    p.gpu_util_pct.push_back(runs ? 10 : 0);
  }
  return p;
}

// Under two days: rolling origin, cuts at floor(11/4) = 2, floor(22/4) = 5, floor(33/4) = 8,
// each tested on everything after it.
TEST(WalkForwardSplits, RollingOriginUnderTwoDays) {
  Telemetry t;
  t.samples = 11;
  t.step_s = 60;
  const std::vector<WalkForwardSplit> s = WalkForwardSplits(t);
  ASSERT_EQ(s.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(s[i].fit_begin, 0u);
    EXPECT_EQ(s[i].fit_end, s[i].test_begin);
    EXPECT_EQ(s[i].test_end, 11u);
  }
  EXPECT_EQ(s[0].fit_end, 2u);
  EXPECT_EQ(s[1].fit_end, 5u);
  EXPECT_EQ(s[2].fit_end, 8u);
  EXPECT_EQ(s[1].label, "first 0.1 h -> next 0.1 h");
  t.samples = 1;
  EXPECT_TRUE(WalkForwardSplits(t).empty());
  // 47 hours: still under two whole days.
  t.step_s = 3600;
  t.samples = 47;
  EXPECT_EQ(WalkForwardSplits(t).size(), 3u);
}

TEST(WalkForwardSplits, DayByDayFromTwoDays) {
  Telemetry t;
  t.step_s = 3600;
  t.samples = 2 * 24;  // exactly two days: day 1 -> day 2
  ASSERT_EQ(WalkForwardSplits(t).size(), 1u);
  EXPECT_EQ(WalkForwardSplits(t)[0].label, "day 1 -> day 2");
  EXPECT_EQ(WalkForwardSplits(t)[0].test_end, 48u);
  t.samples = 4 * 24 + 5;  // 4 whole days and 5 stray hours
  const std::vector<WalkForwardSplit> s = WalkForwardSplits(t);
  ASSERT_EQ(s.size(), 3u);  // days 1 -> 2, 1-2 -> 3, 1-3 -> 4
  EXPECT_EQ(s[0].fit_end, 24u);
  EXPECT_EQ(s[0].test_end, 48u);
  EXPECT_EQ(s[2].label, "days 1-3 -> day 4");
  EXPECT_EQ(s[2].fit_begin, 0u);
  EXPECT_EQ(s[2].fit_end, 72u);
  EXPECT_EQ(s[2].test_begin, 72u);
  EXPECT_EQ(s[2].test_end, 96u);
  // Ten days: only the last 7 test days.
  t.samples = 10 * 24;
  const std::vector<WalkForwardSplit> ten = WalkForwardSplits(t);
  ASSERT_EQ(ten.size(), 7u);
  EXPECT_EQ(ten.front().fit_end, 3u * 24);
  EXPECT_EQ(ten.back().test_end, 10u * 24);
}

TEST(SliceTelemetry, ClipsLivesShiftsGapsAndKeepsTheClock) {
  Telemetry t;
  t.start_s = 1000;
  t.step_s = 60;
  t.samples = 10;
  t.pods.push_back(Pod("a", 10, 0, 9));
  t.pods.push_back(Pod("b", 10, 0, 3));  // ends before the slice
  t.pods.push_back(Pod("c", 10, 6, 9));
  t.pods[0].fb_gaps = {2, 5, 7};
  const Telemetry s = SliceTelemetry(t, 4, 8);
  EXPECT_DOUBLE_EQ(s.start_s, 1000 + 4 * 60);
  EXPECT_EQ(s.samples, 4u);
  ASSERT_EQ(s.pods.size(), 2u);
  EXPECT_EQ(s.pods[0].pod, "a");
  EXPECT_EQ(s.pods[0].first, 0u);
  EXPECT_EQ(s.pods[0].last, 3u);
  EXPECT_EQ(s.pods[0].fb_used_mib, (std::vector<float>{104, 105, 106, 107}));
  EXPECT_EQ(s.pods[0].fb_gaps, (std::vector<std::uint32_t>{1, 3}));
  EXPECT_EQ(s.pods[1].pod, "c");
  EXPECT_EQ(s.pods[1].first, 2u);  // starts at 6
  EXPECT_EQ(s.pods[1].last, 3u);
  const std::vector<std::string> only{"c"};
  EXPECT_EQ(SliceTelemetry(t, 4, 8, &only).pods.size(), 1u);
  EXPECT_EQ(PodsRunningIn(t, 0, 4), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(PodsRunningIn(t, 4, 10), (std::vector<std::string>{"a", "c"}));
}

}  // namespace
}  // namespace gpufit
