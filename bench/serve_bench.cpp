// Load on the scheduler extender (issue 22): `gpufit serve`'s HTTP server on loopback over the
// openb cluster (1,213 nodes, openb_node_list_all_node.csv), with the openb default pods placed
// by first-fit until half the GPUs are taken, then concurrent clients each issuing filter +
// prioritize pairs (nodeCacheCapable: every node's name in NodeNames) for pods drawn from the
// same trace, for `seconds`.
//
//  * BM_ServeFilterPrioritize/<clients>/<seconds>/<pinned>: counters pairs_per_s, p50_ms, p99_ms,
//    p999_ms (per pair, as the client sees it), errors (non-200 or no answer), peak_rss_mib, and
//    server_filter_mean_ms / server_prioritize_mean_ms (the server's own time per verb).
//    Goal: p99 under 1 ms per pair.
//  * BM_ExtenderPairInProcess: the same pairs without HTTP (parse, decide, write), per pair.
// Run: build/bench/serve_bench --benchmark_filter='BM_ServeFilterPrioritize/2/60/0/'
// (pinned 1: the server's threads on CPU 1 and the clients on CPU 0)
#include <benchmark/benchmark.h>
#include <httplib.h>
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "bench_util.h"
#include "gpufit/core/rng.h"
#include "gpufit/ingest/files/openb_reader.h"
#include "gpufit/ingest/kube/kube_reader.h"
#include "gpufit/placement/registry.h"
#include "gpufit/serve/http_server.h"
#include "gpufit/serve/serve_fixture.h"

namespace {

using namespace gpufit;
using Json = nlohmann::json;

// The openb cluster half taken by first-fit as the snapshot, and 1,000 request bodies drawn
// from the trace (nodeCacheCapable: every node's name in NodeNames).
struct Setup {
  std::unique_ptr<serve::Extender> extender;
  std::vector<std::string> bodies;
  std::size_t snapshot_pods = 0;
  std::string error;
};

Setup MakeSetup() {
  Setup out;
  const std::string dir = bench::DataDir() + "/openb/";
  Result<std::vector<NodeSpec>> nodes = ReadOpenbNodes(dir + "openb_node_list_all_node.csv");
  Result<std::vector<PodSpec>> pods = ReadOpenbPods(dir + "openb_pod_list_default.csv");
  if (!nodes || !pods) {
    out.error = "cannot read the openb trace";
    return out;
  }
  // Half the GPUs taken by first-fit, as running pods of the snapshot.
  ClusterState cluster = *ClusterState::FromSpecs(*nodes);
  Policy first_fit = *MakePolicy("first-fit", PolicyContext{});
  Rng rng(42);
  Json node_list = Json::array();
  for (const NodeSpec& n : *nodes) node_list.push_back(serve::testing::NodeJsonOf(n));
  std::vector<KubeNode> kube_nodes = *ParseKubeNodes(Json{{"kind", "NodeList"}, {"items", node_list}}, "nodes");
  std::vector<KubePod> running;
  for (std::size_t i = 0; i < pods->size() && cluster.gpu_allocated().value * 2 < cluster.gpu_capacity().value; ++i) {
    const Workload w = cluster.WorkloadFor((*pods)[i]);
    const Policy::Decision d = first_fit.Place(w, cluster, rng, false);
    if (d.node < 0) continue;
    cluster.Place(d.node, w, d.gpus);
    running.push_back(*ParseKubePod(
        serve::testing::PodJsonOf((*pods)[i], "p" + std::to_string(i), cluster.node_name(d.node)), "bench"));
  }
  auto extender = serve::Extender::FromSnapshot(kube_nodes, running, {});
  if (!extender) {
    out.error = extender.error().message;
    return out;
  }
  out.extender = std::move(*extender);
  out.snapshot_pods = running.size();
  Json names = Json::array();
  for (const NodeSpec& n : *nodes) names.push_back(n.name);
  for (std::size_t i = 0; i < 1000; ++i) {
    const std::size_t k = rng.Below(pods->size());
    out.bodies.push_back(Json{
        {"Pod", serve::testing::PodJsonOf((*pods)[k], "p" + std::to_string(k))},
        {"Nodes", nullptr},
        {"NodeNames", names}}.dump());
  }
  return out;
}

// The same pairs without HTTP: parse, decide and write the answer of each verb, on one thread
// (what a request costs the server beyond reading its body and sending the answer).
void BM_ExtenderPairInProcess(benchmark::State& state) {
  Setup setup = MakeSetup();
  if (!setup.error.empty()) {
    state.SkipWithError(setup.error.c_str());
    return;
  }
  std::size_t i = 0;
  for (auto _ : state) {
    const std::string& body = setup.bodies[i++ % setup.bodies.size()];
    const Result<serve::ExtenderArgs> f = serve::ParseExtenderArgs(body, "filter request");
    const Result<serve::FilterResult> kept = setup.extender->Filter(*f);
    benchmark::DoNotOptimize(serve::WriteFilterResult(*f, *kept));
    const Result<serve::ExtenderArgs> p = serve::ParseExtenderArgs(body, "prioritize request");
    benchmark::DoNotOptimize(serve::WriteHostPriorityList(*setup.extender->Prioritize(*p)));
  }
}
BENCHMARK(BM_ExtenderPairInProcess)->Unit(benchmark::kMicrosecond);

void BM_ServeFilterPrioritize(benchmark::State& state) {
  const auto clients = static_cast<int>(state.range(0));
  const auto seconds = static_cast<double>(state.range(1));
  // Pinned: the server's threads on CPU 1, the clients on CPU 0, as when kube-scheduler and the
  // extender run in separate pods rather than sharing every core.
  const bool pinned = state.range(2) != 0;
  auto pin = [pinned](int cpu) {
    if (!pinned) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  };
  Setup setup = MakeSetup();
  if (!setup.error.empty()) {
    state.SkipWithError(setup.error.c_str());
    return;
  }
  const std::vector<std::string>& bodies = setup.bodies;
  serve::ExtenderServer server(std::move(setup.extender), {.insecure_http = true});  // plain HTTP on loopback
  if (!server.Bind()) {
    state.SkipWithError("cannot bind");
    return;
  }
  std::thread serving([&] {
    pin(1);  // the server's worker threads are made here and inherit it
    server.Serve();
  });

  std::vector<double> pair_ms;
  std::atomic<std::int64_t> errors{0};
  double elapsed = 0;
  for (auto _ : state) {
    std::vector<std::vector<double>> per_client(static_cast<std::size_t>(clients));
    const auto t0 = std::chrono::steady_clock::now();
    const auto until = t0 + std::chrono::duration<double>(seconds);
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&, c] {
        pin(0);
        httplib::Client client("127.0.0.1", server.port());
        client.set_keep_alive(true);
        client.set_tcp_nodelay(true);  // as Go's net/http (kube-scheduler) does by default
        std::vector<double>& mine = per_client[static_cast<std::size_t>(c)];
        for (std::size_t i = static_cast<std::size_t>(c); std::chrono::steady_clock::now() < until; i += 7) {
          const std::string& body = bodies[i % bodies.size()];
          const auto a = std::chrono::steady_clock::now();
          const auto f = client.Post("/filter", body, "application/json");
          const auto p = client.Post("/prioritize", body, "application/json");
          const auto b = std::chrono::steady_clock::now();
          if (!f || f->status != 200 || !p || p->status != 200) ++errors;
          mine.push_back(std::chrono::duration<double, std::milli>(b - a).count());
        }
      });
    }
    for (std::thread& t : threads) t.join();
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (const auto& v : per_client) pair_ms.insert(pair_ms.end(), v.begin(), v.end());
  }
  // The server's own time per verb (its latency histogram's sum over count): the rest of a
  // pair is HTTP and loopback, on the same two cores as the clients.
  if (const auto m = httplib::Client("127.0.0.1", server.port()).Get("/metrics"); m && m->status == 200) {
    for (const std::string verb : {"filter", "prioritize"}) {
      auto value = [&](const std::string& series) {
        const std::string key = "gpufit_extender_request_duration_seconds_" + series + "{verb=\"" + verb + "\"} ";
        const std::size_t at = m->body.find(key);
        return at == std::string::npos ? 0.0 : std::stod(m->body.substr(at + key.size()));
      };
      const double count = value("count");
      state.counters["server_" + verb + "_mean_ms"] = count > 0 ? value("sum") / count * 1e3 : 0.0;
    }
  }
  server.Stop();
  serving.join();
  std::sort(pair_ms.begin(), pair_ms.end());
  auto q = [&](double f) {
    return pair_ms.empty() ? 0.0
                           : pair_ms[std::min(pair_ms.size() - 1,
                                              static_cast<std::size_t>(f * static_cast<double>(pair_ms.size())))];
  };
  state.counters["pairs"] = static_cast<double>(pair_ms.size());
  state.counters["pairs_per_s"] = static_cast<double>(pair_ms.size()) / elapsed;
  state.counters["p50_ms"] = q(0.50);
  state.counters["p99_ms"] = q(0.99);
  state.counters["p999_ms"] = q(0.999);
  state.counters["errors"] = static_cast<double>(errors.load());
  state.counters["snapshot_pods"] = static_cast<double>(setup.snapshot_pods);
  state.counters["request_kib"] = static_cast<double>(bodies.front().size()) / 1024.0;
  state.counters["peak_rss_mib"] = bench::PeakRssMiB();
}
BENCHMARK(BM_ServeFilterPrioritize)
    ->Args({1, 10, 0})
    ->Args({1, 10, 1})
    ->Args({2, 60, 0})
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
