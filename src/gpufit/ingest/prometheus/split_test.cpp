// Queries that scale: splitting under the answer cap, --namespace/--selector, the coarse step.
// Against a real Prometheus loaded with the DCGM fixture (tests/support/dcgm_fixture.h).
#include "gpufit/ingest/prometheus/split.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <thread>

#include "dcgm_fixture.h"
#include "gpufit/core/test_support.h"
#include "gpufit/ingest/prometheus/telemetry.h"
#include "prometheus_server.h"

namespace gpufit {
namespace {

using Labels = std::map<std::string, std::string>;

TEST(PlanQueryParts, PacksNamespacesThatFitAndBatchesThePodsOfOneThatDoesNot) {
  // 10 points a series: 400 estimated bytes; a cap of 1,200 bytes holds 3 series.
  std::vector<Labels> series = {{{"namespace", "a"}, {"pod", "a-0"}},
                                {{"namespace", "b"}, {"pod", "b-0"}},
                                {{"pod", "x"}},  // no namespace
                                {{"namespace", "big"}, {"pod", "p.0"}},
                                {{"namespace", "big"}, {"pod", "p.0"}},
                                {{"namespace", "big"}, {"pod", "p1"}},
                                {{"namespace", "big"}, {"pod", "p2"}},
                                {{"namespace", "big"}}};  // a series of "big" without a pod
  const std::vector<QueryPart> parts = PlanQueryParts(series, 10, 1200);
  // By hand: namespaces in name order "", a, b, big. "" (1), a (1), b (1) pack into one part
  // of 3 series; big (5 series) is cut by pod in name order "" (1), p.0 (2) | p1, p2.
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].namespaces, (std::vector<std::string>{"big"}));
  EXPECT_EQ(parts[0].pods, (std::vector<std::string>{"", "p.0"}));
  EXPECT_EQ(parts[0].Matchers()[1].ToPromQL(), R"(pod=~"|p\\.0")");
  EXPECT_EQ(parts[1].pods, (std::vector<std::string>{"p1", "p2"}));
  EXPECT_EQ(parts[2].namespaces, (std::vector<std::string>{"", "a", "b"}));
  EXPECT_TRUE(parts[2].pods.empty());
  EXPECT_EQ(parts[2].Matchers().front().ToPromQL(), R"(namespace=~"|a|b")");
  // Under the cap: one whole query.
  const std::vector<QueryPart> whole = PlanQueryParts(series, 10, 8 * 400);
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_TRUE(whole[0].whole);
  EXPECT_TRUE(whole[0].Matchers().empty());
}

TEST(ReadStep, WidensLongWindowsToAWholeMultipleOfTheStep) {
  constexpr double kDay = 86400;
  // 7 days at 60 s: 10,080 steps, under 11,000: kept.
  EXPECT_EQ(*ReadStep({.since_s = 0, .until_s = 7 * kDay, .step_s = 60}), 60);
  // 30 days at 60 s: 43,200 steps; 4 x 60 s gives 10,800 <= 11,000, 3 x gives 14,400.
  EXPECT_EQ(*ReadStep({.since_s = 0, .until_s = 30 * kDay, .step_s = 60}), 240);
  // Never widened when asked so; the step's own errors stay.
  EXPECT_EQ(*ReadStep({.since_s = 0, .until_s = 30 * kDay, .step_s = 60, .max_points = 0}), 60);
  EXPECT_FALSE(ReadStep({.since_s = 0, .until_s = 30 * kDay, .step_s = 0.5}));
}

// A server whose answers are longer than the estimate: the whole query passes the cap, each
// pod alone does not. The split reacts: whole (refused) -> namespace ml's pods a | b.
TEST(QueryRangeSplit, HalvesAPartWhoseAnswerPassesTheCap) {
  httplib::Server server;
  std::atomic<int> range_requests{0};
  server.Get("/api/v1/series", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"success","data":[{"namespace":"ml","pod":"a"},{"namespace":"ml","pod":"b"}]})",
                    "application/json");
  });
  server.Get("/api/v1/query_range", [&](const httplib::Request& req, httplib::Response& res) {
    ++range_requests;
    const std::string q = req.get_param_value("query");
    // A pod alone: 1 series; otherwise both, padded past the cap with a long label.
    const bool one = q.find(R"(pod="a")") != std::string::npos || q.find(R"(pod="b")") != std::string::npos;
    std::string body = R"({"status":"success","data":{"resultType":"matrix","result":[)";
    for (const char* pod : {"a", "b"}) {
      if (one && q.find(fmt::format(R"(pod="{}")", pod)) == std::string::npos) continue;
      body += fmt::format(R"({}{{"metric":{{"namespace":"ml","pod":"{}","pad":"{}"}},"values":[[60,"1"]]}})",
                          body.back() == '[' ? "" : ",", pod, std::string(one ? 10 : 600, 'x'));
    }
    res.set_content(body + "]}}", "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread thread([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  PrometheusOptions o;
  o.url = fmt::format("http://127.0.0.1:{}", port);
  o.max_answer_bytes = 1000;  // the estimate, 2 series x 1 point x 40 bytes, fits; the answer does not
  PrometheusQueryStats stats;
  const auto r = QueryRangeSplit(
      o,
      {.function = "max_over_time", .selector = "m", .window = "[59999ms]", .start_s = 60, .end_s = 60, .step_s = 60},
      stats);
  server.stop();
  thread.join();
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].labels.at("pod"), "a");
  EXPECT_EQ((*r)[1].labels.at("pod"), "b");
  // By hand: 3 range requests (whole, a, b), of which 2 answered, plus the look-up.
  EXPECT_EQ(range_requests, 3);
  EXPECT_EQ(stats.parts, 3u);
  EXPECT_EQ(stats.requests, 3u);
  EXPECT_EQ(stats.split_queries, 1u);
}

bool SameFloats(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

void ExpectSameTelemetry(const Telemetry& a, const Telemetry& b) {
  EXPECT_EQ(a.start_s, b.start_s);
  EXPECT_EQ(a.samples, b.samples);
  ASSERT_EQ(a.pods.size(), b.pods.size());
  for (std::size_t i = 0; i < a.pods.size(); ++i) {
    SCOPED_TRACE(b.pods[i].pod);
    EXPECT_EQ(a.pods[i].pod, b.pods[i].pod);
    EXPECT_EQ(a.pods[i].device, b.pods[i].device);
    EXPECT_EQ(a.pods[i].first, b.pods[i].first);
    EXPECT_EQ(a.pods[i].last, b.pods[i].last);
    EXPECT_TRUE(SameFloats(a.pods[i].fb_used_mib, b.pods[i].fb_used_mib));
    EXPECT_TRUE(SameFloats(a.pods[i].gpu_util_pct, b.pods[i].gpu_util_pct));
    EXPECT_TRUE(SameFloats(a.pods[i].sm_active_pct, b.pods[i].sm_active_pct));
  }
  ASSERT_EQ(a.containers.size(), b.containers.size());
  for (std::size_t i = 0; i < a.containers.size(); ++i) {
    EXPECT_EQ(a.containers[i].pod, b.containers[i].pod);
    EXPECT_TRUE(SameFloats(a.containers[i].cpu_cores, b.containers[i].cpu_cores));
    EXPECT_TRUE(SameFloats(a.containers[i].memory_working_set_mib, b.containers[i].memory_working_set_mib));
    EXPECT_EQ(a.containers[i].memory_limit, b.containers[i].memory_limit);
  }
  EXPECT_EQ(a.skipped, b.skipped);
  ASSERT_EQ(a.ended.size(), b.ended.size());
  for (std::size_t i = 0; i < a.ended.size(); ++i) EXPECT_EQ(a.ended[i].dropped_samples, b.ended[i].dropped_samples);
  ASSERT_EQ(a.reserved_gpu_memory.size(), b.reserved_gpu_memory.size());
}

// The fixture's raw samples (its long CSV: timestamp_s,pod,metric,value,device,GPU_I_ID),
// per pod and metric: time -> value.
using RawSamples = std::map<std::pair<std::string, std::string>, std::map<double, double>>;
RawSamples ReadRaw(const std::string& csv) {
  RawSamples out;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream row(line);
    std::string t, pod, metric, value;
    std::getline(row, t, ',');
    std::getline(row, pod, ',');
    std::getline(row, metric, ',');
    std::getline(row, value, ',');
    out[{pod, metric}][std::stod(t)] = std::stod(value);
  }
  return out;
}

TEST(ReadPrometheusTelemetry, SplitScopedAndCoarseReads) {
  const std::string gentd26 = testing::DataDir() + "/gentd26";
  if (!std::filesystem::exists(gentd26)) GTEST_SKIP() << "no " << gentd26;
  // 12 pods over 4 hours: 240 points a series at 60 s.
  const Result<testing::DcgmFixture> fixture = testing::MakeDcgmFixture(gentd26, 12, 4);
  ASSERT_TRUE(fixture) << fixture.error().message;
  ASSERT_EQ(fixture->pods, 12);
  testing::TempDir dir;
  auto server = testing::PrometheusServer::Start(fixture->openmetrics, dir.path());
  ASSERT_TRUE(server) << server.error().message;
  PrometheusOptions o;
  o.url = (*server)->url();
  const TelemetryRange range{.since_s = fixture->since_s - 60, .until_s = fixture->until_s, .step_s = 60};

  // Unsplit: 13 queries (7 DCGM and kube-state-metrics, 6 cAdvisor and kube-state-metrics),
  // each one series look-up and one range request: 26 requests.
  const Result<Telemetry> whole = ReadPrometheusTelemetry(o, range);
  ASSERT_TRUE(whole) << whole.error().message;
  ASSERT_TRUE(whole->queries);
  EXPECT_EQ(whole->queries->queries, 13u);
  EXPECT_EQ(whole->queries->requests, 26u);
  EXPECT_EQ(whole->queries->split_queries, 0u);
  EXPECT_EQ(whole->queries->step_s, 60);

  // A cap of 4 series' estimate (240 points x 40 bytes x 4 = 38,400 bytes). By hand for
  // DCGM_FI_DEV_FB_USED: 15 series, namespace "" (the 2 GPUs no pod holds) and genai (13:
  // sd-0 has two, its host label renamed half-way). "" fits: one part. genai's pods in name
  // order sd-0 (2) sd-1 sd-10 | sd-11 sd-2 sd-3 sd-4 | sd-5 sd-6 sd-7 sd-8 | sd-9: 4 batches.
  // 1 look-up + 5 parts = 6 requests; the union equals the unsplit answer.
  o.max_answer_bytes = 240 * kEstimatedBytesPerPoint * 4;
  const double end_s = fixture->until_s;
  const SplitQuery fb{.function = "max_over_time",
                      .selector = kDcgmFbUsed,
                      .window = "[59999ms]",
                      .start_s = fixture->since_s,
                      .end_s = end_s,
                      .step_s = 60};
  PrometheusQueryStats stats;
  const Result<std::vector<PromSeries>> split = QueryRangeSplit(o, fb, stats);
  ASSERT_TRUE(split) << split.error().message;
  EXPECT_EQ(stats.requests, 6u);
  EXPECT_EQ(stats.series_lookups, 1u);
  EXPECT_EQ(stats.parts, 5u);
  EXPECT_EQ(stats.split_queries, 1u);
  PrometheusOptions uncapped = o;
  uncapped.max_answer_bytes = 256ull << 20;
  const Result<std::vector<PromSeries>> unsplit = QueryRange(
      uncapped, {.query = "max_over_time(DCGM_FI_DEV_FB_USED[59999ms])", .start_s = fixture->since_s, .end_s = end_s});
  ASSERT_TRUE(unsplit) << unsplit.error().message;
  ASSERT_EQ(split->size(), 15u);
  ASSERT_EQ(unsplit->size(), 15u);
  for (std::size_t i = 0; i < split->size(); ++i) {
    EXPECT_EQ((*split)[i].labels, (*unsplit)[i].labels);
    EXPECT_EQ((*split)[i].time_s, (*unsplit)[i].time_s);
    EXPECT_EQ((*split)[i].value, (*unsplit)[i].value);
  }

  // The whole read under that cap: the same telemetry, in more requests.
  const Result<Telemetry> capped = ReadPrometheusTelemetry(o, range);
  ASSERT_TRUE(capped) << capped.error().message;
  ExpectSameTelemetry(*capped, *whole);
  EXPECT_GE(capped->queries->split_queries, 1u);
  EXPECT_GT(capped->queries->requests, 26u);
  o.max_answer_bytes = 256ull << 20;

  // Scope: genai's pods whose names start with sd-1 (sd-1, sd-10, sd-11): the GPUs outside
  // any pod (namespace "") are no longer read, so nothing is skipped or reserved.
  o.namespaces = {"genai"};
  o.selector = {{.label = "pod", .op = "=~", .value = "sd-1.*"}};
  const Result<Telemetry> scoped = ReadPrometheusTelemetry(o, range);
  ASSERT_TRUE(scoped) << scoped.error().message;
  std::vector<std::string> pods;
  for (const PodSeries& p : scoped->pods) pods.push_back(p.pod);
  EXPECT_EQ(pods, (std::vector<std::string>{"genai/sd-1", "genai/sd-10", "genai/sd-11"}));
  EXPECT_TRUE(scoped->skipped.empty());
  EXPECT_TRUE(scoped->reserved_gpu_memory.empty());
  EXPECT_EQ(scoped->queries->scope, R"(pod=~"sd-1.*",namespace="genai")");
  o.namespaces.clear();
  o.selector.clear();

  // The coarse step: at most 100 points a series over 240 steps of 60 s -> 3 x 60 = 180 s
  // (240 / 3 = 80 points). Each point's memory is the largest raw sample of its step and its
  // duty the mean, computed here from the fixture's own samples.
  TelemetryRange coarse_range = range;
  coarse_range.max_points = 100;
  const Result<Telemetry> coarse = ReadPrometheusTelemetry(o, coarse_range);
  ASSERT_TRUE(coarse) << coarse.error().message;
  EXPECT_EQ(coarse->step_s, 180);
  EXPECT_EQ(coarse->queries->step_s, 180);
  EXPECT_EQ(coarse->queries->requested_step_s, 60);
  const RawSamples raw = ReadRaw(fixture->long_csv);
  std::size_t compared = 0;
  for (const PodSeries& p : coarse->pods) {
    SCOPED_TRACE(p.pod);
    const int i = std::stoi(p.pod.substr(p.pod.find('-') + 1));
    const auto& memory = raw.at({p.pod, kDcgmFbUsed});
    const auto& duty = raw.at({p.pod, i % 5 == 4 ? kDcgmGrEngineActive : kDcgmGpuUtil});
    for (std::size_t k = p.first; k <= p.last; ++k) {
      const double t = coarse->start_s + static_cast<double>(k) * coarse->step_s;
      double peak = -1, sum = 0;
      int n = 0;
      for (auto it = memory.upper_bound(t - 180); it != memory.end() && it->first <= t; ++it)
        peak = std::max(peak, it->second);
      for (auto it = duty.upper_bound(t - 180); it != duty.end() && it->first <= t; ++it, ++n)
        sum += it->second * (i % 5 == 4 ? 100 : 1);
      if (n == 0) continue;  // a step without samples (gap-filled by ingest/align.h)
      ASSERT_EQ(p.fb_used_mib[k], static_cast<float>(peak)) << "step ending at " << t;
      // Pods whose steps also hold samples after their end (i % 6 == 1 repeat their last
      // values, i % 6 == 3 report an idle GPU) have those in the step's mean, not the maximum;
      // sd-0's series changes labels in one step, whose two means the reader joins by maximum.
      if (i % 6 != 1 && i % 6 != 3 && i != 0) {
        EXPECT_NEAR(p.gpu_util_pct[k], sum / n, 1e-3) << "step ending at " << t;
      }
      ++compared;
    }
  }
  EXPECT_GT(compared, 500u);
}

}  // namespace
}  // namespace gpufit
