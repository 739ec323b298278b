#include "gpufit/backtest/status.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gpufit {
namespace {

PodSeries Pod(std::string name, std::size_t samples, std::size_t first, std::size_t last, float (*mib)(std::size_t)) {
  PodSeries p;
  p.pod = std::move(name);
  p.first = first;
  p.last = last;
  for (std::size_t k = 0; k < samples; ++k) {
    p.fb_used_mib.push_back(k >= first && k <= last ? mib(k) : 0);
    p.gpu_util_pct.push_back(0);
  }
  return p;
}

PlanOptions Options() {
  PlanOptions o;
  o.target_gpu = "a100-80gb";
  o.threads = 1;
  o.search_budget = 1'000'000;
  return o;
}

// Pod a runs on day 1, pod b on day 2, and nothing says either ended: the day-1 -> day-2
// split plans a alone (b is unplanned, a dropped), so no pod is replayed. That is "not
// tested", never "held".
TEST(Statuses, DisjointPodsAreNotTested) {
  Telemetry t;
  t.step_s = 3600;
  t.samples = 48;
  t.pods.push_back(Pod("a", 48, 0, 23, [](std::size_t) { return 30000.0f; }));
  t.pods.push_back(Pod("b", 48, 24, 47, [](std::size_t) { return 30000.0f; }));
  const Result<Backtest> b = RunBacktest(t, GpuCatalog::Embedded(), Options());
  ASSERT_TRUE(b) << b.error().message;
  ASSERT_EQ(b->splits.size(), 1u);
  EXPECT_EQ(b->splits[0].planned_pods, 0u);
  const std::vector<StrategyStatus> s = Statuses(*b);
  EXPECT_EQ(StatusOf(s, "colocation").verdict, StrategyVerdict::kNotTested);
  EXPECT_EQ(StatusOf(s, "colocation").why,
            "no pod ran in both the fit and the test part of any split, so nothing was replayed");
  EXPECT_EQ(StatusOf(s, "fleet").verdict, StrategyVerdict::kNotTested);
  EXPECT_FALSE(b->safe());
}

// Two pods whose 30,000 MiB halves of the day alternate (a by night, b by day) every day for
// three days: day-by-day splits fit on whole days, the pair shares one GPU (30,000 + 5,000 +
// the group margin is far under 81,920) and every test day replays clean: held. The same
// pair on the first 20 hours alone is provisional.
TEST(Statuses, HeldOnlyWithWholeDaysToFitOn) {
  Telemetry t;
  t.step_s = 3600;
  t.samples = 72;
  t.pods.push_back(Pod("a", 72, 0, 71, [](std::size_t k) { return k % 24 < 12 ? 30000.0f : 5000.0f; }));
  t.pods.push_back(Pod("b", 72, 0, 71, [](std::size_t k) { return k % 24 < 12 ? 5000.0f : 30000.0f; }));
  const Result<Backtest> b = RunBacktest(t, GpuCatalog::Embedded(), Options());
  ASSERT_TRUE(b) << b.error().message;
  ASSERT_EQ(b->splits.size(), 2u);  // day 1 -> 2, days 1-2 -> 3
  EXPECT_EQ(b->splits[1].shared_gpus, 1u);
  const std::vector<StrategyStatus> s = Statuses(*b);
  EXPECT_EQ(StatusOf(s, "colocation").verdict, StrategyVerdict::kHeld) << StatusOf(s, "colocation").why;
  EXPECT_TRUE(b->safe());

  t.samples = 20;
  for (PodSeries& p : t.pods) {
    p.fb_used_mib.resize(20);
    p.gpu_util_pct.resize(20);
    p.last = 19;
  }
  const Result<Backtest> short_window = RunBacktest(t, GpuCatalog::Embedded(), Options());
  ASSERT_TRUE(short_window);
  const std::vector<StrategyStatus> statuses = Statuses(*short_window);
  const StrategyStatus& c = StatusOf(statuses, "colocation");
  EXPECT_EQ(c.verdict, StrategyVerdict::kProvisional);
  EXPECT_NE(c.why.find("48 h of telemetry; have 20.0 h"), std::string::npos) << c.why;
}

TEST(Statuses, VerdictNames) {
  EXPECT_EQ(VerdictName(StrategyVerdict::kHeld), "held");
  EXPECT_EQ(VerdictName(StrategyVerdict::kDidNotHold), "did not hold");
  EXPECT_EQ(VerdictName(StrategyVerdict::kProvisional), "provisional");
  EXPECT_EQ(VerdictName(StrategyVerdict::kNotTested), "not tested");
}

}  // namespace
}  // namespace gpufit
