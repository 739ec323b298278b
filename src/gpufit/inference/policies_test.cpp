#include "gpufit/inference/policies.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

#include "gpufit/core/rng.h"

namespace gpufit {
namespace {

TEST(PoliciesTest, ExpandScheduleByHand) {
  // Two steps per window; counts 1, 3, 1, 1, 2. Lead 1 step: rises start a step early.
  // Keep 2 steps: the dip to 1 between 3 and 2 lasts 3 steps (> 2) so it stays.
  EXPECT_EQ(ExpandSchedule({1, 3, 1, 1, 2}, 2, 1, 2), (std::vector<int>{1, 3, 3, 3, 1, 1, 1, 2, 2, 2}));
  // Keep 3 steps: now the dip (3 steps at level 2..3) is filled up to the lower side, 2, and
  // level 3, reached at step 1, is held 4 steps (1..4) before it falls to 2.
  EXPECT_EQ(ExpandSchedule({1, 3, 1, 1, 2}, 2, 1, 3), (std::vector<int>{1, 3, 3, 3, 3, 2, 2, 2, 2, 2}));
  // No lead, no keep: the counts themselves.
  EXPECT_EQ(ExpandSchedule({0, 2, 0}, 1, 0, 0), (std::vector<int>{0, 2, 0}));
}

TEST(PoliciesTest, ExpandScheduleHoldsAShortPeakByHand) {
  // One step per window, no lead, keep 2: a level must last 3 steps once reached, and a dip
  // of 1 or 2 steps is not taken. Counts 1 4 1 1 1 1 2 1 1 2 2 2:
  //  levels 4 and 3 are reached at step 1 for one step: held through steps 1..3;
  //  at level 2 the gaps 4..5 (after the held peak) and 7..8 are 2 steps each: filled.
  EXPECT_EQ(ExpandSchedule({1, 4, 1, 1, 1, 1, 2, 1, 1, 2, 2, 2}, 1, 0, 2),
            (std::vector<int>{1, 4, 4, 4, 2, 2, 2, 2, 2, 2, 2, 2}));
  // The same with keep 1: level 4 held 2 steps (1, 2); the level-2 gap 3..5 (3 steps) stays;
  // level 2 reached at 6 is held through 7, which leaves a 1-step gap at 8: filled.
  EXPECT_EQ(ExpandSchedule({1, 4, 1, 1, 1, 1, 2, 1, 1, 2, 2, 2}, 1, 0, 1),
            (std::vector<int>{1, 4, 4, 1, 1, 1, 2, 2, 2, 2, 2, 2}));
}

// The hold, checked by brute force: for every level and every pair of steps, no dip below
// the level of at most keep steps between two steps at or above it, and no run at or above
// it of at most keep steps that ends before the series does; never below the prewarmed
// counts, never above their peak. And it costs at most one hold per level more than the
// cheapest schedule with those properties (the brute-force minimum over every schedule
// between the counts and the peak; lengthening a run at its end is not always the cheapest
// way, so the two can differ).
TEST(PoliciesTest, ExpandScheduleNeverFlapsFasterThanTheHoldOracle) {
  Rng rng(41);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 3 + static_cast<int>(rng.Unit() * 6);  // 3..8 steps
    const int keep = static_cast<int>(rng.Unit() * 4);   // 0..3
    const int lead = static_cast<int>(rng.Unit() * 2);   // 0..1
    std::vector<int> counts(static_cast<std::size_t>(n));
    for (int& c : counts) c = static_cast<int>(rng.Unit() * 4);  // 0..3
    const std::vector<int> z = ExpandSchedule(counts, 1, lead, keep);
    ASSERT_EQ(z.size(), counts.size());
    // The prewarmed need, computed here from its definition.
    std::vector<int> need(counts.size());
    for (int s = 0; s < n; ++s)
      for (int k = 0; k <= lead && s + k < n; ++k) need[s] = std::max(need[s], counts[s + k]);
    const int peak = *std::max_element(need.begin(), need.end());
    const auto flaps = [&](const std::vector<int>& x) {
      for (int level = 1; level <= peak; ++level)
        for (int i = 0; i < n; ++i)
          for (int j = i + 1; j < n; ++j) {
            bool inside_low = true, inside_high = true;
            for (int m = i + 1; m < j; ++m) inside_low = inside_low && x[m] < level;
            for (int m = i; m < j; ++m) inside_high = inside_high && x[m] >= level;
            // A dip: i and j at or above, everything between below, j - i - 1 <= keep steps.
            if (x[i] >= level && x[j] >= level && j > i + 1 && inside_low && j - i - 1 <= keep) return true;
            // A run i..j-1 at or above, ended by j below, entered at i from below (or at 0).
            if (inside_high && x[j] < level && (i == 0 || x[i - 1] < level) && j - i <= keep) return true;
          }
      return false;
    };
    for (int s = 0; s < n; ++s) {
      ASSERT_GE(z[s], need[s]) << "trial " << trial;
      ASSERT_LE(z[s], peak) << "trial " << trial;
    }
    ASSERT_FALSE(flaps(z)) << "trial " << trial;
    // Brute force: every schedule between need and peak without a flap; the cheapest.
    int best = std::numeric_limits<int>::max();
    std::vector<int> x = need;
    for (bool more = true; more;) {
      if (!flaps(x)) best = std::min(best, std::accumulate(x.begin(), x.end(), 0));
      more = false;
      for (int s = 0; s < n && !more; ++s) {
        if (x[s] < peak) {
          ++x[s];
          more = true;
        } else {
          x[s] = need[s];
        }
      }
    }
    const int cost = std::accumulate(z.begin(), z.end(), 0);
    ASSERT_GE(cost, best) << "trial " << trial;
    EXPECT_LE(cost, best + peak * keep) << "trial " << trial;
  }
}

TEST(PoliciesTest, HoldIsTheColdStartPlusADecisionWindow) {
  Demand d;
  ReplicaPolicyInput in;
  in.demand = &d;
  in.cold_start_s = 20;
  in.window_s = 300;
  EXPECT_DOUBLE_EQ(ReplicaHoldSeconds(in), 320);
  in.cold_start_s = 0;
  in.window_s = 60;
  EXPECT_DOUBLE_EQ(ReplicaHoldSeconds(in), 60);
}

Demand PoissonDemand(const std::vector<double>& rate_per_minute, double mean_service_s, std::uint64_t seed) {
  Rng rng(seed);
  Demand d;
  for (std::size_t m = 0; m < rate_per_minute.size(); ++m) {
    for (double t = 60.0 * static_cast<double>(m) + rng.Exponential(rate_per_minute[m]);
         t < 60.0 * static_cast<double>(m + 1); t += rng.Exponential(rate_per_minute[m])) {
      d.trace.requests.push_back({t, 0, 0});
      d.times.service_s.push_back(rng.Exponential(1 / mean_service_s));
    }
  }
  return d;
}

ReplicaPolicyInput Input(const Demand& d) {
  return {.demand = &d,
          .concurrency = 2,
          .cold_start_s = 20,
          .slo = {.metric = SloMetric::kWait, .seconds = 1, .target = 0.99},
          .window_s = 60,
          .step_s = 5,
          .max_replicas = 1000};
}

TEST(PoliciesTest, StaticPeakIsTheFewestConstantReplicasMeetingTheSlo) {
  const Demand d = PoissonDemand({2, 2, 6, 6, 2, 2}, 2, 11);
  const ReplicaPolicyInput in = Input(d);
  const PolicyOutcome s = StaticPeak(in);
  ASSERT_EQ(s.schedule.replicas.size(), 1u);
  const int c = s.schedule.replicas[0];
  const auto attain = [&](int n) {
    return ReplayRequests(d.trace, d.times.service_s, {}, {.window_s = 1e18, .replicas = {n}}, ReplayOptionsFor(in))
        .slo_attainment;
  };
  EXPECT_GE(attain(c), 0.99);
  EXPECT_LT(attain(c - 1), 0.99);
  EXPECT_EQ(s.replay.slo_attainment, attain(c));
}

// The clairvoyant reference against a brute-force oracle on two windows: every pair of
// counts, each window replayed alone after the previous window's tail (requests that
// arrived up to the longest service time before it), the cheapest pair whose misses fit
// the allowance. Requests are served first come, first served, so a window's own misses
// are those of tail + window minus those of the tail alone.
TEST(PoliciesTest, ClairvoyantMatchesBruteForceOnTwoWindows) {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const Demand d = PoissonDemand({3, 8}, 1.5, seed);
    ReplicaPolicyInput in = Input(d);
    in.concurrency = 1;
    in.slo = {.metric = SloMetric::kWait, .seconds = 0.2, .target = 0.97};
    const PolicyOutcome c = Clairvoyant(in);
    ReplayOptions o = ReplayOptionsFor(in);
    o.cold_start_s = 0;
    const double lookback = *std::max_element(d.times.service_s.begin(), d.times.service_s.end());
    const auto misses_of = [&](double from, double to, int n) {
      Demand part;
      for (std::size_t i = 0; i < d.trace.requests.size(); ++i) {
        const double a = d.trace.requests[i].arrival_s;
        if (a < from || a >= to) continue;
        part.trace.requests.push_back({a - from, 0, 0});
        part.times.service_s.push_back(d.times.service_s[i]);
      }
      if (part.trace.requests.empty()) return 0.0;
      const double first = part.trace.requests.front().arrival_s;
      for (Request& r : part.trace.requests) r.arrival_s -= first;
      const ReplayResult r =
          ReplayRequests(part.trace, part.times.service_s, {}, {.window_s = 1e18, .replicas = {n}}, o);
      return std::round((1 - r.slo_attainment) * static_cast<double>(part.trace.requests.size()));
    };
    std::vector<std::vector<double>> misses(2);
    for (int n = 0; n <= 40; ++n) {
      misses[0].push_back(misses_of(0, 60, n));
      misses[1].push_back(misses_of(60 - lookback, 1e9, n) - misses_of(60 - lookback, 60, n));
    }
    const std::vector<double> length = {60, d.trace.Duration() - 60};
    const double allowance = std::floor(0.03 * static_cast<double>(d.trace.requests.size()));
    double best = 1e18;
    for (std::size_t a = 0; a <= 40; ++a) {
      for (std::size_t b = 0; b <= 40; ++b) {
        if (misses[0][a] + misses[1][b] <= allowance) {
          best = std::min(best, (static_cast<double>(a) * length[0] + static_cast<double>(b) * length[1]) / 3600);
        }
      }
    }
    EXPECT_NEAR(c.replay.gpu_hours, best, 1e-12) << "seed " << seed;
    EXPECT_GE(c.replay.slo_attainment, 0.97);
  }
}

TEST(PoliciesTest, GpufitMeetsTheSloWithFewerGpuHoursThanStaticPeak) {
  // Quiet, busy, quiet: 1/s, 8/s, 1/s, two minutes each; service 2 s, 2 per replica.
  const Demand d = PoissonDemand({1, 1, 8, 8, 1, 1}, 2, 5);
  const ReplicaPolicyInput in = Input(d);
  const PolicyOutcome g = GpufitSchedule(in);
  const PolicyOutcome s = StaticPeak(in);
  const PolicyOutcome c = Clairvoyant(in);
  EXPECT_GE(g.replay.slo_attainment, 0.99);
  EXPECT_LT(g.replay.gpu_hours, s.replay.gpu_hours);
  EXPECT_GE(g.replay.gpu_hours, c.replay.gpu_hours);
  // The busy minutes start ahead by the cold start: 4 steps of 5 s before t = 120.
  const std::vector<int>& r = g.schedule.replicas;
  EXPECT_GT(r[24 - 4], r[24 - 5]);
}

// A flat Poisson load of 5 requests/s, 1 s each: 5 replicas is a queue at utilization 1,
// which a lucky sample can pass. gpufit keeps more slots than the offered load of each
// window and its neighbours, so its schedule holds on fresh draws too.
TEST(PoliciesTest, GpufitScheduleHoldsOnFreshDrawsOfAFlatLoad) {
  Demand d = PoissonDemand(std::vector<double>(60, 5.0), 1, 9);
  for (double& s : d.times.service_s) s = 1;
  ReplicaPolicyInput in = Input(d);
  in.concurrency = 1;
  in.cold_start_s = 30;
  in.slo = {.metric = SloMetric::kLatency, .seconds = 5, .target = 0.99};
  const PolicyOutcome g = GpufitSchedule(in);
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    Demand fresh = PoissonDemand(std::vector<double>(60, 5.0), 1, 100 + seed);  // a fresh draw of the same load
    for (double& x : fresh.times.service_s) x = 1;
    const ReplayResult r =
        ReplayRequests(fresh.trace, fresh.times.service_s, fresh.times.prefill_s, g.schedule, ReplayOptionsFor(in));
    EXPECT_GE(r.slo_attainment, 0.99) << "seed " << seed;
  }
}

TEST(PoliciesTest, HpaLikeScalesUpAtOnceAndDownAfterTheStabilizationWindow) {
  // 600 s at 4/s, then 600 s at 1/s, evenly spaced; service 1 s, concurrency 1, target 50%:
  // 2 requests/s per replica -> 2 replicas, then 1 after the drop, but only once every
  // recommendation of the last 300 s says so.
  Demand d;
  for (int i = 0; i < 2400; ++i) d.trace.requests.push_back({i * 0.25, 0, 0});
  for (int i = 0; i < 600; ++i) d.trace.requests.push_back({600 + i * 1.0, 0, 0});
  d.times.service_s.assign(d.trace.requests.size(), 1.0);
  ReplicaPolicyInput in = Input(d);
  in.concurrency = 1;
  const PolicyOutcome h = HpaLike(in, {.target_utilization = 0.5,
                                       .sync_s = 15,
                                       .metric_window_s = 60,
                                       .stabilization_s = 300,
                                       .tolerance = 0.1,
                                       .min_replicas = 1});
  EXPECT_DOUBLE_EQ(h.target_rps_per_replica, 0.5);
  // 4/s -> 8 replicas before the drop.
  EXPECT_EQ(h.schedule.replicas[39], 8);
  // After the drop the 60 s metric falls: at t = 615 it counts 179 + 16 requests (3.25/s ->
  // 7), at 630 119 + 31 (2.5/s -> 5), at 645 59 + 46 (1.75/s -> 4), from 660 on 1/s (2).
  // The count follows the highest recommendation of the last 300 s: 8 until the one of
  // t = 600 leaves the window, then 7, 5, 4 and 2 at t = 915, 930, 945 and 960.
  EXPECT_EQ(h.schedule.replicas[60], 8);
  EXPECT_EQ(h.schedule.replicas[61], 7);
  EXPECT_EQ(h.schedule.replicas[62], 5);
  EXPECT_EQ(h.schedule.replicas[63], 4);
  EXPECT_EQ(h.schedule.replicas[64], 2);
  EXPECT_EQ(h.schedule.replicas.back(), 2);
}

}  // namespace
}  // namespace gpufit
