// The bind verb over HTTP, binding through ApiServerBinder to a stand-in for the API server's
// pods/binding subresource on loopback (no kube-apiserver runs on these machines; the Binding
// it receives is checked field by field here and against the Kubernetes schema in
// tests/e2e/serve_e2e_test.cpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "gpufit/core/test_support.h"
#include "gpufit/ingest/kube/kube_reader.h"
#include "gpufit/serve/api_binder.h"
#include "gpufit/serve/http_server.h"
#include "serve_fixture.h"
#include "tls_fixture.h"

namespace gpufit::serve {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;
using testing::NodeJson;
using testing::PodJson;

// POST /api/v1/namespaces/{ns}/pods/{name}/binding: records the request and answers `status`
// (201 with the Binding, else a v1 Status with `message`).
class ApiStandIn {
 public:
  struct Call {
    std::string path, authorization, body;
  };
  explicit ApiStandIn(int status = 201, std::string message = "") : status_(status), message_(std::move(message)) {
    if (status_ == 0) {  // never answers in time: waits 3 s, then 201
      status_ = 201;
      delay_ms_ = 3000;
    }
    http_.Post(R"(/api/v1/namespaces/([^/]+)/pods/([^/]+)/binding)", [this](const httplib::Request& req,
                                                                              httplib::Response& res) {
      {
        const std::lock_guard lock(mu_);
        calls_.push_back({req.path, req.get_header_value("Authorization"), req.body});
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_.load()));
      res.status = status_.load();
      res.set_content(status_.load() == 201 ? req.body
                                     : Json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
                                            {"message", message_}, {"code", status_.load()}}
                                           .dump(),
                      "application/json");
    });
    port_ = http_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { http_.listen_after_bind(); });
    while (!http_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~ApiStandIn() {
    http_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void Answer(int status) {
    status_ = status;
    delay_ms_ = 0;
  }
  std::vector<Call> calls() {
    const std::lock_guard lock(mu_);
    return calls_;
  }

 private:
  std::atomic<int> status_;
  std::atomic<int> delay_ms_{0};
  std::string message_;
  httplib::Server http_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Call> calls_;
};

// n1: 2 GPUs; n2: 1 GPU, taken by a running pod. HTTPS with client certificates (bind is not
// served over plain HTTP); the client presents kube-scheduler's.
class BindServed {
 public:
  explicit BindServed(std::function<Result<void>(const BindingArgs&)> bind) : tls_(testing::MakeTestTls(dir_.path())) {
    EXPECT_TRUE(tls_.ok);
    const Json nodes = testing::ListOf({NodeJson("n1", 32, "64Gi", 2, "A100"), NodeJson("n2", 4, "32Gi", 1, "A100")},
                                       "NodeList");
    std::vector<KubePod> pods{*ParseKubePod(PodJson("full", "4", "8Gi", 1, "n2"), "pods")};
    auto e = Extender::FromSnapshot(*ParseKubeNodes(nodes, "nodes"), pods, {});
    EXPECT_TRUE(e) << e.error().message;
    server_ = std::make_unique<ExtenderServer>(std::move(*e), ServerOptions{.bind = {.verify = {}, .bind = std::move(bind)},
                                                                            .tls_cert_file = tls_.server_cert,
                                                                            .tls_key_file = tls_.server_key,
                                                                            .client_ca_file = tls_.ca});
    const Result<void> bound = server_->Bind();
    EXPECT_TRUE(bound) << bound.error().message;
    thread_ = std::thread([this] { server_->Serve(); });
  }
  ~BindServed() {
    server_->Stop();
    thread_.join();
  }
  httplib::Client Client() const {
    httplib::Client c("https://127.0.0.1:" + std::to_string(server_->port()), tls_.client_cert, tls_.client_key);
    c.enable_server_certificate_verification(false);
    return c;
  }
  // The filter answer for a 1-GPU pod `pod` over n1 and n2.
  Json Filter(const std::string& pod) const {
    const auto r = Client().Post(
        "/filter", Json{{"Pod", PodJson(pod, "1", "1Gi", 1)}, {"NodeNames", {"n1", "n2"}}}.dump(), "application/json");
    return r && r->status == 200 ? Json::parse(r->body) : Json();
  }
  // The bind answer's Error ("" when bound), or "no answer".
  std::string Bind(const std::string& pod, const std::string& node) const {
    const Json args{{"PodName", pod}, {"PodNamespace", "ml"}, {"PodUID", "uid-" + pod}, {"Node", node}};
    const auto r = Client().Post("/bind", args.dump(), "application/json");
    if (!r || r->status != 200) return "no answer";
    return Json::parse(r->body).at("Error").get<std::string>();
  }
  std::string Metrics() const {
    const auto m = Client().Get("/metrics");
    return m ? m->body : "";
  }

 private:
  gpufit::testing::TempDir dir_;
  testing::TestTls tls_;
  std::unique_ptr<ExtenderServer> server_;
  std::thread thread_;
};

// The Binding kube-scheduler's default binder would create (default_binder.go): the pod's name,
// namespace and UID, and a Target of kind Node.
TEST(Bind, CreatesTheBindingWithTheTokenAndExactlyOneWinsTheLastGpu) {
  ApiStandIn api;
  gpufit::testing::TempDir dir;
  const std::string token = dir.Write("token", "s3cr3t\n");
  const Result<ApiServerBinder> binder = ApiServerBinder::Make({.url = api.url(), .token_file = token});
  ASSERT_TRUE(binder) << binder.error().message;
  BindServed s([&](const BindingArgs& a) { return binder->Bind(a); });

  for (const std::string pod : {"a", "b", "c"}) ASSERT_EQ(s.Filter(pod)["NodeNames"], Json::array({"n1"})) << pod;
  EXPECT_EQ(s.Bind("a", "n1"), "");
  // b and c race for n1's last GPU.
  std::string answers[2];
  std::atomic<bool> go{false};
  std::thread tb([&] {
    while (!go) std::this_thread::yield();
    answers[0] = s.Bind("b", "n1");
  });
  std::thread tc([&] {
    while (!go) std::this_thread::yield();
    answers[1] = s.Bind("c", "n1");
  });
  go = true;
  tb.join();
  tc.join();
  const int winners = (answers[0].empty() ? 1 : 0) + (answers[1].empty() ? 1 : 0);
  EXPECT_EQ(winners, 1) << answers[0] << " | " << answers[1];
  const std::string& loss = answers[0].empty() ? answers[1] : answers[0];
  EXPECT_THAT(loss, HasSubstr("node n1 can no longer take the pod: too few idle GPUs"));

  const std::vector<ApiStandIn::Call> calls = api.calls();
  ASSERT_EQ(calls.size(), 2U);  // a and the winner; the loser never reached the API server
  EXPECT_EQ(calls[0].path, "/api/v1/namespaces/ml/pods/a/binding");
  EXPECT_EQ(calls[0].authorization, "Bearer s3cr3t");
  EXPECT_EQ(Json::parse(calls[0].body), Json::parse(R"({"apiVersion": "v1", "kind": "Binding",
      "metadata": {"name": "a", "namespace": "ml", "uid": "uid-a"},
      "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}})"));
  // The extender's own decisions are its state: n1 is now full.
  EXPECT_EQ(s.Filter("d")["FailedNodes"], Json::parse(R"({"n1": "too few idle GPUs", "n2": "too few idle GPUs"})"));
  EXPECT_THAT(s.Metrics(), HasSubstr("gpufit_extender_requests_total{verb=\"bind\",outcome=\"ok\"} 2\n"));
  EXPECT_THAT(s.Metrics(), HasSubstr("gpufit_extender_requests_total{verb=\"bind\",outcome=\"no_room\"} 1\n"));
}

// A Binding the API server refuses for certain (403: no RBAC) gives the GPU back, and the answer
// carries the Status message.
TEST(Bind, RefusedBindingReleasesTheGpu) {
  ApiStandIn api(403, "pods \"a\" is forbidden: cannot create resource \"pods/binding\"");
  const Result<ApiServerBinder> binder = ApiServerBinder::Make({.url = api.url()});
  ASSERT_TRUE(binder) << binder.error().message;
  BindServed s([&](const BindingArgs& a) { return binder->Bind(a); });
  ASSERT_EQ(s.Filter("a")["NodeNames"], Json::array({"n1"}));
  EXPECT_THAT(s.Bind("a", "n1"), HasSubstr("the API server answered 403: pods \"a\" is forbidden"));
  EXPECT_EQ(api.calls().size(), 1U);
  EXPECT_EQ(api.calls()[0].authorization, "");  // no token file, no header
  // Both of n1's GPUs are still free: a 2-GPU pod fits.
  const auto r = s.Client().Post(
      "/filter", Json{{"Pod", PodJson("big", "1", "1Gi", 2)}, {"NodeNames", {"n1"}}}.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(Json::parse(r->body)["NodeNames"], Json::array({"n1"}));
  EXPECT_THAT(s.Metrics(), HasSubstr("gpufit_extender_requests_total{verb=\"bind\",outcome=\"api_refused\"} 1\n"));
}

// A Binding whose outcome is unknown (no answer in time; 409, 5xx) may exist: the pod keeps its
// GPU (the safe side: nothing else lands on it), and its next bind replaces the reservation.
TEST(Bind, UnknownOutcomeKeepsTheGpuUntilTheNextBind) {
  ApiStandIn api(0);  // answers 201, but only after 3 s
  const Result<ApiServerBinder> binder = ApiServerBinder::Make({.url = api.url(), .timeout_s = 1});
  ASSERT_TRUE(binder) << binder.error().message;
  BindServed s([&](const BindingArgs& a) { return binder->Bind(a); });
  auto fits_two = [&] {
    const auto r = s.Client().Post(
        "/filter", Json{{"Pod", PodJson("big", "1", "1Gi", 2)}, {"NodeNames", {"n1"}}}.dump(), "application/json");
    return r && Json::parse(r->body)["NodeNames"] == Json::array({"n1"});
  };
  ASSERT_EQ(s.Filter("a")["NodeNames"], Json::array({"n1"}));
  EXPECT_THAT(s.Bind("a", "n1"), HasSubstr("no answer within 1 s"));
  EXPECT_FALSE(fits_two());  // a's GPU is still counted
  api.Answer(409);
  EXPECT_THAT(s.Bind("a", "n1"), HasSubstr("the API server answered 409"));
  EXPECT_FALSE(fits_two());
  api.Answer(201);
  EXPECT_EQ(s.Bind("a", "n1"), "");  // the third attempt replaces the uncertain reservation
  EXPECT_FALSE(fits_two());
  EXPECT_THAT(s.Bind("a", "n1"), HasSubstr("already bound by gpufit to node n1"));
  EXPECT_THAT(s.Metrics(), HasSubstr("gpufit_extender_requests_total{verb=\"bind\",outcome=\"api_unknown\"} 2\n"));
  EXPECT_THAT(s.Metrics(), HasSubstr("gpufit_extender_requests_total{verb=\"bind\",outcome=\"already_bound\"} 1\n"));
}

TEST(Bind, UnreachableApiServerAndNoBinderAreErrors) {
  // A port nothing listens on: the stand-in's, after it stopped.
  std::string url;
  {
    ApiStandIn gone;
    url = gone.url();
  }
  const Result<ApiServerBinder> binder = ApiServerBinder::Make({.url = url, .timeout_s = 2});
  ASSERT_TRUE(binder);
  BindServed s([&](const BindingArgs& a) { return binder->Bind(a); });
  ASSERT_EQ(s.Filter("a")["NodeNames"], Json::array({"n1"}));
  EXPECT_THAT(s.Bind("a", "n1"), HasSubstr("bind ml/a: cannot connect to " + url));
  EXPECT_TRUE(s.Filter("b")["NodeNames"] == Json::array({"n1"}));  // nothing was sent: the GPU went back
  EXPECT_THAT(s.Bind("never", "n1"), HasSubstr("no filter request named this pod"));
  EXPECT_THAT(s.Metrics(), HasSubstr("gpufit_extender_requests_total{verb=\"bind\",outcome=\"unknown_pod\"} 1\n"));
  EXPECT_THAT(s.Bind("a", "n9"), HasSubstr("node n9 is not in gpufit's snapshot"));

  BindServed off(nullptr);
  EXPECT_THAT(off.Bind("a", "n1"), HasSubstr("binds only with an API server to bind through (--kube-api)"));
  const auto bad = off.Client().Post("/bind", R"({"PodName": 3})", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_THAT(Json::parse(bad->body)["Error"].get<std::string>(), HasSubstr("bind request: .PodName: expected a string"));
}

TEST(Bind, BinderRefusesBadUrlsFilesAndNames) {
  for (const std::string url : {"ftp://x", "http://", "https://api:6443/prefix", "api:6443"}) {
    const Result<ApiServerBinder> b = ApiServerBinder::Make({.url = url});
    ASSERT_FALSE(b) << url;
    EXPECT_THAT(b.error().message, HasSubstr("--kube-api: expected http(s)://host[:port] without a path"));
  }
  const Result<ApiServerBinder> no_token = ApiServerBinder::Make({.url = "http://127.0.0.1:1", .token_file = "/nonexistent/token"});
  ASSERT_FALSE(no_token);
  EXPECT_THAT(no_token.error().message, HasSubstr("--kube-token-file: /nonexistent/token: cannot read the API token"));
  // A token goes over http:// only to loopback (kubectl proxy); elsewhere it would cross in clear.
  const Result<ApiServerBinder> clear = ApiServerBinder::Make({.url = "http://10.0.0.1:8001", .token_file = "/t"});
  ASSERT_FALSE(clear);
  EXPECT_EQ(clear.error().message,
            "--kube-token-file with an http:// --kube-api (http://10.0.0.1:8001) would send the token in clear text: "
            "use https:// (http:// only on loopback, e.g. kubectl proxy)");
  const Result<ApiServerBinder> ok = ApiServerBinder::Make({.url = "http://127.0.0.1:1"});
  ASSERT_TRUE(ok);
  const Result<void> path = ok->Bind({.pod_name = "../../nodes/x", .pod_namespace = "ml", .pod_uid = "", .node = "n1"});
  ASSERT_FALSE(path);
  EXPECT_THAT(path.error().message, HasSubstr("must be DNS-1123 subdomains"));
}

}  // namespace
}  // namespace gpufit::serve
