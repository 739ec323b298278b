#include "gpufit/inference/demand.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <utility>
#include <vector>

#include "gpufit/core/test_support.h"
#include "gpufit/ingest/files/gentd26_serving_reader.h"

namespace gpufit {
namespace {

TEST(DemandTest, PoissonArrivalsFollowThePiecewiseRate) {
  // Rate 2/s for 57 s, 0 for 57 s (no sample), 10/s for 30 s (cut by the next sample),
  // 1/s for 57 s: expected 114 + 300 + 57 = 471 requests per draw.
  const RateSeries s{.source = "s", .t_s = {0, 114, 144}, .per_s = {2, 10, 1}, .sample_s = 57};
  double total = 0;
  constexpr int kDraws = 400;
  for (int seed = 1; seed <= kDraws; ++seed) {
    const RequestTrace t = PoissonArrivals(s, static_cast<std::uint64_t>(seed));
    total += static_cast<double>(t.requests.size());
    ASSERT_TRUE(std::is_sorted(t.requests.begin(), t.requests.end(),
                               [](const Request& a, const Request& b) { return a.arrival_s < b.arrival_s; }));
    ASSERT_EQ(t.requests.front().arrival_s, 0);
  }
  // Mean of 400 draws: standard error sqrt(471 / 400) = 1.09; allow 4 of them.
  EXPECT_NEAR(total / kDraws, 471, 4.4);
}

TEST(DemandTest, BootstrapDrawsOnlyMeasuredValues) {
  const std::vector<double> samples = {1.5, 2.5, 9};
  const std::vector<double> draws = BootstrapSamples(samples, 3000, 7);
  ASSERT_EQ(draws.size(), 3000u);
  std::set<double> seen(draws.begin(), draws.end());
  EXPECT_EQ(seen, (std::set<double>{1.5, 2.5, 9}));
  EXPECT_EQ(std::count(draws.begin(), draws.end(), 9.0) > 900, true);  // about 1,000 each
}

TEST(DemandTest, WindowMeanToPeakByHand) {
  // Windows of 100 s over [0, 300): sample 0 (rate 1 for 57 s) -> 57 requests in w0;
  // sample 150 (rate 2 for 57 s) -> 100 in w1 (150..200) and 14 in w2 (200..207).
  // Mean (57 + 100 + 14) / 3 = 57; peak 100.
  const RateSeries s{.source = "s", .t_s = {0, 150}, .per_s = {1, 2}, .sample_s = 57};
  EXPECT_NEAR(WindowMeanToPeak(s, 100), 57.0 / 100, 1e-12);
  RequestTrace t;
  for (const double a : {0.0, 1.0, 2.0, 3.0, 65.0, 130.0}) t.requests.push_back({a, 0, 0});
  // Per 60 s: 4, 1, 1 -> mean 2, peak 4.
  EXPECT_NEAR(WindowMeanToPeak(t, 60), 0.5, 1e-12);
}

TEST(DemandTest, GenTd26TenMinuteMeanToPeak) {
  const std::string path = testing::DataDir() + "/gentd26/qps.csv";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const auto series = ReadGenTd26Qps(path, "Generative Requests");
  ASSERT_TRUE(series) << series.error().message;
  EXPECT_NEAR(WindowMeanToPeak(*series, 600), 0.29830, 5e-6);
  const RequestTrace t = PoissonArrivals(*series, 1);
  // A Poisson count of mean 121,772.5: standard deviation 349.
  EXPECT_NEAR(static_cast<double>(t.requests.size()), 121772.5, 4 * 349.0);
}

TEST(DemandTest, Median) {
  EXPECT_EQ(Median({}), 0);
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
}

// Blocks of 10 s: block 0 holds a burst at 1, 1.5, 2 s (service 5 s each), block 1 one
// request at 15 s (7 s), block 2 none, block 3 one at 31 s (9 s).
Demand FourBlocks() {
  Demand d;
  for (const auto& [t, s] : std::vector<std::pair<double, double>>{{1, 5}, {1.5, 5}, {2, 5}, {15, 7}, {31, 9}}) {
    d.trace.requests.push_back({.arrival_s = t, .input_tokens = 0, .output_tokens = 0});
    d.times.service_s.push_back(s);
  }
  return d;
}

TEST(DemandTest, LocalBlockBootstrapWithNoReachIsTheTrace) {
  const Demand d = FourBlocks();
  const Demand copy = LocalBlockBootstrap(d, 10, 0, 7);
  ASSERT_EQ(copy.trace.requests.size(), d.trace.requests.size());
  for (std::size_t i = 0; i < d.trace.requests.size(); ++i) {
    EXPECT_EQ(copy.trace.requests[i].arrival_s, d.trace.requests[i].arrival_s);
    EXPECT_EQ(copy.times.service_s[i], d.times.service_s[i]);
  }
}

TEST(DemandTest, LocalBlockBootstrapMovesWholeBlocksByAtMostTheReach) {
  const Demand d = FourBlocks();
  // Each block of the original, as (offset in the block, service) pairs.
  const std::vector<std::vector<std::pair<double, double>>> blocks = {
      {{1, 5}, {1.5, 5}, {2, 5}}, {{5, 7}}, {}, {{1, 9}}};
  std::set<std::size_t> sources_seen;
  for (std::uint64_t seed = 1; seed <= 50; ++seed) {
    const Demand copy = LocalBlockBootstrap(d, 10, 1, seed);
    ASSERT_TRUE(std::is_sorted(copy.trace.requests.begin(), copy.trace.requests.end(),
                               [](const Request& a, const Request& b) { return a.arrival_s < b.arrival_s; }));
    // Block j of the copy is one whole block j-1, j or j+1 of the trace, at the same offsets.
    for (std::size_t j = 0; j < blocks.size(); ++j) {
      std::vector<std::pair<double, double>> got;
      for (std::size_t i = 0; i < copy.trace.requests.size(); ++i) {
        const double t = copy.trace.requests[i].arrival_s;
        if (t >= 10.0 * static_cast<double>(j) && t < 10.0 * static_cast<double>(j + 1))
          got.emplace_back(t - 10.0 * static_cast<double>(j), copy.times.service_s[i]);
      }
      bool matched = false;
      for (std::size_t from = j > 0 ? j - 1 : 0; from <= std::min(j + 1, blocks.size() - 1); ++from) {
        if (got == blocks[from]) {
          matched = true;
          sources_seen.insert(from * 10 + j);
        }
      }
      EXPECT_TRUE(matched) << "seed " << seed << " block " << j;
    }
  }
  EXPECT_GE(sources_seen.size(), 8u);  // blocks really move (10 source/position pairs exist)
}

}  // namespace
}  // namespace gpufit
