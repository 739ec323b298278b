#include "gpufit/serve/http_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "gpufit/ingest/kube/kube_reader.h"
#include "served_fixture.h"

namespace gpufit::serve {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;
using testing::NodeJson;
using testing::PodJson;
using testing::RawClient;
using testing::Served;

std::string FilterBody(const std::string& pod_cpu) {
  return Json{{"Pod", PodJson("p", pod_cpu, "8Gi", 1)}, {"Nodes", nullptr}, {"NodeNames", {"n1", "n2", "n9"}}}.dump();
}

TEST(ExtenderServer, FilterAndPrioritizeOverHttp) {
  Served s;
  httplib::Client c = s.Client();
  const auto r = c.Post("/filter", FilterBody("2"), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  const Json answer = Json::parse(r->body);
  EXPECT_EQ(answer["NodeNames"], Json::array({"n1"}));
  EXPECT_EQ(answer["FailedNodes"], Json::parse(R"({"n2": "too few idle GPUs"})"));
  EXPECT_EQ(answer["FailedAndUnresolvableNodes"], Json::parse(R"({"n9": "not in gpufit's snapshot of the cluster"})"));
  EXPECT_EQ(answer["Error"], "");

  const auto p = c.Post("/prioritize", FilterBody("2"), "application/json");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->status, 200);
  EXPECT_EQ(Json::parse(p->body),
            Json::parse(R"([{"Host": "n1", "Score": 10}, {"Host": "n2", "Score": 0}, {"Host": "n9", "Score": 0}])"));

  const auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_THAT(m->body, HasSubstr("gpufit_extender_requests_total{verb=\"filter\",outcome=\"ok\"} 1\n"));
  EXPECT_THAT(m->body, HasSubstr("gpufit_extender_request_duration_seconds_count{verb=\"prioritize\"} 1\n"));
  EXPECT_THAT(m->body, HasSubstr("gpufit_extender_filter_nodes_total{answer=\"kept\"} 1\n"));
  EXPECT_THAT(m->body, HasSubstr("gpufit_extender_filter_nodes_total{answer=\"unresolvable\"} 1\n"));
  // One GPU of three is taken by the snapshot's pod.
  EXPECT_THAT(m->body, HasSubstr("gpufit_cluster_gpu_allocation_ratio 0.333"));
  EXPECT_THAT(m->body, HasSubstr("gpufit_cluster_gpu_memory_overcommit_ratio 0.333"));  // as declared
  // The target workload is the snapshot's one shape (4 cores, 1 whole GPU): n1's two idle GPUs
  // can take it, n2 has nothing free, so nothing is fragmented.
  EXPECT_THAT(m->body, HasSubstr("gpufit_cluster_gpu_fragmentation_milli 0\n"));
  EXPECT_THAT(m->body, HasSubstr("gpufit_cluster_gpu_fragmentation_ratio 0\n"));
  EXPECT_THAT(m->body, HasSubstr("gpufit_snapshot_pods{state=\"placed\"} 1\n"));
  const auto h = c.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  const auto ready = c.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  const std::vector<std::string> log = s.log();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(Json::parse(log[0])["verb"], "filter");
  EXPECT_EQ(Json::parse(log[0])["pod"], "ml/p");
}

TEST(ExtenderServer, MalformedJsonIsA400WithTheReason) {
  Served s;
  httplib::Client c = s.Client();
  const auto r = c.Post("/filter", R"({"Pod": {"metadata": )", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(Json::parse(r->body)["Error"].get<std::string>(), HasSubstr("filter request: malformed JSON at byte"));
  const auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_THAT(m->body, HasSubstr("gpufit_extender_requests_total{verb=\"filter\",outcome=\"bad_request\"} 1\n"));
  // The server still answers.
  const auto ok = c.Post("/filter", FilterBody("1"), "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

// A 100 MiB body against the 16 MiB bound: 413, and the server reads no more than it must.
TEST(ExtenderServer, HundredMebibyteBodyIsRefused) {
  Served s;
  RawClient raw(s.port());
  const std::size_t size = std::size_t{100} << 20;
  ASSERT_TRUE(raw.Send(fmt::format("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                   "Content-Length: {}\r\nConnection: close\r\n\r\n",
                                   size)));
  const std::string chunk(std::size_t{1} << 20, ' ');
  for (std::size_t sent = 0; sent < size && raw.Send(chunk); sent += chunk.size()) {
  }
  EXPECT_THAT(raw.Receive(), HasSubstr("HTTP/1.1 413"));
  httplib::Client c = s.Client();
  const auto ok = c.Post("/filter", FilterBody("1"), "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
}

// A client that sends its body a byte at a time, slower than the body timeout allows: 408.
TEST(ExtenderServer, SlowBodyTimesOut) {
  Served s(ServerOptions{.body_timeout_s = 1.0});
  RawClient raw(s.port());
  const std::string body = FilterBody("1");
  ASSERT_TRUE(raw.Send(fmt::format("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                   "Content-Length: {}\r\nConnection: close\r\n\r\n",
                                   body.size())));
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < 8 && raw.Send(body.substr(i, 1)); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::string answer = raw.Receive();
  EXPECT_THAT(answer, HasSubstr("HTTP/1.1 408"));
  EXPECT_THAT(answer, HasSubstr("request body not read within 1 s"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
}

// A second server on a port in use fails to bind instead of sharing the port.
TEST(ExtenderServer, APortInUseIsAnError) {
  Served s;
  const Json nodes = testing::ListOf({NodeJson("n1", 8, "64Gi", 2, "A100")}, "NodeList");
  auto e = Extender::FromSnapshot(*ParseKubeNodes(nodes, "nodes"), {}, {});
  ASSERT_TRUE(e);
  ExtenderServer second(std::move(*e), ServerOptions{.port = s.port(), .insecure_http = true});
  const Result<void> bound = second.Bind();
  ASSERT_FALSE(bound);
  EXPECT_THAT(bound.error().message, HasSubstr("cannot bind 127.0.0.1:" + std::to_string(s.port())));
  WaitingServer waiting;
  EXPECT_FALSE(waiting.Start("127.0.0.1", s.port(), "waiting"));
}

// A client that sends its request head a byte every 0.3 s (each read within the 1 s read
// timeout) is cut off once the head is not read within read + body timeout (2 s) of the
// connection's start; the server meanwhile answers others, and a keep-alive client whose
// requests come within the bounds keeps its connection.
TEST(ExtenderServer, SlowHeadIsCutOff) {
  Served s(ServerOptions{.body_timeout_s = 1.0, .read_timeout_s = 1.0});
  RawClient raw(s.port());
  const std::string head = "POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Slow: ";
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t sent = 0;
  for (; sent < 40 && raw.Send(std::string(1, head[sent % head.size()])); ++sent) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (sent == 3) {  // another client is answered meanwhile
      const auto ok = s.Client().Post("/filter", FilterBody("1"), "application/json");
      ASSERT_TRUE(ok);
      EXPECT_EQ(ok->status, 200);
    }
  }
  EXPECT_EQ(raw.Receive(), "");  // closed, no answer
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(sent, 40u);
  EXPECT_GT(took, 2.0);
  EXPECT_LT(took, 5.0);
  int closed = 0;
  for (const std::string& line : s.log()) closed += line.find("request head not read within 2 s") != std::string::npos;
  EXPECT_EQ(closed, 1);

  httplib::Client keep = s.Client();
  keep.set_keep_alive(true);
  for (int i = 0; i < 4; ++i) {
    const auto r = keep.Post("/filter", FilterBody("1"), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
  }
  const auto metrics = keep.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->body, HasSubstr("gpufit_extender_connections_closed_total{reason=\"head_timeout\"} 1\n"));
}

// A Content-Length that is no byte count is answered at once (not after the read timeout), with
// Connection: close (the body's end is unknown, so nothing after it can be read as a request).
TEST(ExtenderServer, BadContentLengthIsRefusedAtOnceAndCloses) {
  Served s;
  for (const std::string length : {"-5", "99999999999999999999999", "12abc"}) {
    RawClient raw(s.port());
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(raw.Send("POST /filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                         length + "\r\n\r\n{}"));
    const std::string answer = raw.ReceiveFirst();
    EXPECT_THAT(answer, HasSubstr("HTTP/1.1 400")) << length;
    EXPECT_THAT(answer, HasSubstr("Content-Length is not a byte count")) << length;
    EXPECT_THAT(answer, HasSubstr("Connection: close")) << length;
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0) << length;
  }
}

// The URL prefix is matched literally (cpp-httplib's routes are regular expressions).
TEST(ExtenderServer, UrlPrefixIsLiteral) {
  Served dot(ServerOptions{.url_prefix = "/sched.ler"});
  EXPECT_EQ(dot.Client().Post("/sched.ler/filter", FilterBody("1"), "application/json")->status, 200);
  EXPECT_EQ(dot.Client().Post("/schedXler/filter", FilterBody("1"), "application/json")->status, 404);
  Served bracket(ServerOptions{.url_prefix = "/a[(+"});  // no longer a bad regular expression
  EXPECT_EQ(bracket.Client().Post("/a[(+/prioritize", FilterBody("1"), "application/json")->status, 200);
}

// Concurrent clients each get every answer right.
TEST(ExtenderServer, ConcurrentClients) {
  Served s;
  std::atomic<int> good{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&] {
      httplib::Client c = s.Client();
      for (int i = 0; i < 25; ++i) {
        const auto r = c.Post("/filter", FilterBody("2"), "application/json");
        if (r && r->status == 200 && Json::parse(r->body)["NodeNames"] == Json::array({"n1"})) ++good;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(good.load(), 100);
}

// Stop with a drain period: /readyz answers 503 while the verbs still answer, then Serve ends.
TEST(ExtenderServer, StopDrainsThenCloses) {
  auto served = std::make_unique<Served>();
  httplib::Client c = served->Client();
  std::thread stopper([&] { served->Stop(0.5); });
  int not_ready = 0;
  for (int i = 0; i < 40 && not_ready == 0; ++i) {
    const auto r = c.Get("/readyz");
    if (r && r->status == 503) not_ready = 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(not_ready, 1);
  const auto during = c.Post("/filter", FilterBody("1"), "application/json");
  ASSERT_TRUE(during);
  EXPECT_EQ(during->status, 200);
  stopper.join();
  EXPECT_FALSE(c.Get("/healthz"));  // closed
}

// Stop before Serve: Serve returns at once instead of serving forever.
TEST(ExtenderServer, StopBeforeServe) {
  const Json nodes = testing::ListOf({NodeJson("n1", 8, "64Gi", 2, "A100")}, "NodeList");
  auto e = Extender::FromSnapshot(*ParseKubeNodes(nodes, "nodes"), {}, {});
  ASSERT_TRUE(e) << e.error().message;
  ExtenderServer server(std::move(*e), {.insecure_http = true});
  ASSERT_TRUE(server.Bind());
  server.Stop();
  EXPECT_TRUE(server.Serve());
}

TEST(ExtenderServer, UrlPrefixAndBindError) {
  Served s(ServerOptions{.url_prefix = "/scheduler"});
  httplib::Client c = s.Client();
  const auto r = c.Post("/scheduler/filter", FilterBody("1"), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  const auto missing = c.Post("/filter", FilterBody("1"), "application/json");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  // A port another server holds cannot be bound.
  const Json nodes = testing::ListOf({NodeJson("n1", 8, "64Gi", 2, "A100")}, "NodeList");
  auto e = Extender::FromSnapshot(*ParseKubeNodes(nodes, "nodes"), {}, {});
  ASSERT_TRUE(e) << e.error().message;
  ExtenderServer taken(std::move(*e), ServerOptions{.host = "127.0.0.1", .port = s.port(), .insecure_http = true});
  const Result<void> bound = taken.Bind();
  ASSERT_FALSE(bound);
  EXPECT_EQ(bound.error().code, Code::kUnavailable);
  EXPECT_THAT(bound.error().message, HasSubstr(fmt::format("cannot bind 127.0.0.1:{}", s.port())));
}

// Issue 51: plain HTTP without authentication only on a loopback address (an anonymous reader
// of every placement elsewhere), as the controller's --metrics-insecure-http.
TEST(ExtenderServer, InsecureHttpOnlyOnLoopback) {
  for (const char* host : {"127.0.0.1", "127.0.0.53", "::1", "localhost"})
    EXPECT_TRUE(CheckAuthentication(ServerOptions{.host = host, .insecure_http = true})) << host;
  for (const char* host : {"0.0.0.0", "::", "192.0.2.1", "10.0.0.1", "128.0.0.1"}) {
    const Result<void> r = CheckAuthentication(ServerOptions{.host = host, .insecure_http = true});
    ASSERT_FALSE(r) << host;
    EXPECT_EQ(r.error().code, Code::kInvalidArgument);
    EXPECT_THAT(r.error().message, HasSubstr(std::string("only on a loopback address (127.0.0.1, ::1, localhost), got --host ") + host));
  }
}

}  // namespace
}  // namespace gpufit::serve
