// Issue 40: the bind verb trusts the API server, not the caller. `gpufit serve` (the real binary)
// binds through a real API server (v1.37.2, tests/support/kube_control_plane.h) over mutual TLS;
// the test plays kube-scheduler's part (filter, then bind, as pkg/scheduler/extender.go sends
// them), so that it can also send what kube-scheduler never would: a forged filter, a wrong UID,
// a node the pod's affinity excludes, a bind after a SIGKILL. No KWOK: Bindings need no kubelet.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_run.h"
#include "kube_scheduler_fixture.h"
#include "test_paths.h"

namespace gpufit::e2e {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;
using testing::KubeApi;
using testing::KubeControlPlane;

constexpr const char* kH100 = "NVIDIA-H100-80GB-HBM3";

// A pod of namespace ml with `gpus` nvidia.com/gpu.
Json GpuPod(const std::string& name, int gpus) {
  const Json resources{{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}},
                       {"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}};
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "ml"}}},
          {"spec", {{"containers", {{{"name", "main"}, {"image", "trainer:1"}, {"resources", resources}}}}}}};
}

Json ZoneNode(const std::string& name, int gpus, const std::string& zone) {
  Json node = testing::KwokGpuNode(name, 64, gpus, kH100, 81559);
  node["metadata"]["labels"]["topology.kubernetes.io/zone"] = zone;
  return node;
}

template <class T>
::testing::AssertionResult Ok(const Result<T>& r) {
  if (r) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << r.error().message;
}

class KubeBind : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(Scratch("kube-bind"));
    Result<std::unique_ptr<KubeControlPlane>> plane = KubeControlPlane::Start((*dir_ / "plane").string());
    if (!plane) {
      *error_ = plane.error().message;
      return;
    }
    plane_ = plane->release();
    if (Result<std::string> ns = plane_->KubectlOk({"create", "namespace", "ml"}); !ns) *error_ = ns.error().message;
    Result<testing::TlsFiles> tls = testing::MakeTlsFiles(*plane_, (*dir_ / "tls").string());
    if (!tls) *error_ = tls.error().message;
    tls_ = new testing::TlsFiles(tls ? *tls : testing::TlsFiles{});
    std::ofstream(*dir_ / "token") << plane_->token() << "\n";
  }
  static void TearDownTestSuite() {
    delete plane_;
    plane_ = nullptr;
    fs::remove_all(*dir_);
  }
  void SetUp() override { ASSERT_TRUE(plane_ != nullptr && error_->empty()) << *error_; }
  void TearDown() override {
    if (plane_ == nullptr) return;
    KubeApi api(*plane_);
    EXPECT_TRUE(Ok(api.Delete("/api/v1/namespaces/ml/pods")));
    EXPECT_TRUE(Ok(api.Delete("/api/v1/nodes")));
  }

  // kubectl's snapshot of the cluster now, in `snap`; serve started from it (--nodes/--pods,
  // never read again), over HTTPS with client certificates required, binding through the API.
  static Result<std::unique_ptr<testing::ServeProcess>> StartServe(const fs::path& snap, const std::string& name,
                                                                   bool take_snapshot = true) {
    fs::create_directories(snap);
    for (const auto& [file, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
             {"nodes.json", {"get", "nodes", "-o", "json"}}, {"pods.json", {"get", "pods", "-A", "-o", "json"}}}) {
      if (!take_snapshot) break;
      Result<std::string> out = plane_->KubectlOk(args);
      if (!out) return out.error();
      std::ofstream(snap / file) << *out;
    }
    return testing::ServeProcess::Start({"--nodes",
                                         (snap / "nodes.json").string(),
                                         "--pods",
                                         (snap / "pods.json").string(),
                                         "--url-prefix",
                                         "/scheduler",
                                         "--drain-s",
                                         "0",
                                         "--tls-cert-file",
                                         tls_->server_cert,
                                         "--tls-key-file",
                                         tls_->server_key,
                                         "--client-ca-file",
                                         tls_->ca,
                                         "--kube-api",
                                         plane_->server(),
                                         "--kube-token-file",
                                         (*dir_ / "token").string(),
                                         "--kube-ca-file",
                                         plane_->ca_file()},
                                        (*dir_ / (name + ".log")).string());
  }

  static Json ApiPod(const std::string& name) {
    KubeApi api(*plane_);
    Result<Json> pod = api.Get("/api/v1/namespaces/ml/pods/" + name);
    return pod ? *pod : Json();
  }
  static std::string NodeOf(const std::string& name) { return ApiPod(name).value("/spec/nodeName"_json_pointer, ""); }

  // The filter verb for `pod` (as sent) over `nodes`: the kept NodeNames, or "error: ...".
  static Json Filter(const testing::ServeProcess& serve, const Json& pod, const std::vector<std::string>& nodes,
                     const testing::TlsFiles* tls = tls_) {
    Result<testing::ServeAnswer> a =
        testing::ServePost(serve, tls, "/scheduler/filter", Json{{"Pod", pod}, {"NodeNames", nodes}}.dump());
    if (!a) return "error: " + a.error().message;
    if (a->status != 200) return "status " + std::to_string(a->status);
    return Json::parse(a->body).value("NodeNames", Json::array());
  }
  // The bind verb: its Error ("" when bound), or "status N" for an answer other than 200.
  static std::string Bind(const testing::ServeProcess& serve, const std::string& pod, const std::string& uid,
                          const std::string& node, const testing::TlsFiles* tls = tls_) {
    const Json args{{"PodName", pod}, {"PodNamespace", "ml"}, {"PodUID", uid}, {"Node", node}};
    Result<testing::ServeAnswer> a = testing::ServePost(serve, tls, "/scheduler/bind", args.dump());
    if (!a) return "error: " + a.error().message;
    if (a->status != 200) return "status " + std::to_string(a->status);
    return Json::parse(a->body).value("Error", "no Error");
  }
  static std::string Uid(const std::string& pod) { return ApiPod(pod).value("/metadata/uid"_json_pointer, ""); }

  static Result<void> Create(const Json& object) {
    KubeApi api(*plane_);
    Result<Json> made = api.Post("/api/v1/namespaces/ml/pods", object);
    if (!made) return made.error();
    return {};
  }

  static inline KubeControlPlane* plane_ = nullptr;
  static inline fs::path* dir_ = nullptr;
  static inline testing::TlsFiles* tls_ = nullptr;
  static inline std::string* error_ = new std::string();
};

// kube-scheduler checks a pod's affinity and taints itself; an extender that binds must not rely
// on that: a bind to a node the pod's required affinity excludes, to a node whose taint it does
// not tolerate, with another UID, or of a pod already bound is refused, and the pod stays as it was.
TEST_F(KubeBind, WrongUidBoundPodExcludedNodeAndUntoleratedTaintAreRefused) {
  KubeApi api(*plane_);
  ASSERT_TRUE(Ok(testing::CreateNodes(
      api, {ZoneNode("gpu-a", 8, "zone-a"), ZoneNode("gpu-b", 8, "zone-b"), ZoneNode("gpu-c", 8, "zone-a")})));
  ASSERT_TRUE(Ok(api.MergePatch(
      "/api/v1/nodes/gpu-c",
      {{"spec", {{"taints", {{{"key", "dedicated"}, {"value", "infer"}, {"effect", "NoSchedule"}}}}}}})));
  Json affine = GpuPod("affine", 2);
  affine["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] =
      Json::parse(R"([{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In",
                                              "values": ["zone-a"]}]}])");
  ASSERT_TRUE(Ok(Create(affine)));
  Result<std::unique_ptr<testing::ServeProcess>> serve = StartServe(*dir_ / "snap-1", "serve-1");
  ASSERT_TRUE(serve) << serve.error().message;
  testing::ServeProcess& s = **serve;
  const std::string uid = Uid("affine");
  ASSERT_FALSE(uid.empty());

  // gpufit's filter judges GPU room only: all three nodes have it.
  EXPECT_EQ(Filter(s, ApiPod("affine"), {"gpu-a", "gpu-b", "gpu-c"}), Json::array({"gpu-a", "gpu-b", "gpu-c"}));
  EXPECT_EQ(Bind(s, "affine", uid, "gpu-b"),
            "bind ml/affine to gpu-b: no term of the pod's required node affinity matches the node (1 terms)");
  EXPECT_EQ(Bind(s, "affine", uid, "gpu-c"),
            "bind ml/affine to gpu-c: the node's taint 'dedicated'='infer':NoSchedule is not tolerated");
  EXPECT_EQ(Bind(s, "affine", "0b5e55ed-0000-4000-8000-000000000000", "gpu-a"),
            "bind ml/affine: the API server's pod has UID '" + uid +
                "', the bind request '0b5e55ed-0000-4000-8000-000000000000' (not the pod scheduled)");
  EXPECT_EQ(NodeOf("affine"), "");
  EXPECT_EQ(Bind(s, "affine", uid, "gpu-a"), "");
  EXPECT_EQ(NodeOf("affine"), "gpu-a");
  // Each bind's log line names the node and the caller (its address and certificate's CN).
  EXPECT_THAT(s.Log(), HasSubstr(R"("client":"kube-scheduler","duration_s")"));
  EXPECT_THAT(
      s.Log(),
      ::testing::ContainsRegex(
          R"("node":"gpu-a","nodes":1,"peer":"127\.0\.0\.1:[0-9]+","pod":"ml/affine","status":200,"verb":"bind")"));
  // Bound now: the API server's pod is no longer pending.
  EXPECT_EQ(Bind(s, "affine", uid, "gpu-a"), "bind ml/affine: the pod is already bound to 'gpu-a'");

  Result<std::string> metrics = testing::ServeGet(s, tls_, "/metrics");
  ASSERT_TRUE(metrics) << metrics.error().message;
  EXPECT_EQ(testing::MetricValue(*metrics, R"(gpufit_extender_requests_total{verb="bind",outcome="not_bindable"})"), 4);
  EXPECT_EQ(testing::MetricValue(*metrics, R"(gpufit_extender_requests_total{verb="bind",outcome="ok"})"), 1);
}

// A caller that knows a pending pod's UID forges its filter request with a smaller GPU request;
// the bind reserves what the API server's pod asks (8 GPUs), which the 2-GPU node never has.
TEST_F(KubeBind, ForgedFilterCannotShrinkTheRequest) {
  KubeApi api(*plane_);
  ASSERT_TRUE(Ok(testing::CreateNodes(api, {ZoneNode("small", 2, "zone-a")})));
  ASSERT_TRUE(Ok(Create(GpuPod("eight", 8))));
  Result<std::unique_ptr<testing::ServeProcess>> serve = StartServe(*dir_ / "snap-2", "serve-2");
  ASSERT_TRUE(serve) << serve.error().message;
  Json forged = ApiPod("eight");
  for (const char* list : {"requests", "limits"})  // the API server copied the limit to requests
    forged["spec"]["containers"][0]["resources"][list]["nvidia.com/gpu"] = "1";
  EXPECT_EQ(Filter(**serve, forged, {"small"}), Json::array({"small"}));
  EXPECT_THAT(Bind(**serve, "eight", Uid("eight"), "small"),
              HasSubstr("bind ml/eight: node small can no longer take the pod: too few GPUs on the node"));
  EXPECT_EQ(NodeOf("eight"), "");
}

// Without a client certificate signed by --client-ca-file, the verbs answer 403 and nothing is
// bound; /healthz answers (kubelet's probes present no certificate).
TEST_F(KubeBind, ForgedFilterAndBindWithoutACertificateAreRefused) {
  KubeApi api(*plane_);
  ASSERT_TRUE(Ok(testing::CreateNodes(api, {ZoneNode("gpu-a", 8, "zone-a")})));
  ASSERT_TRUE(Ok(Create(GpuPod("victim", 1))));
  Result<std::unique_ptr<testing::ServeProcess>> serve = StartServe(*dir_ / "snap-3", "serve-3");
  ASSERT_TRUE(serve) << serve.error().message;
  testing::TlsFiles no_client = *tls_;
  no_client.client_cert.clear();
  Json forged = ApiPod("victim");
  EXPECT_EQ(Filter(**serve, forged, {"gpu-a"}, &no_client), "status 403");
  EXPECT_EQ(Bind(**serve, "victim", "", "gpu-a", &no_client), "status 403");
  EXPECT_EQ(Bind(**serve, "victim", Uid("victim"), "gpu-a", &no_client), "status 403");
  EXPECT_EQ(NodeOf("victim"), "");
  EXPECT_TRUE(testing::ServeGet(**serve, &no_client, "/healthz"));
  EXPECT_THAT((*serve)->Log(), HasSubstr(R"("status":403)"));
}

// Two nodes of 4 GPUs, eight 1-GPU pods. Four binds go out at once and serve is SIGKILLed as soon
// as the first Binding shows; serve starts again from the same snapshot (listed before any bind,
// as a sidecar's file can be), and every pod still pending is filtered and bound again, as
// kube-scheduler would. Without restart recovery the new serve sees eight idle GPUs and packs
// the pending pods onto the GPUs already bound; with it, each node ends with four pods.
TEST_F(KubeBind, SigkillAndRestartDuringBindsNeverBindsAGpuTwice) {
  KubeApi api(*plane_);
  ASSERT_TRUE(Ok(testing::CreateNodes(api, {ZoneNode("gpu-a", 4, "zone-a"), ZoneNode("gpu-b", 4, "zone-a")})));
  std::vector<std::string> pods;
  for (int k = 0; k < 8; ++k) {
    pods.push_back("p" + std::to_string(k));
    ASSERT_TRUE(Ok(Create(GpuPod(pods.back(), 1))));
  }
  const fs::path snap = *dir_ / "snap-4";
  Result<std::unique_ptr<testing::ServeProcess>> first = StartServe(snap, "serve-4a");
  ASSERT_TRUE(first) << first.error().message;
  for (int k = 0; k < 4; ++k) ASSERT_EQ(Filter(**first, ApiPod(pods[k]), {"gpu-a", "gpu-b"}).size(), 2u);
  std::vector<std::thread> binds;
  for (int k = 0; k < 4; ++k) binds.emplace_back([&, k] { Bind(**first, pods[k], Uid(pods[k]), "gpu-a"); });
  for (int i = 0; i < 200; ++i) {
    if (!NodeOf(pods[0]).empty() || !NodeOf(pods[1]).empty() || !NodeOf(pods[2]).empty() || !NodeOf(pods[3]).empty())
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  (*first)->Kill();
  for (std::thread& t : binds) t.join();
  int bound_before = 0;
  for (const std::string& p : pods) bound_before += NodeOf(p).empty() ? 0 : 1;
  EXPECT_GE(bound_before, 1);

  Result<std::unique_ptr<testing::ServeProcess>> second = StartServe(snap, "serve-4b", /*take_snapshot=*/false);
  ASSERT_TRUE(second) << second.error().message;
  EXPECT_THAT((*second)->Log(), HasSubstr(std::to_string(bound_before) + " bound there but not in"));
  for (const std::string& p : pods) {
    if (!NodeOf(p).empty()) continue;
    const Json kept = Filter(**second, ApiPod(p), {"gpu-a", "gpu-b"});
    ASSERT_TRUE(kept.is_array() && !kept.empty()) << p << ": " << kept.dump() << "\n" << (*second)->Log();
    // kube-scheduler binds to the node the extender ranks first; both are candidates here, and
    // gpufit's policy packs: the first node with room.
    EXPECT_EQ(Bind(**second, p, Uid(p), kept[0].get<std::string>()), "") << p;
  }
  std::map<std::string, int> per_node;
  for (const std::string& p : pods) ++per_node[NodeOf(p)];
  EXPECT_EQ(per_node, (std::map<std::string, int>{{"gpu-a", 4}, {"gpu-b", 4}}));
  // A ninth pod finds no GPU.
  ASSERT_TRUE(Ok(Create(GpuPod("p8", 1))));
  EXPECT_EQ(Filter(**second, ApiPod("p8"), {"gpu-a", "gpu-b"}), Json::array());
}

// deploy/kubernetes/ as the real API server takes it (server-side dry run: admission and
// validation, the NetworkPolicy and the Secret volume included), without a warning.
TEST_F(KubeBind, DeployManifestsPassServerSideDryRun) {
  ASSERT_TRUE(Ok(plane_->KubectlOk({"create", "namespace", "gpufit-system"})));
  const testing::CommandResult r =
      plane_->Kubectl({"apply", "--dry-run=server", "-f", gpufit::test_paths::SourcePath("deploy/kubernetes")});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("networkpolicy.networking.k8s.io/gpufit-extender created (server dry run)"));
  EXPECT_THAT(r.out, HasSubstr("deployment.apps/gpufit-extender created (server dry run)"));
  EXPECT_EQ(r.err, "");
}

}  // namespace
}  // namespace gpufit::e2e
