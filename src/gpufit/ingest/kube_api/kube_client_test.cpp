// KubeClient against servers that misbehave. A fake server (cpp-httplib on loopback) because no
// real API server can be made to answer like this: malformed lists, a continue token that never
// ends, an answer trickled byte by byte, an endless body. The real kube-apiserver's answers are
// tested in tests/e2e/kube_live_e2e_test.cpp.
#include "gpufit/ingest/kube_api/kube_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <memory>
#include <thread>

namespace gpufit::kube_api {
namespace {

using ::testing::HasSubstr;

class HostileServer {
 public:
  explicit HostileServer(httplib::Server::Handler handler) {
    server_.Get(".*", std::move(handler));
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~HostileServer() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

Result<KubeClient> Client(const std::string& url, KubeClientOptions options = {}) {
  KubeConnection c;
  c.server = url;
  c.source = "test";
  return KubeClient::Make(c, options);
}

TEST(KubeClient, MalformedItemsAreErrorsNotCrashes) {
  std::string answer;
  HostileServer server(
      [&](const httplib::Request&, httplib::Response& res) { res.set_content(answer, "application/json"); });
  const Result<KubeClient> c = Client(server.url());
  ASSERT_TRUE(c) << c.error().message;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"kind":"NodeList","items":[null]})", "items[0] is not an object (null)"},
      {R"({"kind":"NodeList","items":[1]})", "items[0] is not an object (number)"},
      {R"({"kind":"NodeList","items":[{"metadata":null}]})", "items[0] has no metadata.name"},
      {R"({"kind":"NodeList","items":[{"metadata":{"name":5}}]})", "items[0] has no metadata.name"},
      {R"({"kind":5,"items":[]})", "the answer's .kind '' is not a <Kind>List"},
      {R"({"kind":"NodeList","apiVersion":null,"items":[{"metadata":{"name":"a"}}],"metadata":{"continue":7}})", ""},
  };
  for (const auto& [body, message] : cases) {
    SCOPED_TRACE(body);
    answer = body;
    const Result<nlohmann::json> got = c->List("/api/v1/nodes");
    if (message.empty()) {  // odd types where a string belongs, but nothing missing: read
      ASSERT_TRUE(got) << got.error().message;
      EXPECT_EQ((*got)["items"][0]["apiVersion"], "v1");
      continue;
    }
    ASSERT_FALSE(got);
    EXPECT_THAT(got.error().message, HasSubstr(server.url() + "/api/v1/nodes?limit=500: " + message));
  }
}

TEST(KubeClient, AContinueTokenGivenTwiceEndsTheList) {
  int pages = 0;
  HostileServer server([&](const httplib::Request&, httplib::Response& res) {
    ++pages;
    res.set_content(R"({"kind":"PodList","metadata":{"continue":"same"},"items":[{"metadata":{"name":"p"}}]})",
                    "application/json");
  });
  const Result<KubeClient> c = Client(server.url());
  ASSERT_TRUE(c);
  const Result<nlohmann::json> got = c->List("/api/v1/pods");
  ASSERT_FALSE(got);
  EXPECT_THAT(got.error().message, HasSubstr("the server gave the same continue token twice"));
  EXPECT_EQ(pages, 2);  // the first page, then the one that gave it again
}

// A byte every 100 ms never trips a 5 s read timeout; the whole answer has 1 s.
TEST(KubeClient, AnAnswerTrickledByteByByteEndsAtTheTotalTimeout) {
  HostileServer server([](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/json", [](std::size_t, httplib::DataSink& sink) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return sink.write(" ", 1);
    });
  });
  const Result<KubeClient> c = Client(server.url(), {.read_timeout_s = 5, .total_timeout_s = 1});
  ASSERT_TRUE(c);
  const auto started = std::chrono::steady_clock::now();
  const Result<nlohmann::json> got = c->List("/api/v1/pods");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_FALSE(got);
  EXPECT_THAT(got.error().message, HasSubstr("no whole answer within 1 s"));
  EXPECT_LT(took, 4.0);
}

TEST(KubeClient, AnAnswerLargerThanTheLimitStopsThere) {
  HostileServer server([](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/json", [](std::size_t, httplib::DataSink& sink) {
      static const std::string block(64 << 10, ' ');
      return sink.write(block.data(), block.size());  // endless
    });
  });
  const Result<KubeClient> c = Client(server.url(), {.max_body_bytes = 1 << 20});
  ASSERT_TRUE(c);
  const Result<nlohmann::json> got = c->List("/api/v1/pods");
  ASSERT_FALSE(got);
  EXPECT_THAT(got.error().message, HasSubstr("/api/v1/pods?limit=500: the answer is larger than 1 MiB"));
}

}  // namespace
}  // namespace gpufit::kube_api
