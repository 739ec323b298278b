// Issue 39: `gpufit serve` under a real kube-scheduler (v1.37.2) and API server with KWOK nodes
// (tests/support/kube_control_plane.h, kube_scheduler_fixture.h), at a size the e2e test cannot
// afford. Not a google-benchmark (one run of minutes); not run by ctest.
//
//  * openb: the placement equality of tests/e2e/kube_scheduler_e2e_test.cpp on a larger slice:
//    --openb-nodes nodes of openb_node_list_all_node.csv (every 7th), every 16th pod of
//    openb_pod_list_default.csv as the trace, the first --openb-arrivals arrivals of the
//    saturation run (inflation 2, so that the slice fills before them), each created after the
//    previous one is bound or unschedulable. Printed: arrivals on simulate's node, those that
//    differ (each named), arrivals/s, and serve's time per verb (p50, p99; its request log).
//  * throughput: --nodes KWOK nodes of 8 GPUs, --pods one-GPU pods created while no scheduler
//    serves them (schedulerName bench-<variant>); then kube-scheduler starts with that profile
//    and schedules them all. pods/s = (pods - 1) / (last bind - first bind), from its own log's
//    "Successfully bound pod to node" lines (--v 2, microseconds), as scheduler_perf counts
//    scheduled pods over the measured period. Variants: no extender; gpufit filter + prioritize
//    (kube-scheduler binds); gpufit filter + prioritize + bind. Serve over HTTPS with a client
//    certificate, nodeCacheCapable, managedResources nvidia.com/gpu, the default score plugins
//    on (gpufit's weight 5). Printed per variant: pods/s and serve's p50/p99 per verb.
//
// kube-scheduler's client runs at --client-qps (qps and burst; 5000 as in scheduler_perf; 0: its
// defaults, 50 and 100, at which its own Binding and Event requests are throttled).
//
// Run: build/bench/kube_scheduler_bench [--nodes 1000] [--pods 2000] [--openb-nodes 200]
//      [--openb-arrivals 2000] [--client-qps 5000] [--skip-openb] [--skip-throughput]
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "kube_scheduler_fixture.h"

namespace {

using namespace gpufit;
using namespace gpufit::testing;
namespace fs = std::filesystem;
using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Args {
  int nodes = 1000, pods = 2000, openb_nodes = 200, openb_arrivals = 2000, client_qps = 5000;
  bool openb = true, throughput = true;
};

double ElapsedS(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

std::string ReadText(const std::string& path) {
  std::stringstream ss;
  ss << std::ifstream(path).rdbuf();
  return ss.str();
}

// Serve's time per verb from its request log (one JSON line per request), in ms: "verb n=.. p50
// .. p99 .. max ..".
std::string VerbLatencies(const std::string& log) {
  std::map<std::string, std::vector<double>> ms;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line.front() != '{') continue;
    const Json j = Json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("verb")) continue;
    ms[j["verb"].get<std::string>()].push_back(1000 * j.value("duration_s", 0.0));
  }
  std::string out;
  for (auto& entry : ms) {  // (no structured binding: clang 14 refuses its capture below)
    const std::string& verb = entry.first;
    std::vector<double>& v = entry.second;
    std::sort(v.begin(), v.end());
    auto rank = [&](double q) {  // nearest rank
      const std::size_t i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
      return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
    };
    out += fmt::format("    serve {:<10} n={:<6} p50 {:.3f} ms  p99 {:.3f} ms  max {:.3f} ms\n", verb, v.size(),
                       rank(0.5), rank(0.99), v.back());
  }
  return out;
}

int RunOpenb(const KubeControlPlane& plane, const fs::path& dir, const Args& a) {
  const Clock::time_point t0 = Clock::now();
  Result<OpenbSliceOutcome> out = RunOpenbSlice(plane, (dir / "openb").string(),
                                                {.node_stride = 7,
                                                 .node_count = static_cast<std::size_t>(a.openb_nodes),
                                                 .pod_stride = 16,
                                                 .max_arrivals = static_cast<std::size_t>(a.openb_arrivals),
                                                 .inflation = 2.0,
                                                 .policy = "gpufit",
                                                 .seed = 42});
  if (!out) {
    fmt::print(stderr, "openb: {}\n", out.error().message);
    return 1;
  }
  fmt::print(
      "openb slice: {} nodes, {} trace pods (held Pending: serve's target workload), {} arrivals: {} placed, {} "
      "unschedulable\n"
      "  on simulate's node (or unschedulable where simulate fails it): {} of {}; differ: {}\n"
      "  serve's binds ok: {}; GPU allocation at the end: serve {:.6f}, simulate {:.6f}\n"
      "  arrivals one at a time: {:.1f} s, {:.1f} arrivals/s; whole run with setup {:.1f} s\n",
      out->nodes, out->trace_pods, out->arrivals, out->placed, out->failed, out->same, out->arrivals,
      out->differences.size(), out->serve_binds_ok, out->serve_alloc_ratio, out->simulate_alloc_ratio, out->arrivals_s,
      static_cast<double>(out->arrivals) / out->arrivals_s, ElapsedS(t0));
  for (const std::string& d : out->differences) fmt::print("  differs: {}\n", d);
  fmt::print("{}", VerbLatencies(out->serve_log));
  return out->differences.empty() ? 0 : 1;
}

// The kube-scheduler log's time of day of a klog line ("I1205 22:36:44.447231 ..."), in seconds.
double KlogSeconds(const std::string& line) {
  return std::stod(line.substr(6, 2)) * 3600 + std::stod(line.substr(9, 2)) * 60 + std::stod(line.substr(12, 9));
}

// Waits for `pods` binds of namespace bench in kube-scheduler.log and returns the first and
// last bind's times of day.
Result<std::pair<double, double>> WaitForBinds(const KubeControlPlane& plane, const std::string& prefix, int pods,
                                               double timeout_s) {
  const std::string path = plane.dir() + "/kube-scheduler.log";
  const Clock::time_point t0 = Clock::now();
  while (ElapsedS(t0) < timeout_s) {
    const std::string log = ReadText(path);
    std::vector<double> at;
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);)
      if (line.find("\"Successfully bound pod to node\" pod=\"bench/" + prefix) != std::string::npos)
        at.push_back(KlogSeconds(line));
    if (static_cast<int>(at.size()) >= pods) {
      const auto [lo, hi] = std::minmax_element(at.begin(), at.end());
      return std::pair{*lo, *hi};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return Error{Code::kUnavailable, fmt::format("not all {} pods bound within {} s", pods, timeout_s)};
}

Result<void> CreateBenchPods(const KubeControlPlane& plane, int pods, const std::string& prefix,
                             const std::string& scheduler) {
  constexpr int kThreads = 4;
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      KubeApi api(plane);
      for (int k = t; k < pods; k += kThreads) {
        const Json pod{
            {"apiVersion", "v1"},
            {"kind", "Pod"},
            {"metadata", {{"name", fmt::format("{}{:05}", prefix, k)}, {"namespace", "bench"}}},
            {"spec",
             {{"schedulerName", scheduler},
              {"containers",
               {{{"name", "main"},
                 {"image", "trainer:1"},
                 {"resources",
                  {{"requests", {{"cpu", "4"}, {"memory", "16Gi"}}}, {"limits", {{"nvidia.com/gpu", "1"}}}}}}}}}}};
        if (Result<Json> made = api.Post("/api/v1/namespaces/bench/pods", pod); !made) {
          errors[t] = made.error().message;
          return;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::string& e : errors)
    if (!e.empty()) return Error{Code::kUnavailable, e};
  return {};
}

int RunThroughput(const KubeControlPlane& plane, const fs::path& dir, const Args& a) {
  KubeApi api(plane);
  (void)api.Post("/api/v1/namespaces",
                 {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "bench"}}}});
  std::vector<Json> nodes;
  for (int i = 0; i < a.nodes; ++i)
    nodes.push_back(KwokGpuNode(fmt::format("gpu-{:05}", i), 64, 8, "NVIDIA-H100-80GB-HBM3", 81559));
  const Clock::time_point made = Clock::now();
  if (Result<void> ok = CreateNodes(api, nodes); !ok) {
    fmt::print(stderr, "nodes: {}\n", ok.error().message);
    return 1;
  }
  fmt::print(
      "throughput: {} KWOK nodes of 8 GPUs created in {:.1f} s; {} one-GPU pods per variant; kube-scheduler client "
      "qps {}\n",
      a.nodes, ElapsedS(made), a.pods, a.client_qps == 0 ? std::string("default") : std::to_string(a.client_qps));
  Result<TlsFiles> tls = MakeTlsFiles(plane, (dir / "tls").string());
  if (!tls) return 1;
  std::ofstream(dir / "token") << plane.token() << "\n";
  fs::create_directories(dir / "snap");
  for (const auto& [file, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"nodes.json", {"get", "nodes", "-o", "json"}}, {"pods.json", {"get", "pods", "-A", "-o", "json"}}}) {
    Result<std::string> out = plane.KubectlOk(args);
    if (!out) return 1;
    std::ofstream(dir / "snap" / file) << *out;
  }
  int rc = 0;
  for (const std::string variant : {"none", "filter-prioritize", "filter-prioritize-bind"}) {
    std::unique_ptr<ServeProcess> serve;
    SchedulerConfig config{.extender = std::nullopt,
                           .scheduler_name = "bench-" + variant,
                           .client_qps = a.client_qps,
                           .extender_decides = false};
    if (variant != "none") {
      Result<std::unique_ptr<ServeProcess>> started =
          ServeProcess::Start({"--nodes",
                               (dir / "snap" / "nodes.json").string(),
                               "--pods",
                               (dir / "snap" / "pods.json").string(),
                               "--url-prefix",
                               "/scheduler",
                               "--drain-s",
                               "0",
                               "--tls-cert-file",
                               tls->server_cert,
                               "--tls-key-file",
                               tls->server_key,
                               "--client-ca-file",
                               tls->ca,
                               "--kube-api",
                               plane.server(),
                               "--kube-token-file",
                               (dir / "token").string(),
                               "--kube-ca-file",
                               plane.ca_file(),
                               "--scheduler-name",
                               config.scheduler_name},
                              (dir / ("serve-" + variant + ".log")).string());
      if (!started) {
        fmt::print(stderr, "{}: {}\n", variant, started.error().message);
        return 1;
      }
      serve = std::move(*started);
      config.extender = ExtenderConfig{.url_prefix = serve->url() + "/scheduler",
                                       .node_cache_capable = true,
                                       .ignorable = false,
                                       .bind = variant == "filter-prioritize-bind",
                                       .manage_gpus = true,
                                       .weight = 5,
                                       .ca_file = tls->ca,
                                       .cert_file = tls->client_cert,
                                       .key_file = tls->client_key};
    }
    const Clock::time_point created = Clock::now();
    if (Result<void> ok = CreateBenchPods(plane, a.pods, variant + "-", config.scheduler_name); !ok) {
      fmt::print(stderr, "{}: pods: {}\n", variant, ok.error().message);
      return 1;
    }
    const double create_s = ElapsedS(created);
    // (The script starts kube-scheduler's log afresh each time: this variant's binds only.)
    if (Result<void> ok = StartScheduler(plane, config, (dir / ("scheduler-" + variant + ".yaml")).string()); !ok) {
      fmt::print(stderr, "{}: {}\n", variant, ok.error().message);
      return 1;
    }
    const Clock::time_point started = Clock::now();
    Result<std::pair<double, double>> binds = WaitForBinds(plane, variant + "-", a.pods, 600);
    if (!binds) {
      fmt::print(stderr, "{}: {}\n", variant, binds.error().message);
      rc = 1;
    } else {
      const double span = binds->second - binds->first;
      fmt::print(
          "  {:<24} pods created in {:.1f} s; all bound {:.1f} s after kube-scheduler started; {:.1f} pods/s "
          "(first to last bind: {:.2f} s)\n",
          variant, create_s, ElapsedS(started), static_cast<double>(a.pods - 1) / span, span);
    }
    if (serve) {
      if (Result<std::string> metrics = ServeGet(*serve, &*tls, "/metrics"); metrics) {
        std::istringstream lines(*metrics);
        for (std::string line; std::getline(lines, line);)
          if (line.starts_with("gpufit_extender_requests_total")) fmt::print("    {}\n", line);
      }
      serve->Stop();
      fmt::print("{}", VerbLatencies(serve->Log()));
    }
    if (Result<void> gone = api.Delete("/api/v1/namespaces/bench/pods"); !gone) {
      fmt::print(stderr, "{}: {}\n", variant, gone.error().message);
      return 1;
    }
  }
  (void)api.Delete("/api/v1/nodes");
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each figure as it comes (minutes apart)
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto next = [&] { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
    if (arg == "--nodes")
      a.nodes = next();
    else if (arg == "--pods")
      a.pods = next();
    else if (arg == "--openb-nodes")
      a.openb_nodes = next();
    else if (arg == "--openb-arrivals")
      a.openb_arrivals = next();
    else if (arg == "--client-qps")
      a.client_qps = next();
    else if (arg == "--skip-openb")
      a.openb = false;
    else if (arg == "--skip-throughput")
      a.throughput = false;
    else {
      fmt::print(stderr, "unknown argument {}\n", arg);
      return 2;
    }
  }
  const fs::path dir = fs::temp_directory_path() / fmt::format("gpufit-kube-scheduler-bench-{}", ::getpid());
  fs::create_directories(dir);
  Result<std::unique_ptr<KubeControlPlane>> plane = KubeControlPlane::Start((dir / "plane").string());
  if (!plane) {
    fmt::print(stderr, "control plane: {}\n", plane.error().message);
    return 1;
  }
  if (Result<void> kwok = (*plane)->StartKwok(); !kwok) {
    fmt::print(stderr, "kwok: {}\n", kwok.error().message);
    return 1;
  }
  int rc = 0;
  if (a.openb) rc |= RunOpenb(**plane, dir, a);
  if (a.throughput) rc |= RunThroughput(**plane, dir, a);
  plane->reset();
  fs::remove_all(dir);
  return rc;
}
