#include "gpufit/ingest/prometheus/client.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <thread>

#include "gpufit/core/test_support.h"
#include "prometheus_server.h"
#include "trickle_server.h"

namespace gpufit {
namespace {

using ::testing::HasSubstr;

constexpr double kT0 = 1767225600;  // 2026-01-01T00:00:00Z

PrometheusOptions Fast(const std::string& url) {
  PrometheusOptions o;
  o.url = url;
  o.timeout_s = 5;
  o.retries = 2;
  o.backoff_s = 0.01;
  return o;
}

RangeQuery Query(double span_s = 60, double step_s = 60) {
  return {.query = "up", .start_s = kT0, .end_s = kT0 + span_s, .step_s = step_s};
}

const char* kOneSeries =
    R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"up","job":"x"},)"
    R"("values":[[1767225600,"1"],[1767225660,"NaN"],[1767225720,"+Inf"],[1767225780,"2.5e+03"]]}]}})";

TEST(ParseQueryRangeAnswer, ReadsMatrixValuesAsPrometheusPrintsThem) {
  const Result<std::vector<PromSeries>> r = ParseQueryRangeAnswer(kOneSeries, "test");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  const PromSeries& s = (*r)[0];
  EXPECT_EQ(s.labels.at("job"), "x");
  ASSERT_EQ(s.time_s.size(), 4u);
  EXPECT_EQ(s.time_s[1], 1767225660.0);
  EXPECT_EQ(s.value[0], 1.0);
  EXPECT_TRUE(std::isnan(s.value[1]));
  EXPECT_TRUE(std::isinf(s.value[2]) && s.value[2] > 0);
  EXPECT_EQ(s.value[3], 2500.0);
}

TEST(ParseQueryRangeAnswer, RejectsErrorsAndOtherShapes) {
  const auto error =
      ParseQueryRangeAnswer(R"({"status":"error","errorType":"bad_data","error":"parse error at char 3"})", "srv");
  ASSERT_FALSE(error);
  EXPECT_THAT(error.error().message, HasSubstr("bad_data: parse error at char 3"));
  const auto vector = ParseQueryRangeAnswer(R"({"status":"success","data":{"resultType":"vector","result":[]}})", "s");
  ASSERT_FALSE(vector);
  EXPECT_THAT(vector.error().message, HasSubstr("s: data.resultType: 'vector', expected 'matrix'"));
  const auto bad_value = ParseQueryRangeAnswer(
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"x1"]]}]}})", "s");
  ASSERT_FALSE(bad_value);
  EXPECT_THAT(bad_value.error().message, HasSubstr("\"x1\" is not a number"));
  const auto shape = ParseQueryRangeAnswer(R"({"status":"success","data":{"resultType":"matrix"}})", "s");
  ASSERT_FALSE(shape);
  EXPECT_EQ(shape.error().message, "prometheus s: data.result: missing");
}

// Issue 18: type errors name the JSON path of the field, not the JSON library's text alone.
TEST(ParseQueryRangeAnswer, TypeErrorsNameTheField) {
  const auto wrong = [](const std::string& values) {
    const Result<std::vector<PromSeries>> r = ParseQueryRangeAnswer(
        R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":"a"},"values":[[1,"1"],)" +
            values + "]}]}}",
        "s");
    return r ? std::string("accepted") : r.error().message;
  };
  EXPECT_EQ(wrong(R"([2,3])"), "prometheus s: data.result[0].values[1][1]: expected a string, got number");
  EXPECT_EQ(wrong(R"(["2","3"])"), "prometheus s: data.result[0].values[1][0]: expected a number (Unix s), got string");
  EXPECT_EQ(wrong(R"([2])"),
            "prometheus s: data.result[0].values[1]: expected a [time, \"value\"] pair, got array of 1 items");
  const auto label = ParseQueryRangeAnswer(
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":7},"values":[]}]}})", "s");
  EXPECT_EQ(label.error().message, "prometheus s: data.result[0].metric[\"pod\"]: expected a string, got number");
  const auto status = ParseQueryRangeAnswer(R"({"status":1})", "s");
  EXPECT_EQ(status.error().message, "prometheus s: status: expected a string, got number");
}

// Issue 18: a misbehaving server never crashes the client. A first sample nested 300,000
// deep was dumped whole, recursively, into the message (SIGSEGV); a huge number threw.
TEST(ParseQueryRangeAnswer, HostileAnswersAreErrors) {
  const std::string deep = std::string(300'000, '[') + std::string(300'000, ']');
  const auto nested = ParseQueryRangeAnswer(
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[)" + deep + "]}]}}", "s");
  ASSERT_FALSE(nested);
  EXPECT_THAT(nested.error().message, HasSubstr("prometheus s: JSON nested deeper than 100 levels at byte"));
  const auto huge =
      ParseQueryRangeAnswer(R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[)" +
                                std::string(20'000, '7') + R"(,"1"]]}]}})",
                            "s");
  ASSERT_FALSE(huge);
  EXPECT_THAT(huge.error().message, HasSubstr("number overflow"));
  EXPECT_LT(huge.error().message.size(), 400u);
  const auto long_value = ParseQueryRangeAnswer(
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,")" +
          std::string(1'000'000, 'x') + R"(\r\u2028"]]}]}})",
      "s");
  ASSERT_FALSE(long_value);
  EXPECT_LT(long_value.error().message.size(), 300u);
}

TEST(ParsePrometheusDuration, UnitsCombinationsAndPlainSeconds) {
  EXPECT_EQ(*ParsePrometheusDuration("30s"), 30);
  EXPECT_EQ(*ParsePrometheusDuration("5m"), 300);
  EXPECT_EQ(*ParsePrometheusDuration("1h30m"), 5400);
  EXPECT_EQ(*ParsePrometheusDuration("7d"), 604800);
  EXPECT_EQ(*ParsePrometheusDuration("1w"), 604800);
  EXPECT_EQ(*ParsePrometheusDuration("1y"), 31536000);
  EXPECT_EQ(*ParsePrometheusDuration("250ms"), 0.25);
  EXPECT_EQ(*ParsePrometheusDuration("1m30s500ms"), 90.5);
  EXPECT_EQ(*ParsePrometheusDuration("60"), 60);
  EXPECT_EQ(*ParsePrometheusDuration("0.5"), 0.5);
  for (const char* bad : {"", "h", "5x", "-5m", "5m-", "nan", "1.5h", "-3"}) {
    const auto r = ParsePrometheusDuration(bad);
    EXPECT_FALSE(r) << bad;
    if (!r) {
      EXPECT_THAT(r.error().message, HasSubstr("is not a duration"));
    }
  }
}

TEST(QueryRange, ServerNotRunningIsUnavailableAfterRetries) {
  const int port = testing::FreeLoopbackPort();
  const auto r = QueryRange(Fast(fmt::format("http://127.0.0.1:{}", port)), Query());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kUnavailable);
  EXPECT_THAT(r.error().message, HasSubstr("cannot connect"));
  EXPECT_THAT(r.error().message, HasSubstr("after 3 attempts"));
  EXPECT_THAT(r.error().message, HasSubstr(fmt::format("127.0.0.1:{}/api/v1/query_range", port)));
  EXPECT_THAT(r.error().message, HasSubstr("query 'up'"));
}

TEST(QueryRange, Http500IsRetriedThenReported) {
  testing::FakeHttpServer server([](const httplib::Request&, httplib::Response& res) {
    res.status = 500;
    res.set_content("internal meltdown", "text/plain");
  });
  const auto r = QueryRange(Fast(server.url()), Query());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kUnavailable);
  EXPECT_THAT(r.error().message, HasSubstr("HTTP 500 Internal Server Error: internal meltdown"));
  EXPECT_EQ(server.requests(), 3);  // 1 + 2 retries
}

TEST(QueryRange, TransientFailureRecoversOnRetry) {
  std::atomic<int> calls{0};
  testing::FakeHttpServer server([&calls](const httplib::Request&, httplib::Response& res) {
    if (calls++ == 0) {
      res.status = 503;
      res.set_content(R"({"status":"error","errorType":"timeout","error":"query timed out"})", "application/json");
      return;
    }
    res.set_content(kOneSeries, "application/json");
  });
  const auto r = QueryRange(Fast(server.url()), Query());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->size(), 1u);
  EXPECT_EQ(server.requests(), 2);
}

TEST(QueryRange, SlowServerTimesOut) {
  testing::FakeHttpServer server([](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    res.set_content(kOneSeries, "application/json");
  });
  PrometheusOptions o = Fast(server.url());
  o.timeout_s = 0.3;
  o.retries = 0;
  const auto started = std::chrono::steady_clock::now();
  const auto r = QueryRange(o, Query());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kUnavailable);
  EXPECT_THAT(r.error().message, HasSubstr("within 0.3 s"));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(1400));
}

TEST(QueryRange, TricklingServerHitsTheWholeAnswerTimeout) {
  // One byte every 100 ms: each read is quick, the answer never completes in time.
  testing::FakeHttpServer server([](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/json", [](std::size_t offset, httplib::DataSink& sink) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      sink.write(" ", 1);
      if (offset > 30) sink.done();
      return true;
    });
  });
  PrometheusOptions o = Fast(server.url());
  o.timeout_s = 1;
  o.retries = 0;
  const auto started = std::chrono::steady_clock::now();
  const auto r = QueryRange(o, Query());
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("no complete answer within 1 s"));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(2500));
}

// Issue 40: cpp-httplib's read timeout is per read, so headers trickled a byte at a time
// never tripped it; the deadline covers connect, headers and body.
TEST(QueryRange, HeaderTricklingServerHitsTheDeadline) {
  testing::HeaderTrickleServer server(std::chrono::milliseconds(100));
  PrometheusOptions o = Fast(server.url());
  o.timeout_s = 0.5;
  o.retries = 0;
  const auto started = std::chrono::steady_clock::now();
  const auto r = QueryRange(o, Query());
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kUnavailable);
  EXPECT_THAT(r.error().message, HasSubstr("query 'up', 1767225600.000 to 1767225660.000 step 60 s): no complete "
                                           "answer within 0.5 s"));
  EXPECT_LT(took, 1.5);
}

TEST(QueryRange, Http429SaysTheStatusTheErrorAndRetryAfter) {
  testing::FakeHttpServer server([](const httplib::Request&, httplib::Response& res) {
    res.status = 429;
    res.set_header("Retry-After", "120");
    res.set_content(R"({"status":"error","errorType":"unavailable","error":"too many queries in flight"})",
                    "application/json");
  });
  PrometheusOptions o = Fast(server.url());
  o.timeout_s = 2;
  o.retries = 1;
  const auto r = QueryRange(o, Query());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kUnavailable);
  EXPECT_EQ(r.error().message,
            fmt::format("prometheus {}/api/v1/query_range (query 'up', 1767225600.000 to 1767225660.000 step 60 s): "
                        "HTTP 429 Too Many Requests: unavailable: too many queries in flight, Retry-After 120 s (past "
                        "the request's deadline of 4 s: --prometheus-timeout x (retries + 1))",
                        server.url()));
  EXPECT_EQ(server.requests(), 1) << "a wait past the deadline is not waited";
}

TEST(QueryRange, Http429WithoutAnEnvelopeQuotesTheBody) {
  testing::FakeHttpServer server([](const httplib::Request&, httplib::Response& res) {
    res.status = 429;
    res.set_content("slow down\n", "text/plain");
  });
  PrometheusOptions o = Fast(server.url());
  o.retries = 0;
  const auto r = QueryRange(o, Query());
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, ::testing::EndsWith("): HTTP 429 Too Many Requests: slow down"));
}

TEST(QueryRange, RetryAfterIsHonouredWithinTheDeadlineEvenWithoutRetries) {
  std::atomic<int> calls{0};
  testing::FakeHttpServer server([&calls](const httplib::Request&, httplib::Response& res) {
    if (calls++ == 0) {
      res.status = 503;
      res.set_header("Retry-After", "1");
      res.set_content("restarting", "text/plain");
      return;
    }
    res.set_content(kOneSeries, "application/json");
  });
  PrometheusOptions o = Fast(server.url());
  o.timeout_s = 3;
  o.retries = 0;
  const auto started = std::chrono::steady_clock::now();
  const auto r = QueryRange(o, Query());
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(server.requests(), 2);
  EXPECT_GE(took, 1.0) << "the server's wait, not the 0.01 s back-off";
}

TEST(QueryRange, WarningsOfTheAnswersAreCollectedOncePerQuery) {
  testing::FakeHttpServer server([](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"success","data":{"resultType":"matrix","result":[]},)"
                    R"("warnings":["partial result: store gateway down"]})",
                    "application/json");
  });
  PrometheusOptions o = Fast(server.url());
  o.max_points = 1;  // two chunks, two answers with the same warning
  PrometheusQueryStats stats;
  const auto r = QueryRange(o, Query(60, 60), stats);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(server.requests(), 2);
  ASSERT_EQ(stats.notices.size(), 1u);
  EXPECT_EQ(stats.notices[0].query, "up");
  EXPECT_EQ(stats.notices[0].kind, "warning");
  EXPECT_EQ(stats.notices[0].text, "partial result: store gateway down");
}

TEST(ParseRetryAfter, SecondsOrAnHttpDate) {
  const auto now = std::chrono::system_clock::from_time_t(784111777);  // Sun, 06 Nov 1994 08:49:37 GMT
  EXPECT_EQ(ParseRetryAfter("120", now), 120.0);
  EXPECT_EQ(ParseRetryAfter(" 0 ", now), 0.0);
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:50:07 GMT", now), 30.0);
  EXPECT_EQ(ParseRetryAfter("Sun, 06 Nov 1994 08:00:00 GMT", now), 0.0) << "a date in the past: now";
  EXPECT_FALSE(ParseRetryAfter("soon", now));
  EXPECT_FALSE(ParseRetryAfter("-5", now));
  EXPECT_FALSE(ParseRetryAfter("", now));
}

TEST(QueryRange, MalformedJsonFailsAtOnce) {
  testing::FakeHttpServer server([](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"success","data":{"resultType":"matrix","result":[{)", "application/json");
  });
  const auto r = QueryRange(Fast(server.url()), Query());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_THAT(r.error().message, HasSubstr("malformed JSON at byte"));
  EXPECT_EQ(server.requests(), 1);
}

TEST(QueryRange, SendsBearerTokenAndFormParameters) {
  std::string seen_query, seen_step;
  testing::FakeHttpServer server([&](const httplib::Request& req, httplib::Response& res) {
    if (req.get_header_value("Authorization") != "Bearer s3cret") {
      res.status = 401;
      res.set_content("unauthorized", "text/plain");
      return;
    }
    seen_query = req.get_param_value("query");
    seen_step = req.get_param_value("step");
    res.set_content(kOneSeries, "application/json");
  });
  PrometheusOptions o = Fast(server.url());
  const auto refused = QueryRange(o, Query());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, Code::kInvalidArgument);
  EXPECT_THAT(refused.error().message, HasSubstr("HTTP 401"));
  o.bearer_token = "s3cret";
  RangeQuery q = Query();
  q.query = R"(max_over_time(DCGM_FI_DEV_FB_USED{pod!=""}[59999ms]))";
  const auto r = QueryRange(o, q);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(seen_query, q.query);
  EXPECT_EQ(seen_step, "60.000");
}

TEST(QueryRange, RejectsBadUrlsAndRanges) {
  EXPECT_THAT(QueryRange(Fast("ftp://x"), Query()).error().message, HasSubstr("http:// or https://"));
  EXPECT_THAT(QueryRange(Fast("http://127.0.0.1:9090/?x=1"), Query()).error().message, HasSubstr("no query"));
  const auto secret = QueryRange(Fast("http://user:pw@127.0.0.1:9090"), Query());
  EXPECT_THAT(secret.error().message, HasSubstr("--bearer-token-file"));
  EXPECT_THAT(secret.error().message, ::testing::Not(HasSubstr("pw")));
  PrometheusOptions ca = Fast("http://127.0.0.1:9090");
  ca.ca_file = "/etc/hostname";
  EXPECT_THAT(QueryRange(ca, Query()).error().message, HasSubstr("is not https"));
  ca.url = "https://127.0.0.1:9090";
  ca.ca_file = "/nonexistent.pem";
  EXPECT_THAT(QueryRange(ca, Query()).error().message, HasSubstr("--ca-file /nonexistent.pem: cannot read it"));
  EXPECT_THAT(QueryRange(Fast("http://127.0.0.1:1"), Query(60, 0)).error().message, HasSubstr("--step"));
  RangeQuery backwards = Query();
  backwards.end_s = backwards.start_s - 1;
  EXPECT_THAT(QueryRange(Fast("http://127.0.0.1:1"), backwards).error().message, HasSubstr("--since"));
}

// A real Prometheus: one gauge sampled every second for 12,000 s (12,001 samples).
std::string OneSecondGauge(int seconds) {
  std::string om = "# TYPE test_gauge gauge\n";
  for (int i = 0; i <= seconds; ++i)
    om += fmt::format("test_gauge{{cluster=\"a\"}} {} {}\n", (i * 7) % 1000, static_cast<long long>(kT0) + i);
  return om + "# EOF\n";
}

TEST(QueryRangeAgainstPrometheus, ChunksQueriesOverThePointLimit) {
  testing::TempDir dir;
  auto server = testing::PrometheusServer::Start(OneSecondGauge(12000), dir.path());
  ASSERT_TRUE(server) << server.error().message;
  RangeQuery q{.query = "test_gauge", .start_s = kT0, .end_s = kT0 + 12000, .step_s = 1};
  PrometheusOptions o = Fast((*server)->url());

  // Unchunked, the real server refuses 12,001 points per series.
  o.max_points = 20000;
  const auto refused = QueryRange(o, q);
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message, HasSubstr("exceeded maximum resolution"));

  o.max_points = kPrometheusMaxPoints;
  const auto r = QueryRange(o, q);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  const PromSeries& s = (*r)[0];
  EXPECT_EQ(s.labels.at("cluster"), "a");
  ASSERT_EQ(s.time_s.size(), 12001u);  // every second once: no gap, no overlap between chunks
  for (int i = 0; i <= 12000; ++i) {
    ASSERT_EQ(s.time_s[static_cast<std::size_t>(i)], kT0 + i);
    ASSERT_EQ(s.value[static_cast<std::size_t>(i)], (i * 7) % 1000) << "at second " << i;
  }
}

TEST(QueryRangeAgainstPrometheus, HttpsWithTheServersCertificate) {
  testing::TempDir dir;
  const std::string cert = dir.path() + "/cert.pem", key = dir.path() + "/key.pem";
  const std::string openssl = fmt::format(
      "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 "
      "-keyout {} -out {} > {}/openssl.log 2>&1",
      key, cert, dir.path());
  ASSERT_EQ(std::system(openssl.c_str()), 0) << "openssl (scripts/bootstrap installs it) failed";
  testing::PrometheusServer::Options tls{
      .web_config_yaml = fmt::format("tls_server_config:\n  cert_file: {}\n  key_file: {}\n", cert, key),
      .https = true};
  auto server = testing::PrometheusServer::Start(OneSecondGauge(120), dir.path(), tls);
  ASSERT_TRUE(server) << server.error().message;
  RangeQuery q{.query = "test_gauge", .start_s = kT0, .end_s = kT0 + 120, .step_s = 60};
  PrometheusOptions o = Fast((*server)->url());
  o.retries = 0;

  const auto unverified = QueryRange(o, q);  // self-signed: not trusted by default
  ASSERT_FALSE(unverified);
  EXPECT_THAT(unverified.error().message, HasSubstr("TLS failed"));

  o.ca_file = cert;
  const auto verified = QueryRange(o, q);
  ASSERT_TRUE(verified) << verified.error().message;
  ASSERT_EQ(verified->size(), 1u);
  EXPECT_EQ((*verified)[0].value, (std::vector<double>{0, 420, 840}));

  // The same CA as PEM text (a kubeconfig's certificate-authority-data, for the API server's
  // service proxy), and PEM that is not a certificate.
  o.ca_file.clear();
  std::ifstream in(cert);
  o.ca_pem.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  const auto from_pem = QueryRange(o, q);
  ASSERT_TRUE(from_pem) << from_pem.error().message;
  EXPECT_EQ((*from_pem)[0].value, (std::vector<double>{0, 420, 840}));
  PrometheusOptions bad = o;
  bad.ca_pem = "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n";
  EXPECT_THAT(QueryRange(bad, q).error().message, HasSubstr("the CA is not a PEM certificate"));
  bad = o;
  bad.client_cert_pem = o.ca_pem;  // a certificate with no key
  EXPECT_THAT(QueryRange(bad, q).error().message, HasSubstr("needs its key"));
  bad.url = "http://127.0.0.1:1";
  EXPECT_THAT(QueryRange(bad, q).error().message, HasSubstr("needs an https:// URL"));

  o.ca_pem.clear();
  o.insecure_skip_verify = true;
  EXPECT_TRUE(QueryRange(o, q));
}

}  // namespace
}  // namespace gpufit
