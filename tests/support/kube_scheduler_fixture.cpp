#include "kube_scheduler_fixture.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "child_process.h"
#include "gpufit/ingest/files/openb_reader.h"
#include "gpufit/serve/serve_fixture.h"
#include "gpufit/sim/engine.h"
#include "test_paths.h"

extern char** environ;

namespace gpufit::testing {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

Result<Json> Answer(const char* method, const std::string& path, const httplib::Result& r, bool not_found_ok = false) {
  if (!r) return Error{Code::kUnavailable, fmt::format("{} {}: {}", method, path, httplib::to_string(r.error()))};
  if (not_found_ok && r->status == 404) return Json();
  if (r->status >= 300) {
    std::string message = r->body;
    if (const Json status = Json::parse(r->body, nullptr, false); status.is_object() && status.contains("message"))
      message = status["message"].get<std::string>();
    return Error{Code::kFailedPrecondition, fmt::format("{} {}: {}: {}", method, path, r->status, message)};
  }
  return Json::parse(r->body, nullptr, false);
}

// cpp-httplib's TLS writes go through OpenSSL's write(2), which raises SIGPIPE when the peer
// has closed the connection (serve refusing a client without a certificate): that would end the
// test process. Ignored, the write fails instead (gpufit's main does the same).
void IgnoreSigpipe() { std::signal(SIGPIPE, SIG_IGN); }

}  // namespace

struct KubeApi::Impl {
  explicit Impl(const KubeControlPlane& plane) : client(plane.server()) {
    IgnoreSigpipe();
    client.set_ca_cert_path(plane.ca_file().c_str());
    client.enable_server_certificate_verification(true);
    client.set_bearer_token_auth(plane.token().c_str());
    client.set_keep_alive(true);
    // Head and body go out in two writes: without TCP_NODELAY the body waits for the server's
    // delayed ACK, 40 ms a request.
    client.set_tcp_nodelay(true);
    client.set_connection_timeout(10, 0);
    client.set_read_timeout(30, 0);
  }
  httplib::Client client;
};

KubeApi::KubeApi(const KubeControlPlane& plane) : impl_(std::make_unique<Impl>(plane)) {}
KubeApi::~KubeApi() = default;

Result<Json> KubeApi::Post(const std::string& path, const Json& body) {
  return Answer("POST", path, impl_->client.Post(path, body.dump(), "application/json"));
}

Result<Json> KubeApi::Get(const std::string& path) { return Answer("GET", path, impl_->client.Get(path)); }

Result<Json> KubeApi::MergePatch(const std::string& path, const Json& patch) {
  return Answer("PATCH", path, impl_->client.Patch(path, patch.dump(), "application/merge-patch+json"));
}

Result<void> KubeApi::Delete(const std::string& path) {
  const Result<Json> r =
      Answer("DELETE", path,
             impl_->client.Delete(path, R"({"kind":"DeleteOptions","gracePeriodSeconds":0})", "application/json"),
             /*not_found_ok=*/true);
  if (!r) return r.error();
  return {};
}

Result<TlsFiles> MakeTlsFiles(const KubeControlPlane& plane, const std::string& dir) {
  std::filesystem::create_directories(dir);
  const TlsFiles f{.ca = plane.ca_file(),
                   .server_cert = dir + "/serve.crt",
                   .server_key = dir + "/serve.key",
                   .client_cert = dir + "/scheduler.crt",
                   .client_key = dir + "/scheduler.key"};
  const std::string ca_key = plane.dir() + "/ca.key";
  std::ofstream(dir + "/serve.ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
  const std::vector<std::vector<std::string>> steps{
      {"openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f.server_key, "-out", dir + "/serve.csr", "-subj",
       "/CN=gpufit-serve"},
      {"openssl", "x509", "-req", "-in", dir + "/serve.csr", "-CA", f.ca, "-CAkey", ca_key, "-CAcreateserial",
       "-CAserial", dir + "/ca.srl", "-out", f.server_cert, "-days", "2", "-extfile", dir + "/serve.ext"},
      {"openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f.client_key, "-out", dir + "/scheduler.csr",
       "-subj", "/CN=kube-scheduler"},
      {"openssl", "x509", "-req", "-in", dir + "/scheduler.csr", "-CA", f.ca, "-CAkey", ca_key, "-CAcreateserial",
       "-CAserial", dir + "/ca.srl", "-out", f.client_cert, "-days", "2"}};
  for (const std::vector<std::string>& argv : steps) {
    const CommandResult r = RunCommand(argv);
    if (r.rc != 0) return Error{Code::kUnavailable, fmt::format("{} {}: {}", argv[0], argv[1], r.err)};
  }
  return f;
}

std::string SchedulerConfigYaml(const KubeControlPlane& plane, const SchedulerConfig& c) {
  std::ostringstream y;
  y << "apiVersion: kubescheduler.config.k8s.io/v1\n"
    << "kind: KubeSchedulerConfiguration\n"
    << "clientConnection: {kubeconfig: \"" << plane.kubeconfig() << "\"";
  if (c.client_qps > 0) y << ", qps: " << c.client_qps << ", burst: " << c.client_qps;
  y << "}\n"
    << "leaderElection: {leaderElect: false}\n";
  if (c.extender_decides) y << "percentageOfNodesToScore: 100\n";
  y << "profiles:\n  - schedulerName: " << c.scheduler_name << "\n";
  if (c.extender_decides) y << "    plugins:\n      score:\n        disabled: [{name: \"*\"}]\n";
  if (c.extender) {
    const ExtenderConfig& e = *c.extender;
    const bool https = e.url_prefix.starts_with("https://");
    y << "extenders:\n"
      << "  - urlPrefix: \"" << e.url_prefix << "\"\n"
      << "    filterVerb: filter\n"
      << "    prioritizeVerb: prioritize\n";
    if (e.bind) y << "    bindVerb: bind\n";
    y << "    weight: " << e.weight << "\n"
      << "    enableHTTPS: " << (https ? "true" : "false") << "\n";
    if (https) {
      y << "    tlsConfig:\n      caFile: \"" << e.ca_file << "\"\n";
      if (!e.cert_file.empty())
        y << "      certFile: \"" << e.cert_file << "\"\n      keyFile: \"" << e.key_file << "\"\n";
    }
    y << "    httpTimeout: 5s\n"
      << "    nodeCacheCapable: " << (e.node_cache_capable ? "true" : "false") << "\n";
    if (e.manage_gpus) y << "    managedResources: [{name: nvidia.com/gpu, ignoredByScheduler: false}]\n";
    y << "    ignorable: " << (e.ignorable ? "true" : "false") << "\n";
  }
  return y.str();
}

Result<void> StartScheduler(const KubeControlPlane& plane, const SchedulerConfig& c, const std::string& path) {
  std::ofstream(path) << SchedulerConfigYaml(plane, c);
  return plane.StartScheduler(path);
}

Result<std::unique_ptr<ServeProcess>> ServeProcess::Start(const std::vector<std::string>& args, const std::string& log,
                                                          int port) {
  std::unique_ptr<ServeProcess> s(new ServeProcess());
  s->log_ = log;
  std::vector<std::string> argv{test_paths::GpufitBin(), "serve"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--port", std::to_string(port)});
  std::vector<char*> c_argv;
  for (std::string& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  const int rc = posix_spawn(&s->pid_, c_argv[0], &actions, nullptr, c_argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Error{Code::kUnavailable, std::string("cannot start ") + c_argv[0]};
  const std::regex serving(R"(serving the scheduler extender on (https?://127\.0\.0\.1:(\d+)))");
  for (int i = 0; i < 1000; ++i) {
    std::smatch m;
    const std::string text = s->Log();
    if (std::regex_search(text, m, serving)) {
      s->url_ = m[1];
      s->port_ = std::stoi(m[2]);
      return s;
    }
    if (::waitpid(s->pid_, &s->status_, WNOHANG) == s->pid_) {
      s->pid_ = -1;
      return Error{Code::kUnavailable, "gpufit serve exited: " + text};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  s->Stop();
  return Error{Code::kUnavailable, "gpufit serve did not listen within 10 s: " + s->Log()};
}

ServeProcess::~ServeProcess() { Stop(); }

std::string ServeProcess::Log() const { return ReadFileText(log_); }

void ServeProcess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status_, 0);
  status_ = -1;
  pid_ = -1;
}

int ServeProcess::Stop() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    pid_ = -1;
  }
  return status_;
}

Json KwokNodeOf(const NodeSpec& n) {
  Json node = serve::testing::NodeJsonOf(n);
  node["apiVersion"] = "v1";
  node["metadata"]["annotations"] = {{"kwok.x-k8s.io/node", "fake"}};
  for (const char* list : {"capacity", "allocatable"}) node["status"][list]["pods"] = "1000";
  return node;
}

Json KwokGpuNode(const std::string& name, int cpu, int gpus, const std::string& product, int gpu_memory_mib) {
  const Json resources{{"cpu", std::to_string(cpu)},
                       {"memory", std::to_string(8 * cpu) + "Gi"},
                       {"pods", "110"},
                       {"nvidia.com/gpu", std::to_string(gpus)}};
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", name},
            {"annotations", {{"kwok.x-k8s.io/node", "fake"}}},
            {"labels",
             {{"kubernetes.io/hostname", name},
              {"nvidia.com/gpu.product", product},
              {"nvidia.com/gpu.count", std::to_string(gpus)},
              {"nvidia.com/gpu.memory", std::to_string(gpu_memory_mib)}}}}},
          {"status", {{"capacity", resources}, {"allocatable", resources}}}};
}

Result<void> CreateNodes(KubeApi& api, const std::vector<Json>& nodes) {
  for (const Json& n : nodes)
    if (Result<Json> made = api.Post("/api/v1/nodes", n); !made) return made.error();
  for (const Json& n : nodes) {
    const std::string path = "/api/v1/nodes/" + n["metadata"]["name"].get<std::string>();
    if (Result<Json> p = api.MergePatch(path, {{"spec", {{"taints", nullptr}}}}); !p) return p.error();
  }
  return {};
}

Result<std::string> WaitScheduled(KubeApi& api, const std::string& ns, const std::string& name, double timeout_s) {
  const std::string path = "/api/v1/namespaces/" + ns + "/pods/" + name;
  const Clock::time_point t0 = Clock::now();
  while (SecondsSince(t0) < timeout_s) {
    Result<Json> pod = api.Get(path);
    if (!pod) return pod.error();
    const std::string node = pod->value("/spec/nodeName"_json_pointer, "");
    if (!node.empty()) return node;
    for (const Json& c : pod->value("/status/conditions"_json_pointer, Json::array()))
      if (c.value("type", "") == "PodScheduled" && c.value("status", "") == "False" &&
          c.value("reason", "") == "Unschedulable")
        return std::string();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return Error{Code::kUnavailable,
               fmt::format("pod {}/{} neither bound nor unschedulable after {} s", ns, name, timeout_s)};
}

double MetricValue(const std::string& text, const std::string& series) {
  const std::size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return 0;
  return std::stod(text.substr(at + series.size() + 2));
}

namespace {

Result<void> EnsureNamespace(KubeApi& api, const std::string& name) {
  Result<Json> made =
      api.Post("/api/v1/namespaces", {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}});
  if (!made && made.error().message.find(": 409: ") == std::string::npos) return made.error();
  return {};
}

// The pod of trace pod `p` as a user creates it (serve_fixture.h's PodJsonOf, with an image).
Json ApiPodOf(const PodSpec& p, const std::string& name, const std::string& ns, const std::string& scheduler) {
  Json pod = serve::testing::PodJsonOf(p, name);
  pod["apiVersion"] = "v1";
  pod["kind"] = "Pod";
  pod["metadata"]["namespace"] = ns;
  pod["metadata"].erase("uid");
  pod.erase("status");
  pod["spec"]["schedulerName"] = scheduler;
  pod["spec"]["containers"][0]["image"] = "trainer:1";
  return pod;
}

Result<void> WriteKubectl(const KubeControlPlane& plane, const std::vector<std::string>& args,
                          const std::string& path) {
  Result<std::string> out = plane.KubectlOk(args);
  if (!out) return out.error();
  std::ofstream(path + ".tmp") << *out;
  std::filesystem::rename(path + ".tmp", path);
  return {};
}

}  // namespace

Result<OpenbSliceOutcome> RunOpenbSlice(const KubeControlPlane& plane, const std::string& dir,
                                        const OpenbSliceOptions& o) {
  std::filesystem::create_directories(dir);
  const std::string data = test_paths::DataDir() + "/openb/";
  Result<std::vector<NodeSpec>> all_nodes = ReadOpenbNodes(data + "openb_node_list_all_node.csv");
  if (!all_nodes) return all_nodes.error();
  Result<std::vector<PodSpec>> all_pods = ReadOpenbPods(data + "openb_pod_list_default.csv");
  if (!all_pods) return all_pods.error();
  std::vector<NodeSpec> nodes;
  for (std::size_t i = 0; i < all_nodes->size() && nodes.size() < o.node_count; i += o.node_stride)
    nodes.push_back((*all_nodes)[i]);
  // kubectl lists nodes by name: serve's node order, which the seeded order is drawn over.
  std::sort(nodes.begin(), nodes.end(), [](const NodeSpec& a, const NodeSpec& b) { return a.name < b.name; });
  std::vector<PodSpec> pods;
  for (std::size_t i = 0; i < all_pods->size(); i += o.pod_stride) pods.push_back((*all_pods)[i]);

  SimOptions sim_options;
  sim_options.keep_steps = true;
  sim_options.inflation = o.inflation;
  Result<SimInput> input = PrepareSimulation(nodes, pods, sim_options);
  if (!input) return input.error();
  Result<RunResult> run = Simulate(*input, o.policy, o.seed, sim_options);
  if (!run) return run.error();
  OpenbSliceOutcome out;
  out.nodes = nodes.size();
  out.trace_pods = pods.size();
  out.arrivals = o.max_arrivals == 0 ? run->steps.size() : std::min(o.max_arrivals, run->steps.size());
  out.simulate_alloc_ratio = out.arrivals == 0 ? 0 : run->steps[out.arrivals - 1].alloc_ratio;

  KubeApi api(plane);
  for (const char* ns : {"trace", "held"})
    if (Result<void> ok = EnsureNamespace(api, ns); !ok) return ok.error();
  std::vector<Json> kwok_nodes;
  for (const NodeSpec& n : nodes) kwok_nodes.push_back(KwokNodeOf(n));
  if (Result<void> ok = CreateNodes(api, kwok_nodes); !ok) return ok.error();
  for (const PodSpec& p : pods)
    if (Result<Json> made = api.Post("/api/v1/namespaces/held/pods", ApiPodOf(p, p.name, "held", "gpufit-held")); !made)
      return made.error();
  const std::string snap = dir + "/snapshot";
  std::filesystem::create_directories(snap);
  if (Result<void> ok = WriteKubectl(plane, {"get", "nodes", "-o", "json"}, snap + "/nodes.json"); !ok)
    return ok.error();
  if (Result<void> ok = WriteKubectl(plane, {"get", "pods", "-A", "-o", "json"}, snap + "/pods.json"); !ok)
    return ok.error();
  Result<TlsFiles> tls = MakeTlsFiles(plane, dir + "/tls");
  if (!tls) return tls.error();
  std::ofstream(dir + "/token") << plane.token() << "\n";
  Result<std::unique_ptr<ServeProcess>> serve = ServeProcess::Start({"--nodes",
                                                                     snap + "/nodes.json",
                                                                     "--pods",
                                                                     snap + "/pods.json",
                                                                     "--policy",
                                                                     o.policy,
                                                                     "--seed",
                                                                     std::to_string(o.seed),
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
                                                                     dir + "/token",
                                                                     "--kube-ca-file",
                                                                     plane.ca_file()},
                                                                    dir + "/serve.log");
  if (!serve) return serve.error();
  const SchedulerConfig config{.extender = ExtenderConfig{.url_prefix = (*serve)->url() + "/scheduler",
                                                          .node_cache_capable = true,
                                                          .ignorable = false,
                                                          .bind = true,
                                                          .manage_gpus = false,
                                                          .weight = 1,
                                                          .ca_file = tls->ca,
                                                          .cert_file = tls->client_cert,
                                                          .key_file = tls->client_key},
                               .scheduler_name = "default-scheduler",
                               .client_qps = 0,
                               .extender_decides = true};
  if (Result<void> ok = StartScheduler(plane, config, dir + "/scheduler.yaml"); !ok) return ok.error();

  const Clock::time_point t0 = Clock::now();
  for (std::size_t k = 0; k < out.arrivals; ++k) {
    const StepMetrics& step = run->steps[k];
    const PodSpec& p = input->pods[static_cast<std::size_t>(step.pod)];
    const std::string name = "arrival-" + std::to_string(k);
    if (Result<Json> made = api.Post("/api/v1/namespaces/trace/pods", ApiPodOf(p, name, "trace", "default-scheduler"));
        !made)
      return made.error();
    Result<std::string> node = WaitScheduled(api, "trace", name, 20);
    if (!node) return Error{node.error().code, node.error().message + "; kube-scheduler.log in " + plane.dir()};
    const std::string expected = step.node < 0 ? "" : nodes[static_cast<std::size_t>(step.node)].name;
    if (node->empty()) {
      ++out.failed;
      // Deleted, so that its retries (the pod stays in the scheduler's queue) cannot race the next arrivals.
      if (Result<void> gone = api.Delete("/api/v1/namespaces/trace/pods/" + name); !gone) return gone.error();
    } else {
      ++out.placed;
    }
    if (*node == expected) {
      ++out.same;
    } else {
      out.differences.push_back(fmt::format("arrival {} ({}): simulate {}, kube-scheduler {}", k, p.name,
                                            expected.empty() ? "nowhere" : expected,
                                            node->empty() ? "nowhere" : *node));
    }
  }
  out.arrivals_s = SecondsSince(t0);

  // The last Binding shows in the pod a moment before serve counts its bind: a few looks.
  for (int look = 0; look < 100; ++look) {
    Result<std::string> metrics = ServeGet(**serve, &*tls, "/metrics");
    if (!metrics) return metrics.error();
    out.serve_binds_ok =
        static_cast<int>(MetricValue(*metrics, R"(gpufit_extender_requests_total{verb="bind",outcome="ok"})"));
    out.serve_alloc_ratio = MetricValue(*metrics, "gpufit_cluster_gpu_allocation_ratio");
    if (out.serve_binds_ok >= out.placed) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  (*serve)->Stop();
  out.serve_log = (*serve)->Log();
  for (const char* ns : {"trace", "held"})
    if (Result<void> gone = api.Delete(fmt::format("/api/v1/namespaces/{}/pods", ns)); !gone) return gone.error();
  if (Result<void> gone = api.Delete("/api/v1/nodes"); !gone) return gone.error();
  return out;
}

namespace {

std::unique_ptr<httplib::ClientImpl> ServeClient(const ServeProcess& serve, const TlsFiles* tls) {
  IgnoreSigpipe();
  std::unique_ptr<httplib::ClientImpl> client;
  if (serve.url().starts_with("https://")) {
    auto ssl = tls && !tls->client_cert.empty()
                   ? std::make_unique<httplib::SSLClient>("127.0.0.1", serve.port(), tls->client_cert, tls->client_key)
                   : std::make_unique<httplib::SSLClient>("127.0.0.1", serve.port());
    if (tls) ssl->set_ca_cert_path(tls->ca.c_str());
    ssl->enable_server_certificate_verification(tls != nullptr);
    client = std::move(ssl);
  } else {
    client = std::make_unique<httplib::ClientImpl>("127.0.0.1", serve.port());
  }
  return client;
}

}  // namespace

Result<ServeAnswer> ServePost(const ServeProcess& serve, const TlsFiles* tls, const std::string& path,
                              const std::string& body) {
  const httplib::Result r = ServeClient(serve, tls)->Post(path, body, "application/json");
  if (!r)
    return Error{Code::kUnavailable, fmt::format("POST {}{}: {}", serve.url(), path, httplib::to_string(r.error()))};
  return ServeAnswer{.status = r->status, .body = r->body};
}

Result<std::string> ServeGet(const ServeProcess& serve, const TlsFiles* tls, const std::string& path) {
  const httplib::Result r = ServeClient(serve, tls)->Get(path.c_str());
  if (!r)
    return Error{Code::kUnavailable, fmt::format("GET {}{}: {}", serve.url(), path, httplib::to_string(r.error()))};
  if (r->status != 200) return Error{Code::kUnavailable, fmt::format("GET {}{}: {}", serve.url(), path, r->status)};
  return r->body;
}

}  // namespace gpufit::testing
