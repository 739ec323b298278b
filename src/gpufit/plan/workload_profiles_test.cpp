#include "gpufit/plan/workload_profiles.h"

#include <gtest/gtest.h>

namespace gpufit {
namespace {

// Two days at one sample an hour (start 0: sample k is hour k mod 24). Replica w1 runs the
// whole window: 100 MiB (300 at sample 5), duty h on day 1 and 2h on day 2; replica w2 runs
// samples 10..20 at 200 MiB and duty 50.
Telemetry TwoDays() {
  Telemetry t;
  t.start_s = 0;
  t.step_s = 3600;
  t.samples = 48;
  PodSeries w1{.pod = "a/w1", .fb_used_mib = std::vector<float>(48, 100), .gpu_util_pct = {}, .first = 0, .last = 47};
  w1.fb_used_mib[5] = 300;
  for (int k = 0; k < 48; ++k) w1.gpu_util_pct.push_back(static_cast<float>(k < 24 ? k : 2 * (k - 24)));
  PodSeries w2{.pod = "a/w2",
               .fb_used_mib = std::vector<float>(48, 0),
               .gpu_util_pct = std::vector<float>(48, 0),
               .first = 10,
               .last = 20};
  for (int k = 10; k <= 20; ++k) w2.fb_used_mib[k] = 200, w2.gpu_util_pct[k] = 50;
  t.pods = {w1, w2};
  return t;
}

TEST(ProfileWorkloads, HourlyQuantilesOfTheOneSlotEnvelopeByHand) {
  const WorkloadProfiles p = ProfileWorkloads(TwoDays(), {"deployment/a/w", "deployment/a/w"}, 0.99, 0, std::nullopt);
  ASSERT_EQ(p.workloads.size(), 1u);
  const WorkloadProfile& w = p.workloads[0];
  EXPECT_EQ(w.workload, "deployment/a/w");
  EXPECT_EQ(w.replicas, 2u);  // both alive at 10..20
  EXPECT_EQ(w.samples, 48u);
  EXPECT_EQ(w.memory_peak_mib, 300);
  // Nearest rank ceil(0.99 * 48) = 48: the largest envelope duty, w2's 50 (day 2 peaks at 46).
  EXPECT_EQ(w.duty_pct, 50);
  // Hour h has two samples (ceil(0.99 * 2) = 2: their max): day 1's envelope (h, or 50 while
  // w2 runs) and day 2's 2h.
  for (int h = 0; h < 24; ++h) {
    SCOPED_TRACE(h);
    ASSERT_TRUE(w.duty_pct_by_hour[static_cast<std::size_t>(h)].has_value());
    const double day1 = h >= 10 && h <= 20 ? 50 : h;
    EXPECT_EQ(*w.duty_pct_by_hour[static_cast<std::size_t>(h)], std::max(day1, 2.0 * h));
  }
  // Walk-forward: fitted on day 1, replayed on day 2 (24 samples). Memory stays at 100 < 300.
  // Duty 2h passes day 1's h in hours 1..9 and 21..23 (12), not 50 in hours 10..20.
  EXPECT_EQ(w.later_samples, 24u);
  EXPECT_EQ(w.later_memory_over, 0u);
  EXPECT_EQ(w.later_duty_over, 12u);
}

// The walk-forward margin is learned from the first half alone: its quarters [0, 12) and
// [12, 24). w1 peaks at 300 then 100 (surprise 200 both ways), w2 at 200 and 200 (0): with
// risk 0 the margin is 200, so day 2 passes day 1's peak of 300 only above 500.
TEST(ProfileWorkloads, LaterMemoryOverThePeakCountsOnlyPastTheEarlierMargin) {
  Telemetry t = TwoDays();
  t.pods[0].fb_used_mib[30] = 501;
  const WorkloadProfiles over = ProfileWorkloads(t, {"w", "w"}, 0.99, 7, 0.0);
  EXPECT_EQ(over.earlier_margin_mib, 200);
  EXPECT_EQ(over.margin_mib, 7);  // the plan's, passed through for serve
  EXPECT_EQ(over.workloads[0].later_memory_over, 1u);
  t.pods[0].fb_used_mib[30] = 500;
  EXPECT_EQ(ProfileWorkloads(t, {"w", "w"}, 0.99, 7, 0.0).workloads[0].later_memory_over, 0u);
  // Without the robust envelope there is no margin: 500 > 300.
  EXPECT_EQ(ProfileWorkloads(t, {"w", "w"}, 0.99, 0, std::nullopt).workloads[0].later_memory_over, 1u);
}

// Samples the grid filled (a scrape gap) are not observations: w1's gaps at hours 3 and 4 of
// both days, when w2 is not alive, leave those hours without a figure.
TEST(ProfileWorkloads, GapsAreNotObserved) {
  Telemetry t = TwoDays();
  t.pods[0].fb_gaps = {3, 4, 27, 28};
  const WorkloadProfile w = ProfileWorkloads(t, {"w", "w"}, 0.99, 0, std::nullopt).workloads[0];
  EXPECT_EQ(w.samples, 44u);
  EXPECT_FALSE(w.duty_pct_by_hour[3].has_value());
  EXPECT_FALSE(w.duty_pct_by_hour[4].has_value());
  EXPECT_EQ(w.duty_pct_by_hour[5], 10);  // max(5, 2 * 5)
}

// Two minutes of a pod vouch for no hour: it needs half an hour of samples.
TEST(ProfileWorkloads, AnHourNeedsHalfAnHourOfSamples) {
  Telemetry t;
  t.step_s = 60;
  t.samples = 120;
  t.pods = {{.pod = "a/x",
             .fb_used_mib = std::vector<float>(120, 10),
             .gpu_util_pct = std::vector<float>(120, 5),
             .first = 0,
             .last = 1}};
  const WorkloadProfile brief = ProfileWorkloads(t, {"pod/a/x"}, 0.99, 0, std::nullopt).workloads[0];
  for (std::size_t h = 0; h < 24; ++h) EXPECT_FALSE(brief.duty_pct_by_hour[h].has_value()) << h;
  t.pods[0].last = 29;  // 30 minutes
  EXPECT_EQ(ProfileWorkloads(t, {"pod/a/x"}, 0.99, 0, std::nullopt).workloads[0].duty_pct_by_hour[0], 5);
}

TEST(ProfileWorkloads, AnHourWithUnderHalfTheMedianHoursSamplesIsNotObserved) {
  // Four samples an hour; the pod runs samples 0..8: hours 0 and 1 four each, hour 2 one.
  Telemetry t;
  t.step_s = 900;
  t.samples = 96;
  t.pods = {{.pod = "a/x",
             .fb_used_mib = std::vector<float>(96, 10),
             .gpu_util_pct = std::vector<float>(96, 0),
             .first = 0,
             .last = 8}};
  for (int k = 0; k <= 8; ++k) t.pods[0].gpu_util_pct[static_cast<std::size_t>(k)] = static_cast<float>(10 * k);
  const WorkloadProfile w = ProfileWorkloads(t, {"pod/a/x"}, 0.5, 0, std::nullopt).workloads[0];
  EXPECT_EQ(w.samples, 9u);
  // Median of 9 values 0..80 at nearest rank ceil(4.5) = 5: 40.
  EXPECT_EQ(w.duty_pct, 40);
  // Hour 0: 0,10,20,30 -> rank 2: 10. Hour 1: 40..70 -> 50. Hour 2 (80 alone) and the rest: null.
  EXPECT_EQ(w.duty_pct_by_hour[0], 10);
  EXPECT_EQ(w.duty_pct_by_hour[1], 50);
  for (std::size_t h = 2; h < 24; ++h) EXPECT_FALSE(w.duty_pct_by_hour[h].has_value()) << h;
  // It does not run in the later half: no walk-forward samples.
  EXPECT_EQ(w.later_samples, 0u);
}

TEST(ProfileWorkloads, HoursFollowTheClockNotTheFirstSample) {
  Telemetry t = TwoDays();
  t.start_s = 86400.0 * 3 + 3600 * 22;  // sample 0 is 22:00
  const WorkloadProfile w = ProfileWorkloads(t, {"w", "w"}, 0.99, 0, std::nullopt).workloads[0];
  // Hour 22 holds samples 0 and 24: duty 0 (day 1) and 2 * 0 = 0 (day 2).
  EXPECT_EQ(w.duty_pct_by_hour[22], 0);
  // Hour 0 holds samples 2 and 26: 2 and 4.
  EXPECT_EQ(w.duty_pct_by_hour[0], 4);
}

}  // namespace
}  // namespace gpufit
