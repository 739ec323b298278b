// Issue 22: `gpufit serve` as a user runs it: from kubectl snapshots, on a free loopback port,
// answering kube-scheduler's filter call, stopped by SIGTERM as kubelet stops a pod.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "cli_run.h"
#include "gpufit/serve/tls_fixture.h"
#include "manifest_validator.h"
#include "test_paths.h"

namespace gpufit::e2e {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;

Json Node(const std::string& name, int cpu, int gpus) {
  const Json r{{"cpu", std::to_string(cpu)}, {"memory", "64Gi"}, {"nvidia.com/gpu", std::to_string(gpus)}};
  return {{"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"}}}}},
          {"status", {{"capacity", r}, {"allocatable", r}}}};
}

Json Pod(const std::string& name, const std::string& cpu, int gpus, const std::string& node) {
  Json pod{
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", "u-" + name}}},
      {"spec",
       {{"containers",
         {{{"name", "main"},
           {"resources", {{"requests", {{"cpu", cpu}}}, {"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}},
      {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

// `gpufit serve <args>` started with stderr in dir/stderr; its port, from the first line there.
// Plain HTTP on loopback (--insecure-http) unless `args` name --tls-cert-file.
struct Started {
  pid_t pid = -1;
  int port = 0;
};

Started StartServe(const fs::path& dir, const std::vector<std::string>& args, bool wait_listening = true) {
  Started s;
  s.pid = ::fork();
  if (s.pid == 0) {
    const std::string err = (dir / "stderr").string();
    std::freopen(err.c_str(), "w", stderr);
    std::vector<char*> argv{const_cast<char*>(gpufit::test_paths::GpufitBin()), const_cast<char*>("serve")};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    std::string insecure = "--insecure-http";
    if (std::find(args.begin(), args.end(), "--tls-cert-file") == args.end()) argv.push_back(insecure.data());
    argv.push_back(nullptr);
    ::execv(gpufit::test_paths::GpufitBin(), argv.data());
    std::_Exit(127);
  }
  const std::regex listening(R"(serving the scheduler extender on https?://127\.0\.0\.1:(\d+)/scheduler)");
  for (int i = 0; i < 200 && s.pid > 0 && s.port == 0 && wait_listening; ++i) {
    std::smatch m;
    const std::string err = Slurp(dir / "stderr");
    if (std::regex_search(err, m, listening)) s.port = std::stoi(m[1]);
    if (s.port == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return s;
}

TEST(Serve, AnswersFilterAndStopsOnSigterm) {
  const fs::path dir = Scratch("serve");
  std::ofstream(dir / "nodes.json") << Json{{"kind", "NodeList"}, {"items", {Node("a", 16, 2), Node("b", 16, 8)}}};
  std::ofstream(dir / "pods.json") << Json{{"kind", "PodList"}, {"items", {Pod("t", "8", 2, "a")}}};
  const Started started =
      StartServe(dir, {"--nodes", (dir / "nodes.json").string(), "--pods", (dir / "pods.json").string(), "--port", "0",
                       "--url-prefix", "/scheduler", "--drain-s", "1"});
  const pid_t pid = started.pid;
  const int port = started.port;
  ASSERT_GT(pid, 0);
  ASSERT_GT(port, 0) << Slurp(dir / "stderr");
  EXPECT_THAT(Slurp(dir / "stderr"), HasSubstr("2 nodes, 1 pods placed, 0 left out, policy gpufit"));
  EXPECT_THAT(Slurp(dir / "stderr"), HasSubstr("bind not enabled: no --kube-api"));

  httplib::Client c("127.0.0.1", port);
  Json pending = Pod("p", "4", 1, "");
  pending.erase("kind");  // as kube-scheduler encodes ExtenderArgs.Pod (no TypeMeta)
  const Json args{{"Pod", pending}, {"Nodes", nullptr}, {"NodeNames", {"a", "b", "c"}}};
  const auto r = c.Post("/scheduler/filter", args.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  const Json answer = Json::parse(r->body);
  EXPECT_EQ(answer["NodeNames"], Json::array({"b"}));  // a's two GPUs are both taken
  EXPECT_EQ(answer["FailedNodes"], Json::parse(R"({"a": "too few idle GPUs"})"));
  EXPECT_EQ(answer["FailedAndUnresolvableNodes"], Json::parse(R"({"c": "not in gpufit's snapshot of the cluster"})"));
  const auto ready = c.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);

  // SIGTERM: /readyz turns 503 for the drain second while the verbs still answer, then the
  // process exits 0.
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  int not_ready = 0;
  for (int i = 0; i < 40 && not_ready == 0; ++i) {
    const auto probe = c.Get("/readyz");
    if (probe && probe->status == 503) not_ready = 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(not_ready, 1);
  const auto during = c.Post("/scheduler/filter", args.dump(), "application/json");
  ASSERT_TRUE(during);
  EXPECT_EQ(during->status, 200);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  const std::string err = Slurp(dir / "stderr");
  EXPECT_THAT(err, HasSubstr("SIGTERM received"));
  EXPECT_THAT(err, HasSubstr(R"("verb":"filter")"));  // the request log line
  fs::remove_all(dir);
}

// --watch-dir: the server waits for the first snapshot; node a's 2 GPUs are taken by "t"; when
// pods.json is renamed over with "t"
// Succeeded, the next look (every 0.1 s here) frees them, and filter keeps a. A broken
// pods.json is logged and the state kept; a fixed one is taken in.
TEST(Serve, WatchDirTakesInARefreshedSnapshot) {
  const fs::path dir = Scratch("serve-watch");
  fs::create_directories(dir / "snap");
  auto write = [&](const std::string& name, const std::string& text) {  // as `kubectl ... > tmp && mv tmp name`
    std::ofstream(dir / "snap" / (name + ".tmp")) << text;
    fs::rename(dir / "snap" / (name + ".tmp"), dir / "snap" / name);
  };
  // The snapshot appears after the server started: it waits for nodes.json (the stand-in
  // sidecar writes it once the server says it is waiting). Every snapshot has "lost", bound to
  // a node that is not in it: warned about once, not at every snapshot.
  const Json lost = Pod("lost", "1", 1, "ghost");
  std::thread sidecar([&] {
    for (int i = 0; i < 400 && Slurp(dir / "stderr").find("waiting for") == std::string::npos; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    write("pods.json", Json{{"kind", "PodList"}, {"items", {Pod("t", "8", 2, "a"), lost}}}.dump());
    write("nodes.json", Json{{"kind", "NodeList"}, {"items", {Node("a", 16, 2)}}}.dump());
  });
  const Started started = StartServe(dir, {"--watch-dir", (dir / "snap").string(), "--watch-interval-s", "0.1",
                                           "--port", "0", "--url-prefix", "/scheduler", "--drain-s", "0"});
  sidecar.join();
  EXPECT_THAT(Slurp(dir / "stderr"), HasSubstr("waiting for " + (dir / "snap" / "nodes.json").string()));
  ASSERT_GT(started.pid, 0);
  ASSERT_GT(started.port, 0) << Slurp(dir / "stderr");
  httplib::Client c("127.0.0.1", started.port);
  Json pending = Pod("p", "4", 1, "");
  pending.erase("kind");
  const std::string args = Json{{"Pod", pending}, {"NodeNames", {"a"}}}.dump();
  auto kept = [&] {
    const auto r = c.Post("/scheduler/filter", args, "application/json");
    return r && r->status == 200 && Json::parse(r->body)["NodeNames"] == Json::array({"a"});
  };
  auto eventually = [&](const std::function<bool()>& ok) {
    for (int i = 0; i < 100; ++i) {  // 5 s at most
      if (ok()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  };
  EXPECT_FALSE(kept());
  write("pods.json", "{\"kind\": \"PodList\", \"items\": [");
  EXPECT_TRUE(eventually([&] {
    return Slurp(dir / "stderr").find("not taken in, keeping the previous one") != std::string::npos;
  })) << Slurp(dir / "stderr");
  EXPECT_FALSE(kept());
  Json done = Pod("t", "8", 2, "a");
  done["status"]["phase"] = "Succeeded";
  write("pods.json", Json{{"kind", "PodList"}, {"items", {done, lost}}}.dump());
  EXPECT_TRUE(eventually(kept)) << Slurp(dir / "stderr");
  const std::string err = Slurp(dir / "stderr");
  EXPECT_THAT(
      err, HasSubstr("snapshot 2 taken in from " + (dir / "snap").string() + ": 1 nodes, 0 pods placed, 1 left out"));
  std::size_t warned = 0;
  for (std::size_t at = 0;
       (at = err.find("pod ml/lost: node ghost is not in the nodes snapshot", at)) != std::string::npos; ++at)
    ++warned;
  EXPECT_EQ(warned, 1u) << err;
  EXPECT_THAT(err, HasSubstr("1 warnings as at the previous snapshot"));
  const auto metrics = c.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->body, HasSubstr("gpufit_snapshots_total 2\n"));
  // t runs again; then pods.json disappears: not an empty cluster, the state is kept.
  write("pods.json", Json{{"kind", "PodList"}, {"items", {Pod("t", "8", 2, "a"), lost}}}.dump());
  EXPECT_TRUE(eventually([&] { return !kept(); }));
  fs::remove(dir / "snap" / "pods.json");
  EXPECT_TRUE(eventually([&] {
    return Slurp(dir / "stderr").find("pods.json is gone (it was there before)") != std::string::npos;
  })) << Slurp(dir / "stderr");
  EXPECT_FALSE(kept());
  ASSERT_EQ(::kill(started.pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(started.pid, &status, 0), started.pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  // SIGTERM while it still waits for its first snapshot: exit 0.
  fs::create_directories(dir / "empty");
  const pid_t waiting = ::fork();
  if (waiting == 0) {
    std::freopen((dir / "waiting.err").c_str(), "w", stderr);
    ::execl(gpufit::test_paths::GpufitBin(), gpufit::test_paths::GpufitBin(), "serve", "--insecure-http", "--port", "0", "--watch-dir",
            (dir / "empty").c_str(), "--watch-interval-s", "0.1", static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  EXPECT_TRUE(eventually([&] { return Slurp(dir / "waiting.err").find("waiting for") != std::string::npos; }));
  ASSERT_EQ(::kill(waiting, SIGTERM), 0);
  ASSERT_EQ(::waitpid(waiting, &status, 0), waiting);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_THAT(Slurp(dir / "waiting.err"), HasSubstr("SIGTERM received while waiting for the first snapshot"));
  // Neither or both of --nodes and --watch-dir is a usage error.
  const CliRun neither = Gpufit("serve --insecure-http --port 0", dir);
  EXPECT_EQ(neither.exit_code, 2);
  EXPECT_THAT(neither.err, HasSubstr("serve needs --nodes (and --pods), or --watch-dir"));
  const CliRun both = Gpufit(
      "serve --insecure-http --port 0 --watch-dir " + (dir / "snap").string() + " --nodes " + (dir / "snap" / "nodes.json").string(),
      dir);
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.err, HasSubstr("excludes"));
  fs::remove_all(dir);
}

// A pod of Deployment `deployment` (ReplicaSet `<deployment>-<hash>`) or, without one, a bare
// pod, sharing one GPU by open-gpu-share's annotation.
Json SharingPod(const std::string& name, const std::string& deployment, const std::string& hash, int milli,
                const std::string& node) {
  Json pod{
      {"kind", "Pod"},
      {"metadata",
       {{"name", name},
        {"namespace", "ml"},
        {"uid", "u-" + name},
        {"annotations", {{"alibabacloud.com/gpu-milli", std::to_string(milli)}, {"alibabacloud.com/gpu-count", "1"}}}}},
      {"spec", {{"containers", {{{"name", "main"}, {"resources", {{"requests", {{"cpu", "1"}}}}}}}}}},
      {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  if (!deployment.empty()) {
    pod["metadata"]["labels"] = {{"pod-template-hash", hash}};
    pod["metadata"]["ownerReferences"] = Json::array({{{"apiVersion", "apps/v1"},
                                                       {"kind", "ReplicaSet"},
                                                       {"name", deployment + "-" + hash},
                                                       {"uid", "rs-" + hash},
                                                       {"controller", true}}});
  }
  if (!node.empty()) pod["spec"]["nodeName"] = node;
  return pod;
}

// The whole path: `gpufit plan --pods` writes the web Deployment's profile (12,000 MiB at its
// peak) into plan.json, and `gpufit serve --profiles` places a new web replica, of another
// ReplicaSet hash, by it. The node's one GPU (81,920 MiB by its GFD label) has a tenant
// declaring 990 milli: the replica's declared 5 milli would fit the 10 left, its envelope does
// not. A bare pod declaring 5 has no profile, fits, and the log says why.
TEST(Serve, ProfilesFromAPlanPlaceANewReplicaByItsWorkload) {
  const fs::path dir = Scratch("serve-profiles");
  {
    std::ofstream csv(dir / "telemetry.csv");
    csv << "timestamp_s,pod,metric,value\n";
    for (int k = 0; k < 240; ++k)
      for (const char* pod : {"ml/web-5d8f7c9b4-aaaaa", "ml/web-5d8f7c9b4-bbbbb"})
        csv << 60 * k << "," << pod << ",DCGM_FI_DEV_FB_USED," << (k == 100 ? 12000 : 9000) << "\n"
            << 60 * k << "," << pod << ",DCGM_FI_DEV_GPU_UTIL," << 10 + k % 5 << "\n";
  }
  std::ofstream(dir / "plan-pods.json") << Json{{"kind", "PodList"},
                                                {"items",
                                                 {SharingPod("web-5d8f7c9b4-aaaaa", "web", "5d8f7c9b4", 500, "a"),
                                                  SharingPod("web-5d8f7c9b4-bbbbb", "web", "5d8f7c9b4", 500, "a")}}};
  const CliRun plan =
      Gpufit("plan --telemetry " + (dir / "telemetry.csv").string() + " --pods " + (dir / "plan-pods.json").string() +
                 " --gpu a100-80gb --out " + (dir / "plan").string(),
             dir);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  const Json written = Json::parse(Slurp(dir / "plan" / "plan.json"));
  const Json& profiles = written["workload_profiles"]["workloads"];
  ASSERT_EQ(profiles.size(), 1u) << profiles.dump();
  EXPECT_EQ(profiles[0]["workload"], "deployment/ml/web");
  EXPECT_EQ(profiles[0]["memory_peak_mib"], 12000);
  // The share serve must take on the node (serve/profiles.h): ceil(1000 * 12000 / C).
  const double c = 81920 - written["options"]["reserve_mib"].get<double>() -
                   written["workload_profiles"]["margin_mib"].get<double>();
  ASSERT_GT(1000.0 * 12000 / c, 10);

  Json node = Node("a", 16, 1);
  node["metadata"]["labels"]["nvidia.com/gpu.memory"] = "81920";
  std::ofstream(dir / "nodes.json") << Json{{"kind", "NodeList"}, {"items", {node}}};
  std::ofstream(dir / "pods.json") << Json{{"kind", "PodList"}, {"items", {SharingPod("tenant", "", "", 990, "a")}}};
  const Started started = StartServe(
      dir, {"--nodes", (dir / "nodes.json").string(), "--pods", (dir / "pods.json").string(), "--profiles",
            (dir / "plan" / "plan.json").string(), "--port", "0", "--url-prefix", "/scheduler", "--drain-s", "0"});
  ASSERT_GT(started.pid, 0);
  ASSERT_GT(started.port, 0) << Slurp(dir / "stderr");
  EXPECT_THAT(Slurp(dir / "stderr"), HasSubstr("1 workload profiles from " + (dir / "plan" / "plan.json").string()));
  httplib::Client client("127.0.0.1", started.port);
  auto filter = [&](const Json& pod) {
    Json p = pod;
    p.erase("kind");
    const auto r = client.Post("/scheduler/filter", Json{{"Pod", p}, {"NodeNames", {"a"}}}.dump(), "application/json");
    EXPECT_TRUE(r);
    return r ? Json::parse(r->body) : Json();
  };
  EXPECT_EQ(filter(SharingPod("web-7f6e5d4c3-zzzzz", "web", "7f6e5d4c3", 5, ""))["NodeNames"], Json::array());
  EXPECT_EQ(filter(SharingPod("solo", "", "", 5, ""))["NodeNames"], Json::array({"a"}));
  const auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_THAT(metrics->body, HasSubstr(R"(gpufit_extender_pod_requests_total{from="telemetry_profile"} 1)"));
  EXPECT_THAT(metrics->body, HasSubstr(R"(gpufit_extender_pod_requests_total{from="declared"} 1)"));
  ASSERT_EQ(::kill(started.pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(started.pid, &status, 0), started.pid);
  const std::string err = Slurp(dir / "stderr");
  EXPECT_THAT(err, HasSubstr(R"x("request":"telemetry profile of deployment/ml/web (peak 12000 MiB)")x"));
  EXPECT_THAT(err, HasSubstr(R"("request":"declared requests: no telemetry profile for workload pod/ml/solo")"));

  // A plan.json without profiles is refused, naming the file and the field.
  std::ofstream(dir / "old-plan.json") << R"({"options": {"reserve_mib": 0}})";
  const CliRun bad = Gpufit(
      "serve --insecure-http --port 0 --nodes " + (dir / "nodes.json").string() + " --profiles " + (dir / "old-plan.json").string(),
      dir);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr((dir / "old-plan.json").string() + ": workload_profiles: missing"));
  fs::remove_all(dir);
}

// A loopback port free now: bound (not listening), read, closed. (httplib's bind_to_any_port
// would leave a listening socket with SO_REUSEPORT behind, which takes half the connections.)
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// While --watch-dir waits for the first snapshot, /healthz answers 200 (a liveness probe must
// not restart the wait) and /readyz 503; once nodes.json appears, the extender takes the port.
TEST(Serve, HealthzAnswersWhileWaitingForTheFirstSnapshot) {
  const fs::path dir = Scratch("serve-wait");
  fs::create_directories(dir / "snap");
  const int port = FreePort();
  ASSERT_GT(port, 0);
  const Started started = StartServe(dir,
                                     {"--watch-dir", (dir / "snap").string(), "--watch-interval-s", "0.1", "--port",
                                      std::to_string(port), "--url-prefix", "/scheduler", "--drain-s", "0"},
                                     false);
  ASSERT_GT(started.pid, 0);
  httplib::Client c("127.0.0.1", port);
  auto status_200 = [&](const std::string& path) {  // polled for 10 s at most; the last status
    int status = 0;
    for (int i = 0; i < 200 && status != 200; ++i) {
      const auto r = c.Get(path);
      status = r ? r->status : 0;
      if (status != 200) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return status;
  };
  EXPECT_EQ(status_200("/healthz"), 200);
  const auto waiting = c.Get("/readyz");
  ASSERT_TRUE(waiting);
  EXPECT_EQ(waiting->status, 503);
  EXPECT_THAT(waiting->body, HasSubstr("waiting for the first snapshot"));
  const auto early = c.Post("/scheduler/filter", "{}", "application/json");
  ASSERT_TRUE(early) << httplib::to_string(early.error());
  EXPECT_EQ(early->status, 503);

  // A client sending its head a byte every 0.3 s holds one of the waiting server's workers: it
  // must not keep the extender from taking the port.
  const int slow = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(slow, reinterpret_cast<const sockaddr*>(&to), sizeof to), 0);
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    const std::string head = "GET /readyz HTTP/1.1\r\nX-Slow: ";
    for (std::size_t k = 0; !stop && ::send(slow, &head[k % head.size()], 1, MSG_NOSIGNAL) == 1; ++k)
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  std::ofstream(dir / "snap" / "nodes.tmp") << Json{{"kind", "NodeList"}, {"items", {Node("a", 16, 2)}}};
  fs::rename(dir / "snap" / "nodes.tmp", dir / "snap" / "nodes.json");
  const auto renamed = std::chrono::steady_clock::now();
  EXPECT_EQ(status_200("/readyz"), 200);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - renamed).count(), 3.0);
  stop = true;
  trickle.join();
  ::close(slow);
  EXPECT_THAT(Slurp(dir / "stderr"),
              HasSubstr("serving the scheduler extender on http://127.0.0.1:" + std::to_string(port) + "/scheduler"));
  ASSERT_EQ(::kill(started.pid, SIGTERM), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(started.pid, &status, 0), started.pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  fs::remove_all(dir);
}

TEST(Serve, BadSnapshotIsAnErrorNamingTheFile) {
  const fs::path dir = Scratch("serve-bad");
  std::ofstream(dir / "nodes.json")
      << R"({"kind": "NodeList", "items": [{"metadata": {"name": "a"}, "status": {"allocatable": {"cpu": "-4"}}}]})";
  const CliRun run = Gpufit("serve --insecure-http --port 0 --nodes " + (dir / "nodes.json").string(), dir);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr((dir / "nodes.json").string() + ": items[0] (a): .status.allocatable.cpu"));
  const CliRun prefix = Gpufit("serve --insecure-http --url-prefix scheduler/ --nodes " + (dir / "nodes.json").string(), dir);
  EXPECT_EQ(prefix.exit_code, 2);
  EXPECT_THAT(prefix.err, HasSubstr("--url-prefix must start with '/'"));
  fs::remove_all(dir);
}

// kube-scheduler's HTTPExtender.IsInterested (pkg/scheduler/extender.go): an extender with no
// managedResources is sent every pod; one with a list, the pods one of whose containers or init
// containers requests or limits a resource on it.
bool IsInterested(const YAML::Node& extender, const YAML::Node& pod_spec) {
  const YAML::Node managed = extender["managedResources"];
  if (!managed || managed.size() == 0) return true;
  for (const char* list : {"containers", "initContainers"}) {
    for (const YAML::Node& c : pod_spec[list]) {
      for (const char* kind : {"requests", "limits"}) {
        for (const auto& resource : c["resources"][kind]) {
          for (const YAML::Node& m : managed)
            if (m["name"].as<std::string>() == resource.first.as<std::string>()) return true;
        }
      }
    }
  }
  return false;
}

// Which pods each shipped scheduler configuration sends to gpufit. A pod that shares a GPU by
// open-gpu-share's annotation requests no extended resource: the configuration without bind
// sends every pod, so it reaches gpufit; the one with bind sends it once it adds
// gpufit.io/gpu-share (which kube-scheduler's own fit check ignores), and does not send
// gpufit's own pod (it would wait for gpufit while gpufit is down). Both send whole-GPU pods.
TEST(Serve, SchedulerConfigurationsSendPodsThatShareAGpuByAnnotation) {
  const fs::path scheduler = gpufit::test_paths::SourcePath("deploy/scheduler");
  const YAML::Node plain = YAML::LoadFile((scheduler / "kube-scheduler-config.yaml").string())["extenders"][0];
  const YAML::Node bind = YAML::LoadFile((scheduler / "kube-scheduler-config-bind.yaml").string())["extenders"][0];
  const YAML::Node annotated = YAML::Load(R"({containers: [{name: main, resources: {requests: {cpu: "1"}}}]})");
  const YAML::Node marked = YAML::Load(
      R"({containers: [{name: main, resources: {requests: {cpu: "1"}, limits: {gpufit.io/gpu-share: "1"}}}]})");
  const YAML::Node whole = YAML::Load(R"({containers: [{name: main, resources: {limits: {nvidia.com/gpu: "1"}}}]})");
  const YAML::Node own =
      YAML::LoadFile(gpufit::test_paths::SourcePath("deploy/kubernetes/deployment.yaml"))["spec"]["template"]["spec"];
  EXPECT_TRUE(IsInterested(plain, annotated));
  EXPECT_TRUE(IsInterested(plain, whole));
  EXPECT_TRUE(IsInterested(bind, marked));
  EXPECT_TRUE(IsInterested(bind, whole));
  EXPECT_FALSE(IsInterested(bind, own));
  bool ignored = false;
  for (const YAML::Node& m : bind["managedResources"])
    if (m["name"].as<std::string>() == "gpufit.io/gpu-share") ignored = m["ignoredByScheduler"].as<bool>();
  EXPECT_TRUE(ignored);
}

// deploy/: the Deployment, Service, ServiceAccount, ClusterRole and ClusterRoleBinding against
// the Kubernetes OpenAPI schemas, both scheduler configurations against KubeSchedulerConfiguration v1's fields
// (tools/validate-manifests).
TEST(Serve, DeployManifestsAreValid) {
  const fs::path deploy = gpufit::test_paths::SourcePath("deploy");
  const gpufit::testing::ManifestValidation v =
      gpufit::testing::ValidateManifests({deploy / "kubernetes", deploy / "scheduler"});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_THAT(v.output, HasSubstr(gpufit::testing::ValidatedLine(8)));
}

}  // namespace
}  // namespace gpufit::e2e
