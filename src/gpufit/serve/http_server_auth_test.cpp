// Who may call the extender: client certificates, a bearer token, or plain HTTP only when
// asked for (serve/http_server.h, "Authentication").
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>

#include "gpufit/core/test_support.h"
#include "served_fixture.h"
#include "tls_fixture.h"

namespace gpufit::serve {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;
using testing::PodJson;
using testing::Served;

std::string AuthFilter() {
  return Json{{"Pod", PodJson("p", "1", "1Gi", 1)}, {"Nodes", nullptr}, {"NodeNames", {"n1"}}}.dump();
}
const std::string kAuthBind = R"({"PodName": "p", "PodNamespace": "ml", "Node": "n1"})";

class Tls : public ::testing::Test {
 protected:
  // A refused client may still be writing when serve closes: a write then raises SIGPIPE in this
  // process (OpenSSL writes without MSG_NOSIGNAL). gpufit's main ignores SIGPIPE; so does the test.
  static void SetUpTestSuite() { std::signal(SIGPIPE, SIG_IGN); }
  gpufit::testing::TempDir dir_;
  testing::TestTls tls_ = testing::MakeTestTls(dir_.path());
};

TEST_F(Tls, ClientCertificateRequiredOnVerbsAndMetricsNotOnProbes) {
  ASSERT_TRUE(tls_.ok);
  Served s(ServerOptions{.tls_cert_file = tls_.server_cert, .tls_key_file = tls_.server_key, .client_ca_file = tls_.ca});
  httplib::Client anonymous = s.Client();
  const auto filter = anonymous.Post("/filter", AuthFilter(), "application/json");
  ASSERT_TRUE(filter);
  EXPECT_EQ(filter->status, 403);
  EXPECT_EQ(Json::parse(filter->body)["Error"], "a client certificate signed by --client-ca-file is required");
  const auto bind = anonymous.Post("/bind", kAuthBind, "application/json");
  ASSERT_TRUE(bind);
  EXPECT_EQ(bind->status, 403);
  EXPECT_EQ(Json::parse(bind->body)["Error"], "a client certificate signed by --client-ca-file is required");
  const auto metrics = anonymous.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 403);
  const auto health = anonymous.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok\n");
  const auto ready = anonymous.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);

  httplib::Client scheduler = s.Client(tls_.client_cert, tls_.client_key);
  const auto ok = scheduler.Post("/filter", AuthFilter(), "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(Json::parse(ok->body)["NodeNames"], Json::array({"n1"}));
  const auto m = scheduler.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_THAT(m->body, HasSubstr("gpufit_extender_requests_total{verb=\"filter\",outcome=\"unauthenticated\"} 1\n"));
  EXPECT_THAT(m->body, HasSubstr("gpufit_extender_requests_total{verb=\"bind\",outcome=\"unauthenticated\"} 1\n"));
  EXPECT_THAT(m->body, HasSubstr("gpufit_extender_requests_total{verb=\"filter\",outcome=\"ok\"} 1\n"));

  // A certificate another CA signed fails the handshake: no answer at all.
  httplib::Client stranger = s.Client(tls_.stranger_cert, tls_.stranger_key);
  EXPECT_FALSE(stranger.Post("/filter", AuthFilter(), "application/json"));

  const std::vector<std::string> log = s.log();
  ASSERT_EQ(log.size(), 4u);  // filter, bind, metrics refused; filter answered
  const Json refused = Json::parse(log[0]);
  EXPECT_EQ(refused["status"], 403);
  EXPECT_EQ(refused["verb"], "filter");
  EXPECT_THAT(refused["peer"].get<std::string>(), ::testing::StartsWith("127.0.0.1:"));
  EXPECT_FALSE(refused.contains("client"));
  const Json answered = Json::parse(log[3]);
  EXPECT_EQ(answered["status"], 200);
  EXPECT_EQ(answered["client"], "kube-scheduler");
  EXPECT_THAT(answered["peer"].get<std::string>(), ::testing::StartsWith("127.0.0.1:"));
}

TEST_F(Tls, BearerTokenIsCheckedAndReadAgainWhenTheFileChanges) {
  ASSERT_TRUE(tls_.ok);
  const std::string token = dir_.Write("token", "first-token\n");
  Served s(ServerOptions{.tls_cert_file = tls_.server_cert, .tls_key_file = tls_.server_key, .auth_token_file = token});
  httplib::Client c = s.Client();
  const auto none = c.Post("/filter", AuthFilter(), "application/json");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(Json::parse(none->body)["Error"], "no bearer token (Authorization: Bearer <token>)");
  EXPECT_EQ(none->get_header_value("WWW-Authenticate"), "Bearer");
  c.set_bearer_token_auth("wrong-token");
  const auto wrong = c.Post("/filter", AuthFilter(), "application/json");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  EXPECT_EQ(Json::parse(wrong->body)["Error"], "the bearer token is not --auth-token-file's");
  c.set_bearer_token_auth("first-token");
  const auto right = c.Post("/filter", AuthFilter(), "application/json");
  ASSERT_TRUE(right);
  EXPECT_EQ(right->status, 200);
  // Rotated (written elsewhere and renamed over, as a Secret volume swaps it): the new token
  // only, at once.
  dir_.Write("token.new", "second-token");
  std::filesystem::rename(token + ".new", token);
  const auto old = c.Post("/filter", AuthFilter(), "application/json");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->status, 401);
  c.set_bearer_token_auth("second-token");
  const auto rotated = c.Post("/filter", AuthFilter(), "application/json");
  ASSERT_TRUE(rotated);
  EXPECT_EQ(rotated->status, 200);
  const auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_THAT(m->body, HasSubstr("gpufit_extender_requests_total{verb=\"filter\",outcome=\"unauthenticated\"} 3\n"));
}

// Issue 51: the token Prometheus holds to scrape /metrics (--metrics-token-file) is not one that
// filters or binds; the scheduler's own token still reads /metrics.
TEST_F(Tls, TheMetricsTokenReadsMetricsAndNothingElse) {
  ASSERT_TRUE(tls_.ok);
  const std::string token = dir_.Write("token", "scheduler-token");
  const std::string metrics = dir_.Write("metrics-token", "prometheus-token");
  Served s(ServerOptions{.tls_cert_file = tls_.server_cert,
                         .tls_key_file = tls_.server_key,
                         .auth_token_file = token,
                         .metrics_token_file = metrics});
  httplib::Client c = s.Client();
  c.set_bearer_token_auth("prometheus-token");
  const auto scrape = c.Get("/metrics");
  ASSERT_TRUE(scrape);
  EXPECT_EQ(scrape->status, 200);
  const auto filter = c.Post("/filter", AuthFilter(), "application/json");
  ASSERT_TRUE(filter);
  EXPECT_EQ(filter->status, 401);
  EXPECT_EQ(Json::parse(filter->body)["Error"], "the bearer token is not --auth-token-file's");
  c.set_bearer_token_auth("scheduler-token");
  EXPECT_EQ(c.Post("/filter", AuthFilter(), "application/json")->status, 200);
  EXPECT_EQ(c.Get("/metrics")->status, 200);
  c.set_bearer_token_auth("wrong");
  EXPECT_EQ(c.Get("/metrics")->status, 401);
  EXPECT_THAT(CheckAuthentication({.client_ca_file = "ca", .metrics_token_file = "m"}).error().message,
              HasSubstr("--metrics-token-file needs --tls-cert-file"));
}

TEST(Authentication, IsRequiredAndATokenOnlyOverTls) {
  const std::string none = CheckAuthentication({}).error().message;
  EXPECT_THAT(none, HasSubstr("serve needs authentication: --tls-cert-file and --tls-key-file with --client-ca-file"));
  EXPECT_THAT(none, HasSubstr("or --insecure-http for plain HTTP without authentication (not with --kube-api)"));
  EXPECT_EQ(CheckAuthentication({.auth_token_file = "/t"}).error().message,
            "--auth-token-file needs --tls-cert-file: a bearer token is accepted only over TLS");
  const BindFunction bind{.verify = {}, .bind = [](const BindingArgs&) -> Result<void> { return {}; }};
  EXPECT_EQ(CheckAuthentication({.bind = bind, .insecure_http = true}).error().message,
            "--insecure-http with --kube-api: anyone reaching the port could bind pods; serve HTTPS with "
            "--client-ca-file or --auth-token-file");
  EXPECT_EQ(CheckAuthentication({.tls_cert_file = "c", .tls_key_file = "k"}).error().code, Code::kInvalidArgument);
  EXPECT_TRUE(CheckAuthentication({.insecure_http = true}));
  EXPECT_TRUE(CheckAuthentication({.tls_cert_file = "c", .tls_key_file = "k", .client_ca_file = "ca"}));
  EXPECT_TRUE(CheckAuthentication({.tls_cert_file = "c", .tls_key_file = "k", .auth_token_file = "t"}));
  // Bind refuses the same before it binds anything.
  const Json nodes = testing::ListOf({testing::NodeJson("n1", 8, "64Gi", 2, "A100")}, "NodeList");
  auto e = Extender::FromSnapshot(*ParseKubeNodes(nodes, "nodes"), {}, {});
  ASSERT_TRUE(e);
  ExtenderServer server(std::move(*e), {.auth_token_file = "/t"});
  const Result<void> bound = server.Bind();
  ASSERT_FALSE(bound);
  EXPECT_EQ(bound.error().message, "--auth-token-file needs --tls-cert-file: a bearer token is accepted only over TLS");
}

}  // namespace
}  // namespace gpufit::serve
