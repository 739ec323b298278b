#include "gpufit/backtest/backtest.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpufit {
namespace {

PodSeries Pod(std::string name, std::vector<float> mem) {
  PodSeries p;
  p.pod = std::move(name);
  p.last = mem.size() - 1;
  p.gpu_util_pct.assign(mem.size(), 0);
  p.fb_used_mib = std::move(mem);
  return p;
}

// Two pods on a T4 (15,360 MiB, M): in the fit half (samples 0-3) their 0.6 M spikes come
// at different samples, so the in-sample rule puts them on one GPU; in the test half (4-7)
// both spike at sample 5: 1.2 M > M, one overflow sample, 0.2 M over.
Telemetry Spikes() {
  const float m = 15360;
  Telemetry t;
  t.step_s = 60;
  t.samples = 8;
  t.pods.push_back(Pod("a", {0.3f * m, 0.6f * m, 0.3f * m, 0.3f * m, 0.3f * m, 0.6f * m, 0.3f * m, 0.3f * m}));
  t.pods.push_back(Pod("b", {0.3f * m, 0.3f * m, 0.3f * m, 0.6f * m, 0.3f * m, 0.6f * m, 0.3f * m, 0.3f * m}));
  // Only in the test half: unplanned.
  PodSeries late = Pod("late", {0, 0, 0, 0, 0, 100, 100, 100});
  late.first = 5;
  t.pods.push_back(late);
  // Only in the fit half: dropped.
  PodSeries gone = Pod("gone", {100, 100, 0, 0, 0, 0, 0, 0});
  gone.last = 1;
  t.pods.push_back(gone);
  return t;
}

// The one split these 8-sample cases are built for: fit on samples 0-3, test on 4-7.
const std::vector<WalkForwardSplit> kHalves = {{"first half -> second half", 0, 4, 4, 8}};

PlanOptions Options(bool robust) {
  PlanOptions o;
  o.target_gpu = "t4";
  o.robust = robust;
  o.threads = 1;
  return o;
}

TEST(Backtest, InSampleRuleOverflowsOnTheHeldOutHalf) {
  const Result<Backtest> b = RunBacktest(Spikes(), GpuCatalog::Embedded(), Options(false), kHalves);
  ASSERT_TRUE(b) << b.error().message;
  ASSERT_EQ(b->splits.size(), 1u);
  const SplitOutcome& s = b->splits[0];
  EXPECT_EQ(s.planned_pods, 2u);
  EXPECT_EQ(s.unplanned, (std::vector<std::string>{"late"}));
  EXPECT_EQ(s.dropped, (std::vector<std::string>{"gone"}));
  EXPECT_EQ(s.shared_gpus, 1u);
  EXPECT_EQ(s.overflow_samples, 1);
  EXPECT_EQ(s.overflow_gpus, 1u);
  EXPECT_NEAR(s.worst_over_mib, 0.2 * 15360, 1);
  EXPECT_DOUBLE_EQ(s.overflow_gpu_hours_share, 1.0 / 4);
  EXPECT_FALSE(b->safe());
  EXPECT_NE(b->Guarantee().find("colocation did not hold"), std::string::npos) << b->Guarantee();
}

// The guarantee is said once per document: at the section's head for `gpufit backtest`,
// not at all in the section when the plan's summary leads with it. One split: "1 split".
TEST(Backtest, MarkdownStatesTheGuaranteeOnce) {
  const Result<Backtest> b = RunBacktest(Spikes(), GpuCatalog::Embedded(), Options(false), kHalves);
  ASSERT_TRUE(b) << b.error().message;
  const std::string guarantee = b->Guarantee();
  EXPECT_EQ(guarantee.rfind("Backtest on 1 split (each plan", 0), 0u) << guarantee;
  const auto count = [&](const std::string& md) {
    std::size_t n = 0;
    for (std::size_t at = md.find(guarantee); at != std::string::npos; at = md.find(guarantee, at + 1)) ++n;
    return n;
  };
  const std::string section = BacktestToMarkdown(*b);
  const std::string in_plan = BacktestToMarkdown(*b, nullptr, GuaranteeAt::kSummaryLead);
  EXPECT_EQ(count(section), 1u) << section;
  EXPECT_EQ(count(in_plan), 0u) << in_plan;
  // The rest of the section is the same: the verdicts and the table.
  EXPECT_EQ(section.size(), in_plan.size() + guarantee.size() + 2);
  EXPECT_NE(in_plan.find("| first half -> second half |"), std::string::npos) << in_plan;
}

// The fit half's own halves (samples 0-1 and 2-3) show surprises of 0.3 M (a: 0.6 -> 0.3,
// b: 0.3 -> 0.6), so 0.3 M stays free: 0.6 M + 0.3 M > 0.7 M, one GPU each, no overflow.
TEST(Backtest, LearnedMarginHoldsOnTheHeldOutHalf) {
  const Result<Backtest> b = RunBacktest(Spikes(), GpuCatalog::Embedded(), Options(true), kHalves);
  ASSERT_TRUE(b) << b.error().message;
  const SplitOutcome& s = b->splits[0];
  EXPECT_NEAR(s.memory_margin_mib, 0.3 * 15360, 1);
  EXPECT_EQ(s.gpus, 2u);
  EXPECT_EQ(s.shared_gpus, 0u);  // each pod alone
  EXPECT_EQ(s.overflow_samples, 0);
  // Nothing shared, so no co-location was replayed: not tested, and not "safe" either.
  EXPECT_FALSE(b->safe());
  const nlohmann::json j = nlohmann::json::parse(BacktestToJson(*b));
  EXPECT_EQ(j["status"]["colocation"]["status"], "not tested");
  EXPECT_EQ(j["splits"][0]["colocation"]["overflow_samples"], 0);
  EXPECT_EQ(j["splits"][0]["unplanned_pods"][0], "late");
}

// A pod right-sized from its fit peak whose test peak outgrows the recommended GPU.
TEST(Backtest, OutgrownRightSizing) {
  Telemetry t;
  t.step_s = 3600;  // 8 hours a half: 16 samples
  t.samples = 16;
  std::vector<float> mem(16, 10000);
  mem[12] = 30000;  // the test half peaks above an L4's 23,034 MiB
  t.pods.push_back(Pod("p", mem));
  PlanOptions o = Options(true);
  o.target_gpu = "a100-80gb";
  o.min_window_hours = 0;  // allow shrinking on 8 h
  const std::vector<WalkForwardSplit> halves = {{"first half -> second half", 0, 8, 8, 16}};
  const Result<Backtest> b = RunBacktest(t, GpuCatalog::Embedded(), o, halves);
  ASSERT_TRUE(b) << b.error().message;
  const SplitOutcome& s = b->splits[0];
  EXPECT_EQ(s.right_sized, 1u);
  ASSERT_EQ(s.outgrown.size(), 1u);
  EXPECT_NE(s.outgrown[0].find("test peak 30000 MiB"), std::string::npos);
  // With the 24 h default the pod keeps its A100: nothing outgrown.
  o.min_window_hours = 24;
  const Result<Backtest> held = RunBacktest(t, GpuCatalog::Embedded(), o, halves);
  ASSERT_TRUE(held);
  EXPECT_EQ(held->splits[0].right_sized, 0u);
  EXPECT_TRUE(held->splits[0].outgrown.empty());
}

// With memory caps each pod runs under its own cap: a pod whose later peak passes the cap
// fitted on the earlier half breaks under HAMi or MPS even though the GPU has room. Pod p
// peaks at 12000 MiB in the fit half (samples 0-3), so its cap is 12000 x 1.1 = 13200 (the
// in-sample rule: no learned margin); it reaches 16000 at two samples of the test half.
TEST(Backtest, APodOverItsFittedCapDoesNotHold) {
  Telemetry t;
  t.step_s = 60;
  t.samples = 8;
  t.pods.push_back(Pod("p", {10000, 12000, 10000, 10000, 10000, 16000, 16000, 10000}));
  t.pods.push_back(Pod("q", {5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000}));
  PlanOptions o = Options(false);
  o.target_gpu = "a100-80gb";
  o.memory_caps = true;
  const Result<Backtest> b = RunBacktest(t, GpuCatalog::Embedded(), o, kHalves);
  ASSERT_TRUE(b) << b.error().message;
  const SplitOutcome& s = b->splits[0];
  EXPECT_EQ(s.overflow_samples, 0);  // 16000 + 5000 fits the GPU
  EXPECT_EQ(s.cap_overflow_samples, 2);
  ASSERT_EQ(s.over_cap.size(), 1u);
  EXPECT_EQ(s.over_cap[0], "p: peak 16000 MiB > cap 13200 MiB");
  EXPECT_FALSE(b->safe());
  EXPECT_NE(b->Guarantee().find("colocation did not hold"), std::string::npos) << b->Guarantee();
  const nlohmann::json j = nlohmann::json::parse(BacktestToJson(*b));
  EXPECT_NE(j["status"]["colocation"]["why"].get<std::string>().find(
                "0 memory-overflow samples (worst 0 MiB over), 2 samples over a memory cap"),
            std::string::npos)
      << j["status"]["colocation"]["why"];
}

}  // namespace
}  // namespace gpufit
