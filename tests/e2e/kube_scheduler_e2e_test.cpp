// Issue 39: `gpufit serve` as the extender of a real kube-scheduler (v1.37.2) on a real API
// server, with KWOK nodes (tests/support/kube_control_plane.h, kube_scheduler_fixture.h). Serve
// is the real binary, started from kubectl's snapshots of the same cluster, over HTTPS, and binds
// through the API server's Binding subresource. One control plane for the whole binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_run.h"
#include "kube_scheduler_fixture.h"

namespace gpufit::e2e {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;
using testing::KubeApi;
using testing::KubeControlPlane;
using ::testing::Not;

// A pod in namespace ml asking `gpus` nvidia.com/gpu (none: the resource is not named at all) of
// `product`, or sharing one GPU by open-gpu-share's annotation (`gpu_milli`), bound to `node`
// when it is set.
struct PodArgs {
  std::string name;
  int gpus = 0;
  std::string product = "";
  int gpu_milli = 0;
  std::string node = "";
};
Json MlPod(const PodArgs& a) {
  Json resources{{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}};
  if (a.gpus > 0) resources["limits"] = {{"nvidia.com/gpu", std::to_string(a.gpus)}};
  Json pod{{"apiVersion", "v1"},
           {"kind", "Pod"},
           {"metadata", {{"name", a.name}, {"namespace", "ml"}}},
           {"spec", {{"containers", {{{"name", "main"}, {"image", "trainer:1"}, {"resources", resources}}}}}}};
  if (!a.product.empty()) pod["spec"]["nodeSelector"] = {{"nvidia.com/gpu.product", a.product}};
  if (a.gpu_milli > 0)
    pod["metadata"]["annotations"] = {{"alibabacloud.com/gpu-milli", std::to_string(a.gpu_milli)},
                                      {"alibabacloud.com/gpu-count", "1"}};
  if (!a.node.empty()) pod["spec"]["nodeName"] = a.node;
  return pod;
}

// `text` once `read()` holds it (5 s at most): a pod's nodeName appears when serve's Binding is
// made, a moment before serve writes its log line and counts the bind.
::testing::AssertionResult Eventually(const std::function<std::string()>& read, const std::string& text) {
  std::string last;
  for (int i = 0; i < 100; ++i) {
    last = read();
    if (last.find(text) != std::string::npos) return ::testing::AssertionSuccess();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return ::testing::AssertionFailure() << "no \"" << text << "\" in:\n" << last;
}

template <class T>
::testing::AssertionResult Ok(const Result<T>& r) {
  if (r) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.error().message;
}

class KubeScheduler : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(Scratch("kube-scheduler"));
    Result<std::unique_ptr<KubeControlPlane>> plane = KubeControlPlane::Start((*dir_ / "plane").string());
    if (!plane) {
      *error_ = plane.error().message;
      return;
    }
    plane_ = plane->release();
    if (Result<void> kwok = plane_->StartKwok(); !kwok) *error_ = kwok.error().message;
    if (Result<std::string> ns = plane_->KubectlOk({"create", "namespace", "ml"}); !ns) *error_ = ns.error().message;
    Result<testing::TlsFiles> tls = testing::MakeTlsFiles(*plane_, (*dir_ / "tls").string());
    if (!tls) *error_ = tls.error().message;
    tls_ = new testing::TlsFiles(tls ? *tls : testing::TlsFiles{});
    std::ofstream(*dir_ / "token") << plane_->token() << "\n";
  }
  static void TearDownTestSuite() {
    delete plane_;  // stops kube-scheduler, KWOK, the API server and etcd
    plane_ = nullptr;
    fs::remove_all(*dir_);
  }
  void SetUp() override { ASSERT_TRUE(plane_ != nullptr && error_->empty()) << *error_; }
  void TearDown() override {  // each test's pods and nodes go
    if (plane_ == nullptr) return;
    KubeApi api(*plane_);
    EXPECT_TRUE(Ok(api.Delete("/api/v1/namespaces/ml/pods")));
    EXPECT_TRUE(Ok(api.Delete("/api/v1/nodes")));
  }

  // serve from kubectl's snapshots in `snap` (--watch-dir), binding through the API server,
  // HTTPS with client certificates; as kube-scheduler's extender is configured nodeCacheCapable.
  static Result<std::unique_ptr<testing::ServeProcess>> StartServe(const fs::path& snap, const std::string& name,
                                                                   bool node_cache_capable, int port = 0) {
    fs::create_directories(snap);
    for (const auto& [file, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"nodes.json", {"get", "nodes", "-o", "json"}}, {"pods.json", {"get", "pods", "-A", "-o", "json"}}}) {
      Result<std::string> out = plane_->KubectlOk(args);
      if (!out) return out.error();
      std::ofstream(snap / (file + ".tmp")) << *out;
      fs::rename(snap / (file + ".tmp"), snap / file);
    }
    std::vector<std::string> args{
        "--watch-dir",     snap.string(),     "--watch-interval-s", "0.1",
        "--url-prefix",    "/scheduler",      "--drain-s",          "0",
        "--tls-cert-file", tls_->server_cert, "--tls-key-file",     tls_->server_key,
        "--kube-api",      plane_->server(),  "--kube-token-file",  (*dir_ / "token").string(),
        "--kube-ca-file",  plane_->ca_file(),  "--client-ca-file",   tls_->ca};
    if (!node_cache_capable) args.push_back("--node-cache-capable=false");
    return testing::ServeProcess::Start(args, (*dir_ / (name + ".log")).string(), port);
  }

  static Result<void> Create(const Json& object) {
    Result<std::string> out = plane_->KubectlOk({"create", "-f", "-"}, object.dump());
    if (!out) return out.error();
    return {};
  }

  static Json GetPod(const std::string& name) {
    Result<std::string> out = plane_->KubectlOk({"get", "pod", name, "-n", "ml", "-o", "json"});
    return out ? Json::parse(*out) : Json();
  }

  // The pod's PodScheduled condition once it is False with a message containing `text` (15 s at
  // most; the last condition seen otherwise).
  static Json WaitUnscheduled(const std::string& name, const std::string& text) {
    Json last;
    for (int i = 0; i < 150; ++i) {
      for (const Json& c : GetPod(name).value("/status/conditions"_json_pointer, Json::array())) {
        if (c.value("type", "") != "PodScheduled") continue;
        last = c;
        if (c.value("status", "") == "False" && c.value("message", "").find(text) != std::string::npos) return c;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return last;
  }

  static std::string Scheduled(const std::string& name, double timeout_s = 20) {
    KubeApi api(*plane_);
    Result<std::string> node = testing::WaitScheduled(api, "ml", name, timeout_s);
    return node ? *node : "error: " + node.error().message;
  }

  static inline KubeControlPlane* plane_ = nullptr;
  static inline fs::path* dir_ = nullptr;
  static inline testing::TlsFiles* tls_ = nullptr;
  static inline std::string* error_ = new std::string();
};

// nodeCacheCapable (node names only: serve takes the nodes from its snapshot), ignorable: false,
// HTTPS with a client certificate, managedResources nvidia.com/gpu, gpufit binds. h100-b's GPUs
// are seven of eight taken by pods sharing them by annotation, which kube-scheduler does not
// count (it sees 8 nvidia.com/gpu free there): only serve knows h100-b has one GPU idle. So
// two GPUs go to h100-a, four A100s to the one A100 node, and eight GPUs nowhere (kube-scheduler
// alone would bind them to h100-b). The CPU pod never reaches serve.
TEST_F(KubeScheduler, GpuPodsGoWhereServeSeesIdleGpusAndServeBindsThem) {
  KubeApi api(*plane_);
  ASSERT_TRUE(Ok(testing::CreateNodes(api, {testing::KwokGpuNode("h100-a", 64, 8, "NVIDIA-H100-80GB-HBM3", 81559),
                                            testing::KwokGpuNode("h100-b", 64, 8, "NVIDIA-H100-80GB-HBM3", 81559),
                                            testing::KwokGpuNode("a100-c", 32, 4, "NVIDIA-A100-SXM4-80GB", 81920)})));
  for (int k = 0; k < 7; ++k)
    ASSERT_TRUE(Ok(Create(MlPod({.name = "share-" + std::to_string(k), .gpu_milli = 700, .node = "h100-b"}))));
  Result<std::unique_ptr<testing::ServeProcess>> serve = StartServe(*dir_ / "snap-1", "serve-1", true);
  ASSERT_TRUE(serve) << serve.error().message;
  EXPECT_THAT((*serve)->Log(), HasSubstr("3 nodes, 7 pods placed, 0 left out"));
  const testing::SchedulerConfig config{.extender =
                                            testing::ExtenderConfig{.url_prefix = (*serve)->url() + "/scheduler",
                                                                    .node_cache_capable = true,
                                                                    .ignorable = false,
                                                                    .bind = true,
                                                                    .manage_gpus = true,
                                                                    .weight = 5,
                                                                    .ca_file = tls_->ca,
                                                                    .cert_file = tls_->client_cert,
                                                                    .key_file = tls_->client_key}};
  ASSERT_TRUE(Ok(testing::StartScheduler(*plane_, config, (*dir_ / "scheduler-1.yaml").string())));

  ASSERT_TRUE(Ok(Create(MlPod({.name = "two", .gpus = 2, .product = "NVIDIA-H100-80GB-HBM3"}))));
  EXPECT_EQ(Scheduled("two"), "h100-a");
  ASSERT_TRUE(Ok(Create(MlPod({.name = "four", .gpus = 4, .product = "NVIDIA-A100-SXM4-80GB"}))));
  EXPECT_EQ(Scheduled("four"), "a100-c");
  ASSERT_TRUE(Ok(Create(MlPod({.name = "cpu-only"}))));
  EXPECT_NE(Scheduled("cpu-only"), "");
  ASSERT_TRUE(Ok(Create(MlPod({.name = "eight", .gpus = 8, .product = "NVIDIA-H100-80GB-HBM3"}))));
  EXPECT_EQ(Scheduled("eight"), "");
  const Json unscheduled = WaitUnscheduled("eight", "too few idle GPUs");
  EXPECT_EQ(unscheduled.value("reason", ""), "Unschedulable") << unscheduled.dump();

  const auto log = [&] { return (*serve)->Log(); };
  EXPECT_TRUE(Eventually(log, R"("pod":"ml/two","status":200,"verb":"bind")"));
  EXPECT_TRUE(Eventually(log, R"("pod":"ml/four","status":200,"verb":"bind")"));
  Result<std::string> metrics = testing::ServeGet(**serve, tls_, "/metrics");
  ASSERT_TRUE(metrics) << metrics.error().message;
  EXPECT_EQ(testing::MetricValue(*metrics, R"(gpufit_extender_requests_total{verb="bind",outcome="ok"})"), 2);
  // Without a client certificate, serve refuses /metrics (403) and answers /healthz.
  testing::TlsFiles no_client = *tls_;
  no_client.client_cert.clear();
  const Result<std::string> refused = testing::ServeGet(**serve, &no_client, "/metrics");
  ASSERT_FALSE(refused);
  EXPECT_THAT(refused.error().message, HasSubstr(": 403"));
  EXPECT_TRUE(testing::ServeGet(**serve, &no_client, "/healthz"));
  EXPECT_THAT(log(), HasSubstr(R"("pod":"ml/eight","status":200,"verb":"filter")"));
  EXPECT_THAT(log(), Not(HasSubstr("ml/cpu-only")));
  EXPECT_THAT(Slurp(plane_->dir() + "/kube-scheduler.log"),
              HasSubstr(R"("EnableHTTPS":true,"TLSConfig":{"Insecure":false,"ServerName":"","CertFile":")" +
                        tls_->client_cert));
  // A key that is not the certificate's is an error at start, naming both files.
  const CliRun mismatched = Gpufit("serve --port 0 --nodes " + (*dir_ / "snap-1" / "nodes.json").string() +
                                       " --tls-cert-file " + tls_->client_cert + " --tls-key-file " + tls_->server_key +
                                       " --client-ca-file " + tls_->ca,
                                   *dir_);
  EXPECT_EQ(mismatched.exit_code, 2);
  EXPECT_THAT(mismatched.err, HasSubstr("TLS: cannot load --tls-cert-file " + tls_->client_cert));
}

// ignorable: false, serve stopped: a GPU pod waits with the extender's error, and retries until
// serve answers again; a pod that requests no GPU (as gpufit's own Deployment's pod) is never
// sent to serve, so it schedules while serve is down.
TEST_F(KubeScheduler, NotIgnorableGpuPodsWaitForServeItsOwnPodDoesNot) {
  KubeApi api(*plane_);
  ASSERT_TRUE(Ok(testing::CreateNodes(api, {testing::KwokGpuNode("h100-a", 64, 8, "NVIDIA-H100-80GB-HBM3", 81559)})));
  Result<std::unique_ptr<testing::ServeProcess>> serve = StartServe(*dir_ / "snap-2", "serve-2", true);
  ASSERT_TRUE(serve) << serve.error().message;
  const int port = (*serve)->port();
  const testing::SchedulerConfig config{.extender =
                                            testing::ExtenderConfig{.url_prefix = (*serve)->url() + "/scheduler",
                                                                    .node_cache_capable = true,
                                                                    .ignorable = false,
                                                                    .bind = true,
                                                                    .manage_gpus = true,
                                                                    .weight = 5,
                                                                    .ca_file = tls_->ca,
                                                                    .cert_file = tls_->client_cert,
                                                                    .key_file = tls_->client_key}};
  ASSERT_TRUE(Ok(testing::StartScheduler(*plane_, config, (*dir_ / "scheduler-2.yaml").string())));
  EXPECT_EQ((*serve)->Stop(), 0);

  ASSERT_TRUE(Ok(Create(MlPod({.name = "gpu", .gpus = 1}))));
  const Json waiting = WaitUnscheduled("gpu", "connection refused");
  EXPECT_EQ(waiting.value("reason", ""), "SchedulerError") << waiting.dump();
  EXPECT_THAT(waiting.value("message", ""), HasSubstr("/scheduler/filter"));
  // gpufit's own pod: deploy/kubernetes/deployment.yaml's pod template, as kubectl reads it.
  Result<std::string> deployment = plane_->KubectlOk(
      {"create", "--dry-run=client", "-o", "json", "-f", test_paths::SourcePath("deploy/kubernetes/deployment.yaml")});
  ASSERT_TRUE(deployment) << deployment.error().message;
  const Json d = Json::parse(*deployment);
  Json own{{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", d["spec"]["template"]["metadata"]}};
  own["metadata"]["name"] = "gpufit-extender";
  own["metadata"]["namespace"] = "ml";
  own["spec"] = d["spec"]["template"]["spec"];
  ASSERT_TRUE(Ok(Create(own)));
  EXPECT_EQ(Scheduled("gpufit-extender"), "h100-a");
  EXPECT_EQ(GetPod("gpu").value("/spec/nodeName"_json_pointer, ""), "");

  // serve again on the same address: the GPU pod's next try (kube-scheduler's backoff, at most
  // 10 s) is filtered and bound by it.
  Result<std::unique_ptr<testing::ServeProcess>> again = StartServe(*dir_ / "snap-2", "serve-2b", true, port);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(Scheduled("gpu", 30), "h100-a");
  EXPECT_TRUE(Eventually([&] { return (*again)->Log(); }, R"("pod":"ml/gpu","status":200,"verb":"bind")"));
}

// nodeCacheCapable: false (kube-scheduler sends whole Nodes), ignorable: true, HTTPS without a
// client certificate. x's four GPUs are three taken by shared pods (kube-scheduler sees four
// free), y has two: serve sends the two-GPU pod to y. Then serve stops: ignorable, so
// kube-scheduler goes on alone (its log says it skipped the extender's filter and bind), with
// its own count, in which only x has a GPU left, and binds the pod itself.
TEST_F(KubeScheduler, IgnorableWithFullNodesSchedulesAloneWhileServeIsDown) {
  KubeApi api(*plane_);
  ASSERT_TRUE(Ok(testing::CreateNodes(api, {testing::KwokGpuNode("x", 32, 4, "NVIDIA-A100-SXM4-80GB", 81920),
                                            testing::KwokGpuNode("y", 32, 2, "NVIDIA-A100-SXM4-80GB", 81920)})));
  for (int k = 0; k < 3; ++k)
    ASSERT_TRUE(Ok(Create(MlPod({.name = "share-" + std::to_string(k), .gpu_milli = 600, .node = "x"}))));
  Result<std::unique_ptr<testing::ServeProcess>> serve = StartServe(*dir_ / "snap-3", "serve-3", false);
  ASSERT_TRUE(serve) << serve.error().message;
  const testing::SchedulerConfig config{.extender =
                                            testing::ExtenderConfig{.url_prefix = (*serve)->url() + "/scheduler",
                                                                    .node_cache_capable = false,
                                                                    .ignorable = true,
                                                                    .bind = true,
                                                                    .manage_gpus = true,
                                                                    .weight = 5,
                                                                    .ca_file = tls_->ca,
                                                                    .cert_file = tls_->client_cert,
                                                                    .key_file = tls_->client_key}};
  ASSERT_TRUE(Ok(testing::StartScheduler(*plane_, config, (*dir_ / "scheduler-3.yaml").string())));
  ASSERT_TRUE(Ok(Create(MlPod({.name = "two", .gpus = 2}))));
  EXPECT_EQ(Scheduled("two"), "y");
  EXPECT_TRUE(Eventually([&] { return (*serve)->Log(); }, R"("pod":"ml/two","status":200,"verb":"bind")"));
  EXPECT_THAT(Slurp(plane_->dir() + "/kube-scheduler.log"), HasSubstr(R"("NodeCacheCapable":false)"));

  EXPECT_EQ((*serve)->Stop(), 0);
  ASSERT_TRUE(Ok(Create(MlPod({.name = "one", .gpus = 1}))));
  EXPECT_EQ(Scheduled("one"), "x");
  ASSERT_TRUE(Ok(Create(MlPod({.name = "cpu-only"}))));
  EXPECT_NE(Scheduled("cpu-only"), "");
  EXPECT_THAT((*serve)->Log(), Not(HasSubstr("ml/one")));
  const std::string log = Slurp(plane_->dir() + "/kube-scheduler.log");
  EXPECT_THAT(log, HasSubstr(R"("Skipping extender as it returned error and has ignorable flag set" pod="ml/one")"));
  EXPECT_THAT(log,
              HasSubstr(R"("Skipping extender in bind as it returned error and has ignorable flag set" pod="ml/one")"));
  EXPECT_THAT(log, HasSubstr(R"("Successfully bound pod to node" pod="ml/one" node="x")"));
}

// Issue 39's placement equality: a slice of openb (every 50th node, every 64th pod as the trace)
// through kube-scheduler, each arrival created after the previous one is bound or unschedulable,
// with gpufit deciding alone (the profile's score plugins off): every arrival lands on the node
// `simulate` (the same policy and seed) places it on, or nowhere where simulate fails it, and
// each placement was serve's bind. bench/kube_scheduler_bench.cpp runs 200 nodes and 2,000
// arrivals.
TEST_F(KubeScheduler, OpenbSliceLandsWhereSimulatePlacesIt) {
  if (!fs::exists(test_paths::DataDir() + "/openb")) GTEST_SKIP() << "no openb trace under " << test_paths::DataDir();
  Result<testing::OpenbSliceOutcome> out = testing::RunOpenbSlice(*plane_, (*dir_ / "openb").string(),
                                                                  {.node_stride = 50,
                                                                   .node_count = 200,
                                                                   .pod_stride = 64,
                                                                   .max_arrivals = 0,
                                                                   .inflation = 1.3,
                                                                   .policy = "gpufit",
                                                                   .seed = 42});
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_GT(out->arrivals, 100u);
  EXPECT_GT(out->failed, 0) << "the saturation run should fill the slice";
  EXPECT_EQ(out->same, static_cast<int>(out->arrivals)) << ::testing::PrintToString(out->differences);
  EXPECT_EQ(out->serve_binds_ok, out->placed);
  EXPECT_NEAR(out->serve_alloc_ratio, out->simulate_alloc_ratio, 1e-9);
  RecordProperty("nodes", static_cast<int>(out->nodes));
  RecordProperty("arrivals", static_cast<int>(out->arrivals));
  RecordProperty("placed", out->placed);
  RecordProperty("arrivals_s", std::to_string(out->arrivals_s));
  std::printf(
      "openb slice: %zu nodes, %zu trace pods, %zu arrivals (%d placed, %d unschedulable), %d as simulate, "
      "%.1f s\n",
      out->nodes, out->trace_pods, out->arrivals, out->placed, out->failed, out->same, out->arrivals_s);
}

}  // namespace
}  // namespace gpufit::e2e
