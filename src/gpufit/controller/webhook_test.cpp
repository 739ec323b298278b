#include "gpufit/controller/webhook.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "gpufit/serve/tls_fixture.h"
#include "trickle_server.h"

namespace gpufit::controller {
namespace {

using ::testing::HasSubstr;

TEST(ParseWebhookUrl, HttpsWithPortAndPath) {
  const Result<WebhookUrl> u = ParseWebhookUrl("https://hooks.slack.com:8443/services/T0/B0/x?y=1");
  ASSERT_TRUE(u.has_value()) << u.error().message;
  EXPECT_EQ(u->scheme, "https");
  EXPECT_EQ(u->host, "hooks.slack.com");
  EXPECT_EQ(u->port, 8443);
  EXPECT_EQ(u->path, "/services/T0/B0/x?y=1");
  const Result<WebhookUrl> plain = ParseWebhookUrl("http://[::1]:9000");
  ASSERT_TRUE(plain.has_value()) << plain.error().message;
  EXPECT_EQ(plain->host, "::1");
  EXPECT_EQ(plain->port, 9000);
  EXPECT_EQ(plain->path, "/");
}

TEST(ParseWebhookUrl, BadUrlsNameTheFlag) {
  struct Case {
    const char* url;
    const char* says;
  };
  const Case cases[] = {{"hooks.slack.com/x", "not an http(s):// URL"},
                        {"ftp://h/x", "the scheme must be https"},
                        {"https://h:99999/x", "the port must be 1-65535, got 99999"},
                        {"https:///x", "no host"},
                        {"http://hooks.example.com/x", "plain http only to a loopback address"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.url);
    const Result<WebhookUrl> u = ParseWebhookUrl(c.url);
    ASSERT_FALSE(u.has_value());
    EXPECT_EQ(u.error().code, Code::kInvalidArgument);
    EXPECT_THAT(u.error().message, HasSubstr("--webhook"));
    EXPECT_THAT(u.error().message, HasSubstr(c.says));
  }
}

TEST(WebhookPayload, TextAndBlocksCarryThePlanAndDrift) {
  PlanFacts plan;
  plan.gpus_before = 10;
  plan.gpus_after = 4;
  plan.usd_per_month_saved = 1234.4;
  plan.workloads = {
      {.workload = "a", .pods = {}, .cap_mib = 1, .fitted_peak_mib = 1, .strategy = "colocation", .verdict = "held"},
      {.workload = "b", .pods = {}, .cap_mib = 1, .fitted_peak_mib = 1, .strategy = "colocation", .verdict = "held"}};
  DriftReport drift;
  drift.over_envelope = {{.pod = "a-0", .workload = "a", .peak_mib = 2048, .cap_mib = 1024}};
  drift.new_workloads = {"c"};
  const RunRecord runs{.success = true,
                       .finished_unix_s = 0,
                       .duration_s = 2.25,
                       .last_success_unix_s = 0,
                       .successes = 1,
                       .failures = 0,
                       .error = ""};
  const nlohmann::json p = nlohmann::json::parse(WebhookPayload(&plan, &drift, runs, "gentd26"));
  EXPECT_EQ(p["text"],
            "gpufit: 10 -> 4 GPUs, $1234/month saved; drift: 1 pods over their envelope, 1 new workloads, "
            "0 peaks drifted");
  ASSERT_EQ(p["blocks"].size(), 4u);
  EXPECT_EQ(p["blocks"][0]["type"], "header");
  EXPECT_THAT(p["blocks"][1]["text"]["text"].get<std::string>(), HasSubstr("*Workloads:* 2 (2 held)"));
  EXPECT_THAT(p["blocks"][2]["text"]["text"].get<std::string>(), HasSubstr("a-0 2048 > 1024 MiB"));
  EXPECT_THAT(p["blocks"][3]["elements"][0]["text"].get<std::string>(), HasSubstr("gentd26 · run took 2.2 s"));
}

TEST(WebhookPayload, AFailedRunSendsItsError) {
  const RunRecord runs{.success = false,
                       .finished_unix_s = 0,
                       .duration_s = 1,
                       .last_success_unix_s = 0,
                       .successes = 0,
                       .failures = 1,
                       .error = "--telemetry x: not found"};
  const nlohmann::json p = nlohmann::json::parse(WebhookPayload(nullptr, nullptr, runs, "x"));
  EXPECT_EQ(p["text"], "gpufit: the run failed: --telemetry x: not found");
}

TEST(PostWebhook, APostReachesALoopbackReceiver) {
  httplib::Server server;
  std::string got, type;
  server.Post("/hook", [&](const httplib::Request& req, httplib::Response& res) {
    got = req.body;
    type = req.get_header_value("Content-Type");
    res.set_content("ok", "text/plain");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  const Result<WebhookUrl> url = ParseWebhookUrl(fmt::format("http://127.0.0.1:{}/hook", port));
  ASSERT_TRUE(url.has_value());
  const Result<void> sent = PostWebhook(*url, R"({"text":"hi"})", 5);
  server.stop();
  t.join();
  ASSERT_TRUE(sent.has_value()) << sent.error().message;
  EXPECT_EQ(got, R"({"text":"hi"})");
  EXPECT_EQ(type, "application/json");
}

TEST(PostWebhook, ARefusalIsAnErrorWithTheStatus) {
  httplib::Server server;
  server.Post("/hook", [](const httplib::Request&, httplib::Response& res) {
    res.status = 404;
    res.set_content("no_service", "text/plain");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  const Result<void> sent = PostWebhook(*ParseWebhookUrl(fmt::format("http://127.0.0.1:{}/hook", port)), "{}", 5);
  server.stop();
  t.join();
  ASSERT_FALSE(sent.has_value());
  EXPECT_EQ(sent.error().code, Code::kUnavailable);
  EXPECT_THAT(sent.error().message, HasSubstr("HTTP 404: no_service"));
}

// https is checked against the system's CAs: a server whose certificate a test CA signed is
// refused, and nothing is posted to it.
TEST(PostWebhook, HttpsVerifiesTheServerWithTheSystemsCas) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("gpufit-webhook-tls-{}", ::getpid());
  std::filesystem::create_directories(dir);
  const serve::testing::TestTls tls = serve::testing::MakeTestTls(dir.string());
  ASSERT_TRUE(tls.ok);
  httplib::SSLServer server(tls.server_cert.c_str(), tls.server_key.c_str());
  int posts = 0;
  server.Post("/hook", [&posts](const httplib::Request&, httplib::Response& res) {
    ++posts;
    res.set_content("ok", "text/plain");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread t([&] { server.listen_after_bind(); });
  const Result<void> sent = PostWebhook(*ParseWebhookUrl(fmt::format("https://127.0.0.1:{}/hook", port)), "{}", 5);
  server.stop();
  t.join();
  ASSERT_FALSE(sent.has_value());
  EXPECT_EQ(sent.error().code, Code::kUnavailable);
  EXPECT_THAT(sent.error().message, HasSubstr("SSL"));
  EXPECT_EQ(posts, 0);
}

TEST(PostWebhook, NobodyListeningIsUnavailable) {
  // Port 1 on loopback: nothing listens there (and binding it needs root).
  const Result<void> sent = PostWebhook(*ParseWebhookUrl("http://127.0.0.1:1/hook"), "{}", 2);
  ASSERT_FALSE(sent.has_value());
  EXPECT_EQ(sent.error().code, Code::kUnavailable);
  EXPECT_THAT(sent.error().message, HasSubstr("webhook http://127.0.0.1:1/hook: request failed"));
}

// Issue 51: a receiver that answers a status line and then one header byte every 200 ms would
// hold a per-read timeout forever (and the controller's loop with it); the deadline covers the
// whole exchange, and a signal cuts it at once.
TEST(PostWebhook, ATrickledAnswerMeetsTheDeadlineAndASignalCutsIt) {
  gpufit::testing::HeaderTrickleServer trickle(std::chrono::milliseconds(200));
  const Result<WebhookUrl> url = ParseWebhookUrl(trickle.url() + "/hook");
  ASSERT_TRUE(url);
  auto start = std::chrono::steady_clock::now();
  Result<void> sent = PostWebhook(*url, "{}", 1.5);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(sent.has_value());
  EXPECT_EQ(sent.error().code, Code::kUnavailable);
  EXPECT_THAT(sent.error().message, HasSubstr("no answer within 1.5 s (--webhook-timeout)"));
  EXPECT_LT(took, 10.0);  // without the deadline it never returns: the server trickles forever
  std::atomic<bool> signalled{false};
  std::thread signal([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    signalled = true;
  });
  start = std::chrono::steady_clock::now();
  sent = PostWebhook(*url, "{}", 30, [&] { return signalled.load(); });
  took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  signal.join();
  ASSERT_FALSE(sent.has_value());
  EXPECT_THAT(sent.error().message, HasSubstr("cancelled (the controller is stopping)"));
  EXPECT_LT(took, 25.0);  // well before the 30 s deadline
}

}  // namespace
}  // namespace gpufit::controller
