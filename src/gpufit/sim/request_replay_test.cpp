#include "gpufit/sim/request_replay.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "gpufit/core/rng.h"
#include "gpufit/optimize/queueing.h"

namespace gpufit {
namespace {

// Acceptance: on a synthetic Poisson trace the replay's mean wait agrees with the M/M/c
// formula within 3%: lambda = 8/s, exponential service of mean 1 s, 10 replicas (rho 0.8),
// four million requests (at one million the estimate still wanders by about 2%: waits
// at rho 0.8 are strongly correlated).
TEST(RequestReplayTest, PoissonTraceMatchesTheMmcMeanWait) {
  Rng rng(2024);
  constexpr double kLambda = 8, kMu = 1;
  constexpr int kServers = 10;
  RequestTrace trace;
  std::vector<double> service;
  double t = 0;
  for (int i = 0; i < 4000000; ++i) {
    trace.requests.push_back({.arrival_s = t, .input_tokens = 0, .output_tokens = 0});
    service.push_back(rng.Exponential(kMu));
    t += rng.Exponential(kLambda);
  }
  const ReplayResult r = ReplayRequests(trace, service, {}, {.window_s = 1e9, .replicas = {kServers}}, ReplayOptions{});
  const double analytic = MmcMeanWait(kServers, kLambda, kMu);
  std::printf("replay mean wait %.5f s, M/M/c %.5f s (ratio %.4f)\n", r.mean_wait_s, analytic,
              r.mean_wait_s / analytic);
  EXPECT_NEAR(r.mean_wait_s / analytic, 1.0, 0.03);
  EXPECT_EQ(r.cold_starts, 0);
  // The replicas run from 0 until the last request is served, a little after the last arrival.
  EXPECT_GE(r.gpu_hours, kServers * trace.Duration() / 3600);
  EXPECT_LE(r.gpu_hours, kServers * (trace.Duration() + 60) / 3600);
}

TEST(RequestReplayTest, HandCheckedColdStartsConcurrencyAndScaleDown) {
  // Window 10 s; targets 1, 2, 0. Concurrency 2, cold start 3 s, service 4 s each.
  // t=0: replica A ready. Requests at 0, 1, 2 (A takes 0 and 1; 2 waits).
  // t=4: A frees a slot -> request 2 starts (waited 2 s). t=10: B starts, ready at 13.
  // Request at 12 waits for A? A is free at 8 (1 done at 5, 2 done at 8): served at once.
  // t=20: target 0: both retire; A idle -> leaves at 20, B idle -> leaves at 20.
  RequestTrace trace;
  for (const double a : {0.0, 1.0, 2.0, 12.0, 20.0}) trace.requests.push_back({a, 0, 0});
  const std::vector<double> service(5, 4.0);
  const ReplayResult r = ReplayRequests(trace, service, {}, {.window_s = 10, .replicas = {1, 2, 0}},
                                        {.concurrency = 2,
                                         .cold_start_s = 3,
                                         .slo_s = 4.5,
                                         .slo_metric = SloMetric::kLatency,
                                         .initial_ready = -1,
                                         .miss_bucket_s = 10});
  EXPECT_EQ(r.cold_starts, 1);
  EXPECT_EQ(r.max_replicas, 2);
  EXPECT_EQ(r.unserved, 1u);  // the request at 20 arrives after every replica is gone
  EXPECT_NEAR(r.mean_wait_s, 2.0 / 4, 1e-12);
  // Latencies 4, 4, 6, 4 (of 5 requests, one unserved): 3 of 5 within 4.5 s.
  EXPECT_NEAR(r.slo_attainment, 3.0 / 5, 1e-12);
  // Misses by arrival: 2 (waited 2 s) in [0, 10), 20 (unserved) in [20, 30).
  EXPECT_EQ(r.misses_per_bucket, (std::vector<std::size_t>{1, 0, 1}));
  EXPECT_EQ(r.slo_misses, 2u);
  // The first three as an unscored warm-up: of the requests at 12 and 20, one meets the SLO.
  ReplayOptions warm{.concurrency = 2,
                     .cold_start_s = 3,
                     .slo_s = 4.5,
                     .slo_metric = SloMetric::kLatency,
                     .initial_ready = -1,
                     .miss_bucket_s = 10,
                     .unscored_prefix = 3};
  const ReplayResult w = ReplayRequests(trace, service, {}, {.window_s = 10, .replicas = {1, 2, 0}}, warm);
  EXPECT_NEAR(w.slo_attainment, 0.5, 1e-12);
  EXPECT_EQ(w.slo_misses, 1u);
  EXPECT_EQ(w.misses_per_bucket, (std::vector<std::size_t>{0, 0, 1}));
  // A from 0 to 20, B from 10 to 20: 30 replica-seconds.
  EXPECT_NEAR(r.gpu_hours, 30.0 / 3600, 1e-12);
}

}  // namespace
}  // namespace gpufit
