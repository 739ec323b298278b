// What one client may cost the server: the head's bounds, the body's per route, idle and
// per-peer connections (serve/http_server.h, "Bounds").
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>

#include "served_fixture.h"

namespace gpufit::serve {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::NodeJson;
using testing::PodJson;
using testing::RawClient;
using testing::Served;

// The process's resident memory (VmRSS of /proc/self/status), MiB.
double RssMiB() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("VmRSS:")) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

std::string BoundsFilter() {
  return Json{{"Pod", PodJson("p", "1", "1Gi", 1)}, {"Nodes", nullptr}, {"NodeNames", {"n1"}}}.dump();
}

std::string PostHead(const std::string& path, std::size_t length, const std::string& extra = "") {
  return fmt::format("POST {} HTTP/1.1\r\nHost: x\r\n{}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                     path, extra, length);
}

// A request line streamed with no newline: the server answers 414 once it holds 64 KiB and
// closes; the client's next bytes are refused, and the process grows by far less than it sent.
TEST(ServerBounds, HeadWithNoNewlineIsCutAtTheLimit) {
  Served s;
  const double before = RssMiB();
  RawClient raw(s.port());
  const std::string chunk(std::size_t{64} << 10, 'A');
  std::size_t sent = 0;
  ASSERT_TRUE(raw.Send("GET /"));
  while (sent < (std::size_t{256} << 20) && raw.Send(chunk)) sent += chunk.size();
  const std::string answer = raw.Receive();
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 414"));
  EXPECT_THAT(answer, HasSubstr("request line above 8 KiB"));
  EXPECT_LT(sent, std::size_t{256} << 20);  // cut before the client was done
  EXPECT_LT(RssMiB() - before, 100.0);
  EXPECT_EQ(s.Client().Post("/filter", BoundsFilter(), "application/json")->status, 200);
}

TEST(ServerBounds, TooManyHeadersIs431) {
  Served s;
  std::string extra;
  for (int i = 0; i < 101; ++i) extra += fmt::format("X-H{}: v\r\n", i);
  RawClient raw(s.port());
  const std::string body = BoundsFilter();
  ASSERT_TRUE(raw.Send(PostHead("/filter", body.size(), extra) + body));
  const std::string answer = raw.Receive();
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 431"));
  EXPECT_THAT(answer, HasSubstr("more than 100 header lines"));
  EXPECT_THAT(answer, HasSubstr("Connection: close"));
  // 99 of them (101 lines in all with Host, Content-Type and Content-Length: 102 > 100; 97 + 3 = 100).
  std::string fewer;
  for (int i = 0; i < 97; ++i) fewer += fmt::format("X-H{}: v\r\n", i);
  RawClient ok(s.port());
  ASSERT_TRUE(ok.Send(PostHead("/filter", body.size(), fewer) + body));
  EXPECT_THAT(ok.ReceiveFirst(), StartsWith("HTTP/1.1 200"));
}

TEST(ServerBounds, LongLinesAre414And431) {
  Served s;
  RawClient target(s.port());
  ASSERT_TRUE(target.Send("GET /healthz?" + std::string(9000, 'q') + " HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::string a = target.Receive();
  EXPECT_THAT(a, StartsWith("HTTP/1.1 414"));
  EXPECT_THAT(a, HasSubstr("request target above 8 KiB"));
  RawClient header(s.port());
  ASSERT_TRUE(header.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Long: " + std::string(9000, 'v') + "\r\n\r\n"));
  const std::string b = header.Receive();
  EXPECT_THAT(b, StartsWith("HTTP/1.1 431"));
  EXPECT_THAT(b, HasSubstr("a header line above 8 KiB"));
  RawClient head(s.port());
  std::string many;
  for (int i = 0; i < 10; ++i) many += fmt::format("X-{}: {}\r\n", i, std::string(7000, 'v'));
  ASSERT_TRUE(head.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n" + many + "\r\n"));
  const std::string c = head.Receive();
  EXPECT_THAT(c, StartsWith("HTTP/1.1 431"));
  EXPECT_THAT(c, HasSubstr("request head above 64 KiB"));
}

// Each route has its body limit: filter max_body_bytes, bind 64 KiB, a GET none.
TEST(ServerBounds, BodyLimitPerRoute) {
  Served s(ServerOptions{.max_body_bytes = 100000});
  auto status = [&](const std::string& head, std::size_t length) {
    RawClient raw(s.port());
    raw.Send(head);
    raw.Send(std::string(length, ' '));
    return raw.ReceiveFirst().substr(0, 12);
  };
  EXPECT_EQ(status(PostHead("/filter", 100001), 100001), "HTTP/1.1 413");
  EXPECT_EQ(status(PostHead("/bind", 65537), 65537), "HTTP/1.1 413");
  EXPECT_EQ(status("GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n", 10), "HTTP/1.1 413");
  // Within them: the filter's JSON is read (malformed: 400), the bind's too.
  EXPECT_EQ(status(PostHead("/filter", 100000), 100000), "HTTP/1.1 400");
  EXPECT_EQ(status(PostHead("/bind", 65536), 65536), "HTTP/1.1 400");
  const auto m = s.Client().Get("/metrics");
  EXPECT_THAT(m->body, HasSubstr("gpufit_extender_requests_total{verb=\"filter\",outcome=\"too_large\"} 1\n"));
  EXPECT_THAT(m->body, HasSubstr("gpufit_extender_requests_total{verb=\"bind\",outcome=\"too_large\"} 1\n"));
}

// A connection that sends nothing is closed after the first-byte deadline; connections above
// the per-peer cap are closed at once, counted, and the log names the peer once.
TEST(ServerBounds, IdleAndExcessConnectionsAreClosed) {
  Served s(ServerOptions{.read_timeout_s = 1, .max_connections_per_peer = 3});
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 3; ++i) held.push_back(std::make_unique<RawClient>(s.port()));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto t0 = std::chrono::steady_clock::now();
  RawClient fourth(s.port());
  RawClient fifth(s.port());
  EXPECT_EQ(fourth.Receive(), "");  // closed with no answer
  EXPECT_EQ(fifth.Receive(), "");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5);
  // The held ones send nothing: closed after 1 s.
  for (auto& h : held) EXPECT_EQ(h->Receive(), "");
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GT(took, 0.8);
  EXPECT_LT(took, 3.0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the closed ones are gone from the count
  const auto m = s.Client().Get("/metrics");
  ASSERT_TRUE(m);
  const std::string metrics = m->body;
  EXPECT_THAT(metrics, HasSubstr("gpufit_extender_connections_closed_total{reason=\"too_many_from_peer\"} 2\n"))
      << metrics;
  EXPECT_THAT(metrics, HasSubstr("gpufit_extender_connections_closed_total{reason=\"idle\"} 3\n"));
  int logged = 0;
  for (const std::string& line : s.log()) logged += line.find("more than 3 connections open from 127.0.0.1") != std::string::npos;
  EXPECT_EQ(logged, 1);
}

// nodeCacheCapable (the default, as deploy/scheduler configures kube-scheduler): a request with
// Nodes is refused with 400 naming why; with node_cache_capable false it is answered, up to
// max_nodes_body_bytes.
TEST(ServerBounds, NodesOnlyWhenNotNodeCacheCapable) {
  const Json list = testing::ListOf({NodeJson("n1", 8, "64Gi", 2, "A100")}, "NodeList");
  const std::string body = Json{{"Pod", PodJson("p", "1", "1Gi", 1)}, {"Nodes", list}, {"NodeNames", nullptr}}.dump();
  Served cache;
  const auto refused = cache.Client().Post("/filter", body, "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 400);
  EXPECT_THAT(Json::parse(refused->body)["Error"].get<std::string>(),
              HasSubstr("filter request: .Nodes (a full NodeList) is set, but this extender is configured "
                        "nodeCacheCapable: true"));
  Served full(ServerOptions{.node_cache_capable = false});
  const auto answered = full.Client().Post("/filter", body, "application/json");
  ASSERT_TRUE(answered);
  EXPECT_EQ(answered->status, 200);
  EXPECT_EQ(Json::parse(answered->body)["Nodes"]["items"][0]["metadata"]["name"], "n1");
  Served small(ServerOptions{.node_cache_capable = false, .max_nodes_body_bytes = 100});
  const auto large = small.Client().Post("/filter", body, "application/json");
  ASSERT_TRUE(large);
  EXPECT_EQ(large->status, 413);
  EXPECT_EQ(Json::parse(large->body)["Error"], "filter request: a request with .Nodes above 100 bytes");
}


// The bodies being read at once hold at most body_budget_bytes: while one body of 800 bytes is
// being read, another that would pass 1,000 gets 503 at once; alone, it is read.
TEST(ServerBounds, BodyBudgetRefusesWhatWouldPassIt) {
  Served s(ServerOptions{.body_budget_bytes = 1000});
  RawClient first(s.port());
  ASSERT_TRUE(first.Send(PostHead("/filter", 800) + std::string(400, ' ')));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  RawClient second(s.port());
  ASSERT_TRUE(second.Send(PostHead("/filter", 800)));
  const std::string busy = second.Receive();
  EXPECT_THAT(busy, StartsWith("HTTP/1.1 503"));
  EXPECT_THAT(busy, HasSubstr("1000 bytes of request bodies are being read already; try again"));
  ASSERT_TRUE(first.Send(std::string(400, ' ')));
  EXPECT_THAT(first.ReceiveFirst(), StartsWith("HTTP/1.1 400"));  // read: blanks are no JSON
  RawClient third(s.port());
  ASSERT_TRUE(third.Send(PostHead("/filter", 800) + std::string(800, ' ')));
  EXPECT_THAT(third.ReceiveFirst(), StartsWith("HTTP/1.1 400"));
  const auto m = s.Client().Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_THAT(m->body, HasSubstr("gpufit_extender_requests_total{verb=\"filter\",outcome=\"busy\"} 1\n"));
}

// 100 clients connecting at once are all answered (the listen backlog is SOMAXCONN, not 5);
// above max_connections, one more is closed at once and counted.
TEST(ServerBounds, ManyConnectsAtOnceAndTheTotalCap) {
  Served s(ServerOptions{.max_connections_per_peer = 200});
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 100; ++i)
    clients.emplace_back([&] {
      RawClient raw(s.port());
      if (raw.Send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n") &&
          raw.Receive().starts_with("HTTP/1.1 200"))
        ++answered;
    });
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(answered.load(), 100);

  // Two connections that each sent a request (kept alive): a third is refused.
  Served capped(ServerOptions{.max_connections = 2});
  RawClient a(capped.port()), b(capped.port());
  for (RawClient* r : {&a, &b}) {
    r->Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_THAT(r->ReceiveFirst(), StartsWith("HTTP/1.1 200"));
  }
  RawClient c(capped.port());
  EXPECT_EQ(c.Receive(), "");
  a.Send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(a.ReceiveFirst(), HasSubstr("gpufit_extender_connections_closed_total{reason=\"too_many_connections\"} 1\n"));
}

// Issue 51: connections that send nothing hold at most three quarters of the slots; one more
// evicts the oldest of them, so a client that speaks always gets in, and once it has sent a
// request head it is not evicted.
TEST(ServerBounds, SilentConnectionsAreEvictedOldestFirstForANewcomer) {
  Served s(ServerOptions{.max_connections = 4});  // three for the silent, one kept
  RawClient first(s.port());
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  RawClient second(s.port()), third(s.port());
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  RawClient speaker(s.port());  // the fourth: the first, silent longest, makes room
  EXPECT_EQ(first.Receive(), "");  // closed, nothing answered
  speaker.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(speaker.ReceiveFirst(), StartsWith("HTTP/1.1 200"));
  // Two more silent newcomers: the first takes the slot the first left, the second evicts the
  // next oldest silent one (second), never the speaker.
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // the first's slot freed
  RawClient fifth(s.port()), sixth(s.port());
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  speaker.Send("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string metrics = speaker.ReceiveFirst();
  EXPECT_THAT(metrics, HasSubstr("gpufit_extender_connections_closed_total{reason=\"evicted\"} 2\n"));
  EXPECT_THAT(metrics, HasSubstr("gpufit_extender_connections_closed_total{reason=\"too_many_connections\"} 0\n"));
}

}  // namespace
}  // namespace gpufit::serve
