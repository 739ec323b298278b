#include "gpufit/plan/fleet_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "gpufit/plan/plan.h"

namespace gpufit {
namespace {

constexpr std::size_t kSamples = 48;  // a day at 30 minutes
constexpr double kShare = 0.05;       // floor(0.05 x 48) = 2 collision samples allowed

PodSeries Pod(const std::string& name, std::vector<float> mem, std::vector<float> duty) {
  PodSeries p;
  p.pod = name;
  p.fb_used_mib = std::move(mem);
  p.gpu_util_pct = std::move(duty);
  p.first = 0;
  p.last = kSamples - 1;
  return p;
}

Telemetry Of(std::vector<PodSeries> pods) {
  Telemetry t;
  t.step_s = 1800;
  t.samples = kSamples;
  std::sort(pods.begin(), pods.end(), [](const PodSeries& a, const PodSeries& b) { return a.pod < b.pod; });
  t.pods = std::move(pods);
  return t;
}

// `latency[p]` false: pod p of `t` is batch work (FleetOptions::batch_pods).
PlanOptions Options(const Telemetry& t, const std::vector<bool>& latency) {
  PlanOptions o;
  o.target_gpu = "h100-80gb";
  o.robust = false;  // the in-sample rule: sums per sample, no learned margin
  o.max_collision_share = kShare;
  o.min_window_hours = 0;
  o.lp_bound_seconds = 0;
  o.search_budget = 20'000'000;  // 5 pods: the packing search ends long before
  for (std::size_t p = 0; p < t.pods.size(); ++p)
    if (!latency[p]) o.fleet.batch_pods.insert(t.pods[p].pod);
  return o;
}

// The oracle's own rule (fleet_plan.h, written out again): may model m hold `pods`?
bool OracleHolds(const Telemetry& t, const std::vector<bool>& latency, const std::vector<std::size_t>& pods,
                 const GpuModel& m) {
  const GpuModel h100 = *GpuCatalog::Embedded().Find("h100-80gb");
  const std::int64_t limit = static_cast<std::int64_t>(std::floor(kShare * kSamples + 1e-9));
  std::vector<double> factor;
  for (std::size_t p : pods) {
    const PodSeries& s = t.pods[p];
    const bool idle = std::all_of(s.gpu_util_pct.begin(), s.gpu_util_pct.end(), [](float u) { return u <= 0; });
    double f = 1;
    if (m.id != h100.id) {
      const bool known = m.bf16_tflops.value_or(0) > 0 && m.memory_bandwidth_gb_s.value_or(0) > 0;
      if (!known && !idle) return false;
      if (known) f = std::max(989.4 / *m.bf16_tflops, 3350.0 / *m.memory_bandwidth_gb_s);
      if (std::abs(f - 1) <= 0.01) f = 1;
      if (!idle && latency[p] && f > 1) return false;
      std::int64_t over = 0;
      for (float u : s.gpu_util_pct) over += u * f > 100;
      if (over > limit) return false;
    }
    factor.push_back(idle ? 0.0 : f);
  }
  const auto memory = static_cast<double>(m.memory.value);
  if (pods.size() == 1) {
    const PodSeries& s = t.pods[pods[0]];
    const double peak = *std::max_element(s.fb_used_mib.begin(), s.fb_used_mib.end());
    return std::ceil(peak * 1.1 - 1e-6) <= memory;
  }
  std::int64_t collisions = 0;
  for (std::size_t k = 0; k < kSamples; ++k) {
    double mem = 0, duty = 0;
    for (std::size_t i = 0; i < pods.size(); ++i) {
      mem += t.pods[pods[i]].fb_used_mib[k];
      duty += t.pods[pods[i]].gpu_util_pct[k] * factor[i];
    }
    if (mem > memory) return false;
    collisions += duty > 100;
  }
  return collisions <= limit;
}

// The cheapest block price over every set partition of the pods (brute force).
double OptimumUsd(const Telemetry& t, const std::vector<bool>& latency) {
  const std::size_t n = t.pods.size();
  std::vector<double> block_usd(std::size_t{1} << n, INFINITY);
  for (std::size_t mask = 1; mask < block_usd.size(); ++mask) {
    std::vector<std::size_t> pods;
    for (std::size_t p = 0; p < n; ++p)
      if (mask >> p & 1) pods.push_back(p);
    for (const GpuModel& m : GpuCatalog::Embedded().models())
      if (OracleHolds(t, latency, pods, m))
        block_usd[mask] = std::min(block_usd[mask], m.on_demand_per_gpu_hour.value * 730);
  }
  std::vector<double> best(block_usd.size(), INFINITY);
  best[0] = 0;
  for (std::size_t mask = 1; mask < best.size(); ++mask) {
    const std::size_t low = mask & (~mask + 1);  // the lowest pod is in the block
    for (std::size_t sub = mask; sub > 0; sub = (sub - 1) & mask)
      if (sub & low) best[mask] = std::min(best[mask], block_usd[sub] + best[mask ^ sub]);
  }
  return best.back();
}

TEST(FleetPlan, FindsTheHandWorkedOptimum) {
  // a, b never active, 10240 MiB; c serving at 50%, d batch at 20%, 30720 MiB each; all on H100 today.
  // By hand: c needs an H100 or H200 (latency); beside it 81559 - 30720 = 50839 MiB hold d and one
  // idle pod (40960), not both (51200). The other idle pod alone on a T4 (11264 MiB with headroom
  // <= 15360): 6.88 x 730 + 0.526 x 730 = 5406.38 USD per month.
  const std::vector<float> big(kSamples, 30720), small(kSamples, 10240), idle(kSamples, 0);
  const Telemetry t =
      Of({Pod("ns/a", small, idle), Pod("ns/b", small, idle), Pod("ns/c", big, std::vector<float>(kSamples, 50)),
          Pod("ns/d", big, std::vector<float>(kSamples, 20))});
  const std::vector<bool> latency = {true, true, true, false};
  const Result<Plan> plan = BuildPlan(t, GpuCatalog::Embedded(), Options(t, latency), "test");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_NEAR(OptimumUsd(t, latency), (6.88 + 0.526) * 730, 1e-6);
  EXPECT_NEAR(plan->fleet.usd_per_month, (6.88 + 0.526) * 730, 1e-6);
  ASSERT_EQ(plan->fleet.gpus.size(), 2u);
  EXPECT_EQ(plan->fleet.gpus[0].model, "t4");
  EXPECT_EQ(plan->fleet.gpus[1].model, "h100-80gb");
  EXPECT_EQ(plan->fleet.gpus[1].pods.size(), 3u);
  EXPECT_EQ(plan->fleet.model_of[2], "h100-80gb");  // c
  // d alone would go to an L40S (20% x 3.877 = 77.5%); c's cheapest cheaper model with room is refused.
  EXPECT_NE(plan->fleet.refusals[2].find("latency would grow"), std::string::npos) << plan->fleet.refusals[2];
  EXPECT_EQ(plan->right_sizing[3].recommended_gpu, "l40s");
  EXPECT_EQ(plan->right_sizing[2].recommended_gpu, "h100-80gb");
}

TEST(FleetPlan, RandomSmallCasesAgainstTheBruteForceOptimum) {
  std::mt19937_64 rng(20261204);
  int optimal = 0;
  double worst_ratio = 1;
  constexpr int kCases = 30;
  for (int c = 0; c < kCases; ++c) {
    SCOPED_TRACE(c);
    std::vector<PodSeries> pods;
    std::vector<bool> latency;
    const std::size_t n = 3 + rng() % 3;  // 3..5 pods
    for (std::size_t p = 0; p < n; ++p) {
      // A day and a night level each for memory (2..60 GiB) and duty (idle, or 5..80%).
      const float mem_day = static_cast<float>(2048 + rng() % 59392),
                  mem_night = static_cast<float>(2048 + rng() % 59392);
      const bool idle = rng() % 3 == 0;
      const float duty_day = idle ? 0 : static_cast<float>(5 + rng() % 76);
      const float duty_night = idle ? 0 : static_cast<float>(rng() % 40);
      std::vector<float> mem, duty;
      for (std::size_t k = 0; k < kSamples; ++k) {
        const bool day = (k / 8 + p) % 3 != 0;
        mem.push_back(day ? mem_day : mem_night);
        duty.push_back(day ? duty_day : duty_night);
      }
      pods.push_back(Pod("ns/p" + std::to_string(p), mem, duty));
      latency.push_back(rng() % 2 == 0);
    }
    const Telemetry t = Of(pods);  // names p0..p4 sort as created
    const Result<Plan> plan = BuildPlan(t, GpuCatalog::Embedded(), Options(t, latency), "test");
    ASSERT_TRUE(plan) << plan.error().message;
    const double optimum = OptimumUsd(t, latency);
    const FleetPlan& f = plan->fleet;
    // Every GPU holds its pods by the oracle's rule, every pod is placed once, no pod is kept.
    std::vector<int> seen(n, 0);
    for (const FleetGpu& g : f.gpus) {
      EXPECT_TRUE(OracleHolds(t, latency, g.pods, *GpuCatalog::Embedded().Find(g.model))) << g.model;
      for (std::size_t p : g.pods) ++seen[p];
    }
    EXPECT_EQ(seen, std::vector<int>(n, 1));
    EXPECT_GE(f.usd_per_month, optimum - 1e-6);
    EXPECT_LE(f.usd_per_month, plan->totals.usd_per_month_after + 1e-6);  // never dearer than the same-model plan
    optimal += std::abs(f.usd_per_month - optimum) < 1e-6;
    worst_ratio = std::max(worst_ratio, f.usd_per_month / optimum);
  }
  // Measured: optimal in 29 of 30, worst 1.16x (one case where the same-model start splits the
  // pods so that no single move or pair merge reaches the best partition). A regression fails here.
  EXPECT_GE(optimal, 28);
  EXPECT_LE(worst_ratio, 1.2);
  RecordProperty("optimal", optimal);
  RecordProperty("worst_ratio", std::to_string(worst_ratio));
  std::printf("fleet plan: optimal in %d of %d cases, worst %.4f x the optimum\n", optimal, kCases, worst_ratio);
}

TEST(FleetPlan, ReplayCountsOverflowAtEachModelsLineAndScalesDuty) {
  FleetPlan f;
  f.slowdown = {2.0, 1.0};
  f.gpus.push_back({.model = "l4", .pods = {0, 1}, .oom_line_mib = 1000});
  // Memory 600 + 500 = 1100 > 1000 at sample 0 only; duty 40 x 2 + 30 = 110 > 100 at samples 1 and 2.
  Telemetry t;
  t.samples = 4;
  t.pods = {Pod("a", {600, 400, 400, 400}, {10, 40, 40, 0}), Pod("b", {500, 500, 500, 500}, {0, 30, 30, 0})};
  for (PodSeries& p : t.pods) p.last = 3;
  const FleetReplay r = ReplayFleet(t, f, 0.25);  // limit floor(0.25 x 4) = 1
  EXPECT_EQ(r.memory_overflows, 1);
  EXPECT_DOUBLE_EQ(r.worst_over_mib, 100);
  EXPECT_DOUBLE_EQ(r.max_collision_share, 0.5);
  EXPECT_EQ(r.gpus_over_collision_limit, 1u);
  EXPECT_FALSE(r.safe);
}

}  // namespace
}  // namespace gpufit
