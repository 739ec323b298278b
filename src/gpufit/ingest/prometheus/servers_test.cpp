// QueryRange against each real metrics server the tests start (tests/support/metrics_server.h:
// Prometheus and VictoriaMetrics): the evaluation times are the ones asked for, and each
// point of max_over_time(...[step - 1 ms]) is the largest raw sample of its own step, however
// the range is aligned. Expected values come from the raw samples, by brute force.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <map>
#include <optional>

#include "gpufit/core/test_support.h"
#include "gpufit/ingest/prometheus/client.h"
#include "metrics_server.h"
#include "prometheus_server.h"

namespace gpufit {
namespace {

constexpr double kT0 = 1767225600;  // 2026-01-01T00:00:00Z
constexpr double kScrape = 15;      // seconds between raw samples
constexpr int kSamples = 481;       // two hours

// Raw value of series `s` at sample i, or none: series "b" has a 10-minute gap.
std::optional<double> Raw(char s, int i) {
  if (s == 'b' && i >= 200 && i < 240) return std::nullopt;
  return s == 'a' ? (i * 7) % 1000 : (i * 13) % 997;
}

std::string Fixture() {
  std::string om = "# TYPE test_gauge gauge\n";
  for (const char s : {'a', 'b'})
    for (int i = 0; i < kSamples; ++i)
      if (const std::optional<double> v = Raw(s, i))
        om += fmt::format("test_gauge{{series=\"{}\"}} {} {}\n", s, *v, static_cast<long long>(kT0 + kScrape * i));
  return om + "# EOF\n";
}

class QueryRangeOnEachServer : public ::testing::TestWithParam<std::string> {};

TEST_P(QueryRangeOnEachServer, MaxOverTimeIsEachStepsOwnSamplesOnAnUnalignedGrid) {
  testing::TempDir dir;
  auto server = testing::StartMetricsServer(GetParam(), Fixture(), dir.path());
  ASSERT_TRUE(server) << server.error().message;
  PrometheusOptions o;
  o.url = (*server)->url();
  o.retries = 0;
  // 100 points from 17 s past a minute: VictoriaMetrics rounds such a range onto multiples of
  // the step unless asked not to (ingest/prometheus/client.h); points in the gap are absent.
  const RangeQuery q{
      .query = "max_over_time(test_gauge[59999ms])", .start_s = kT0 + 17, .end_s = kT0 + 17 + 99 * 60, .step_s = 60};
  const Result<std::vector<PromSeries>> r = QueryRange(o, q);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  for (const PromSeries& s : *r) {
    const char name = s.labels.at("series")[0];
    SCOPED_TRACE(std::string(1, name));
    std::vector<double> times, values;
    for (int k = 0; k < 100; ++k) {
      const double t = q.start_s + 60 * k;
      std::optional<double> peak;
      for (int i = 0; i < kSamples; ++i) {
        const double at = kT0 + kScrape * i;
        if (at > t - 59.999 && at <= t && Raw(name, i)) peak = std::max(peak.value_or(*Raw(name, i)), *Raw(name, i));
      }
      if (!peak) continue;
      times.push_back(t);
      values.push_back(*peak);
    }
    EXPECT_EQ(s.time_s, times);
    EXPECT_EQ(s.value, values);
    // By hand: point k's window holds samples 4k-2 .. 4k+1, all in the gap (200..239) for
    // k = 51..59: those nine points are absent, not filled by a lookback.
    EXPECT_EQ(times.size(), name == 'b' ? 91u : 100u);
  }
}

// The parameters other servers need ride along on every request (Prometheus ignores them):
// without nocache=1 VictoriaMetrics moves the grid (the test above fails on it); a partial
// answer from a VictoriaMetrics cluster or Thanos must be an error, not missing pods.
TEST(QueryRange, SendsTheParametersOtherServersNeed) {
  std::map<std::string, std::string> seen;
  testing::FakeHttpServer server([&](const httplib::Request& req, httplib::Response& res) {
    for (const char* key : {"nocache", "deny_partial_response", "partial_response"})
      seen[key] = req.get_param_value(key);
    res.set_content(R"({"status":"success","data":{"resultType":"matrix","result":[]}})", "application/json");
  });
  PrometheusOptions o;
  o.url = server.url();
  ASSERT_TRUE(QueryRange(o, {.query = "up", .start_s = kT0, .end_s = kT0 + 60, .step_s = 60}));
  EXPECT_EQ(seen, (std::map<std::string, std::string>{
                      {"nocache", "1"}, {"deny_partial_response", "1"}, {"partial_response", "false"}}));
}

INSTANTIATE_TEST_SUITE_P(Servers, QueryRangeOnEachServer, ::testing::ValuesIn(testing::MetricsServerNames()),
                         [](const ::testing::TestParamInfo<std::string>& server) {
                           std::string name = server.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace gpufit
