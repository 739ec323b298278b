#include "gpufit/controller/metrics_endpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>

#include "gpufit/controller/liveness.h"

namespace gpufit::controller {
namespace {

using ::testing::HasSubstr;

TEST(CheckMetricsAuthentication, WhatIsRefusedAndWhy) {
  struct Case {
    const char* name;
    MetricsEndpointOptions options;
    const char* says;  // "" = accepted
  };
  const auto opts = [](std::string host, std::string cert, std::string key, std::string token, bool insecure) {
    MetricsEndpointOptions o;
    o.host = std::move(host);
    o.tls_cert_file = std::move(cert);
    o.tls_key_file = std::move(key);
    o.auth_token_file = std::move(token);
    o.insecure_http = insecure;
    return o;
  };
  const Case cases[] = {
      {"nothing", opts("127.0.0.1", "", "", "", false), "/metrics needs authentication"},
      {"token without TLS", opts("127.0.0.1", "", "", "t", false), "needs --metrics-tls-cert-file"},
      {"TLS without token", opts("0.0.0.0", "c", "k", "", false), "/metrics needs authentication"},
      {"TLS and token", opts("0.0.0.0", "c", "k", "t", false), ""},
      {"plain on loopback", opts("127.0.0.1", "", "", "", true), ""},
      {"plain on ::1", opts("::1", "", "", "", true), ""},
      {"plain off loopback", opts("0.0.0.0", "", "", "", true), "only on a loopback address"},
      {"plain with a token", opts("127.0.0.1", "", "", "t", true), "not with"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Result<void> ok = CheckMetricsAuthentication(c.options);
    if (*c.says == '\0') {
      EXPECT_TRUE(ok.has_value()) << ok.error().message;
      continue;
    }
    ASSERT_FALSE(ok.has_value());
    EXPECT_EQ(ok.error().code, Code::kInvalidArgument);
    EXPECT_THAT(ok.error().message, HasSubstr(c.says));
  }
}

TEST(MetricsEndpoint, ServesTheTextOnLoopbackAndRefusesOtherPathsAndMethods) {
  MetricsEndpointOptions o;
  o.port = 0;
  o.insecure_http = true;
  int calls = 0;
  MetricsEndpoint endpoint(
      o, [&calls] { return "gpufit_runs_total{outcome=\"success\"} " + std::to_string(++calls) + "\n"; });
  ASSERT_TRUE(endpoint.Start().has_value());
  httplib::Client client("127.0.0.1", endpoint.port());
  const auto first = client.Get("/metrics");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->body, "gpufit_runs_total{outcome=\"success\"} 1\n");
  EXPECT_THAT(first->get_header_value("Content-Type"), HasSubstr("text/plain; version=0.0.4"));
  EXPECT_EQ(client.Get("/metrics")->body, "gpufit_runs_total{outcome=\"success\"} 2\n");  // built per request
  EXPECT_EQ(client.Get("/healthz")->body, "ok");
  EXPECT_EQ(client.Get("/other")->status, 404);
  EXPECT_EQ(client.Post("/metrics", "x", "text/plain")->status, 405);
  endpoint.Stop();
}

// Issue 51: /healthz fails while the loop is stuck, so that a liveness probe restarts it.
TEST(MetricsEndpoint, HealthzFailsWhenTheLoopIsStuck) {
  MetricsEndpointOptions o;
  o.port = 0;
  o.insecure_http = true;
  std::atomic<double> now{1000};
  const LivenessBudget budget{.interval_s = 5, .apply_soak_s = 0, .webhook_timeout_s = 10};
  // By hand: 3 x 5 s + 10 s + 600 s = 625 s; with --apply --apply-soak 900, 2 x 900 + 300 more.
  EXPECT_DOUBLE_EQ(StaleAfterS(budget), 625);
  EXPECT_DOUBLE_EQ(StaleAfterS({.interval_s = 3600, .apply_soak_s = 900, .webhook_timeout_s = 10}),
                   3 * 3600 + 2100 + 10 + 600);
  MetricsEndpoint endpoint(o, [] { return std::string(); }, [&] { return Unhealthy(now, 1000, budget); });
  ASSERT_TRUE(endpoint.Start().has_value());
  httplib::Client client("127.0.0.1", endpoint.port());
  now = 1000 + 625;
  EXPECT_EQ(client.Get("/healthz")->status, 200);
  now = 1000 + 626;
  const auto stuck = client.Get("/healthz");
  ASSERT_TRUE(stuck);
  EXPECT_EQ(stuck->status, 503);
  EXPECT_THAT(stuck->body, HasSubstr("no run finished for 626 s (more than the 625 s allowed"));
  endpoint.Stop();
}

TEST(MetricsEndpoint, AnUnreadableTokenFileIsNamed) {
  MetricsEndpointOptions o;
  o.port = 0;
  o.tls_cert_file = "/nonexistent/cert.pem";
  o.tls_key_file = "/nonexistent/key.pem";
  o.auth_token_file = "/nonexistent/token";
  MetricsEndpoint endpoint(o, [] { return std::string(); });
  const Result<void> ok = endpoint.Start();
  ASSERT_FALSE(ok.has_value());
  EXPECT_EQ(ok.error().code, Code::kInvalidArgument);
  EXPECT_THAT(ok.error().message, HasSubstr("--metrics-auth-token-file"));
  EXPECT_THAT(ok.error().message, HasSubstr("/nonexistent/token"));
}

}  // namespace
}  // namespace gpufit::controller
