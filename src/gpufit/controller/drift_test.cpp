#include "gpufit/controller/drift.h"

#include <gtest/gtest.h>

namespace gpufit::controller {
namespace {

// Workload w (pods w-0, w-1) planned at a 10000 MiB cap, fitted on an 8000 MiB peak; workload
// v (pod v-0) at 4000 MiB, fitted on 3000 MiB.
PlanFacts TwoWorkloads() {
  PlanFacts p;
  p.workloads = {{.workload = "deployment/ns/v",
                  .pods = {"v-0"},
                  .cap_mib = 4000,
                  .fitted_peak_mib = 3000,
                  .strategy = "colocation",
                  .verdict = "held"},
                 {.workload = "deployment/ns/w",
                  .pods = {"w-0", "w-1"},
                  .cap_mib = 10000,
                  .fitted_peak_mib = 8000,
                  .strategy = "colocation",
                  .verdict = "held"}};
  p.workload_of = {{"v-0", "deployment/ns/v"}, {"w-0", "deployment/ns/w"}, {"w-1", "deployment/ns/w"}};
  return p;
}

TEST(FindDrift, APodAboveItsWorkloadsCapIsOverItsEnvelope) {
  const DriftReport d = FindDrift(TwoWorkloads(), {{"w-0", 9000}, {"w-1", 10500}, {"v-0", 4000}}, {}, DriftOptions{});
  ASSERT_EQ(d.over_envelope.size(), 1u);  // v-0 at its cap exactly is not over
  EXPECT_EQ(d.over_envelope[0].pod, "w-1");
  EXPECT_EQ(d.over_envelope[0].workload, "deployment/ns/w");
  EXPECT_DOUBLE_EQ(d.over_envelope[0].peak_mib, 10500);
  EXPECT_EQ(d.over_envelope[0].cap_mib, 10000);
}

TEST(FindDrift, WorkloadsObservedButNotPlannedAreNew) {
  const DriftReport d = FindDrift(TwoWorkloads(), {{"x-0", 50000}},
                                  {"deployment/ns/x", "deployment/ns/w", "pod/ns/y", "deployment/ns/x"}, {});
  EXPECT_EQ(d.new_workloads, (std::vector<std::string>{"deployment/ns/x", "pod/ns/y"}));
  EXPECT_TRUE(d.over_envelope.empty());  // x-0 is no planned pod: judged as new, not over
}

TEST(FindDrift, PeakRatioIsTheWorkloadsRecentPeakOverItsFittedPeak) {
  const DriftReport d = FindDrift(TwoWorkloads(), {{"w-0", 9000}, {"w-1", 10000}, {"v-0", 3300}}, {},
                                  DriftOptions{.peak_drift_tolerance = 0.2});
  ASSERT_EQ(d.peaks.size(), 2u);
  EXPECT_EQ(d.peaks[0].workload, "deployment/ns/v");
  EXPECT_DOUBLE_EQ(d.peaks[0].ratio, 1.1);  // 3300 / 3000: within 20%
  EXPECT_FALSE(d.peaks[0].drifted);
  EXPECT_EQ(d.peaks[1].workload, "deployment/ns/w");
  EXPECT_DOUBLE_EQ(d.peaks[1].recent_peak_mib, 10000);  // the larger replica
  EXPECT_DOUBLE_EQ(d.peaks[1].ratio, 1.25);             // 10000 / 8000: above 1.2
  EXPECT_TRUE(d.peaks[1].drifted);
  EXPECT_EQ(d.drifted(), 1u);
}

TEST(FindDrift, AWorkloadWithoutAFittedPeakIsNotJudged) {
  PlanFacts p = TwoWorkloads();
  p.workloads[0].fitted_peak_mib = 0;
  const DriftReport d = FindDrift(p, {{"v-0", 100}}, {}, {});
  EXPECT_TRUE(d.peaks.empty());
}

TEST(RecentPeaks, ThePeakOfEachPodOverTheLastWindowOnly) {
  Telemetry t;
  t.step_s = 60;
  t.samples = 5;
  // p: 900 MiB early, then 100..300; q ended before the window; r started inside it.
  auto pod = [](std::string name, std::vector<float> fb, std::size_t first, std::size_t last) {
    PodSeries s;
    s.pod = std::move(name);
    s.fb_used_mib = std::move(fb);
    s.first = first;
    s.last = last;
    return s;
  };
  t.pods = {pod("p", {900, 100, 300, 200, 250}, 0, 4), pod("q", {500, 500, 0, 0, 0}, 0, 1),
            pod("r", {0, 0, 0, 700, 50}, 3, 4)};
  const std::map<std::string, double> peaks = RecentPeaks(t, 180);  // the last 3 samples: 2, 3, 4
  EXPECT_EQ(peaks, (std::map<std::string, double>{{"p", 300}, {"r", 700}}));
}

}  // namespace
}  // namespace gpufit::controller
