// Issue 41, "the first run takes no flags": `gpufit plan` with only a kubeconfig finds the
// cluster's Prometheus by its Service's labels (ingest/kube_api/metrics_service.h) on a real
// kube-apiserver (tests/support/kube_control_plane.h) and reads the real Prometheus fixture
// (GenTD26's pods, tests/support/dcgm_fixture.h) through the API server's service proxy, with the
// kubeconfig's client certificate; the plan equals the one of --prometheus URL --gpu X.
//
// The Service has no selector: its EndpointSlice, written by the test, points at the fixture
// through a pod whose status (written by the test: no kubelet) has the fixture's address. The API server refuses to
// proxy to loopback and link-local addresses, so the fixture listens on this machine's first non-loopback IPv4 address
// (`hostname -I`); without one, the suite fails and says so.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.h"
#include "dcgm_fixture.h"
#include "kube_control_plane.h"
#include "prometheus_server.h"

namespace {

namespace fs = std::filesystem;
using gpufit::e2e::CliRun;
using gpufit::e2e::GenTd26;
using gpufit::e2e::Gpufit;
using gpufit::e2e::Scratch;
using gpufit::testing::KubeControlPlane;
using gpufit::testing::PrometheusServer;
using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

// This machine's first IPv4 address outside 127.0.0.0/8 and 169.254.0.0/16, or "".
std::string NonLoopbackAddress() {
  const gpufit::testing::CommandResult r = gpufit::testing::RunCommand({"hostname", "-I"});
  std::istringstream words(r.out);
  for (std::string a; words >> a;)
    if (a.find(':') == std::string::npos && a.rfind("127.", 0) != 0 && a.rfind("169.254.", 0) != 0) return a;
  return "";
}

// A Service `name` in `ns` with `labels` and one port 9090 named http-web, with no selector.
Json Service(const std::string& ns, const std::string& name, const Json& labels, int port) {
  const Json service_port = {{"name", "http-web"}, {"port", 9090}, {"targetPort", port > 0 ? port : 9090}};
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", {{"name", name}, {"namespace", ns}, {"labels", labels}}},
          {"spec", {{"ports", Json::array({service_port})}}}};
}

// The EndpointSlice of that Service at host:port. The API server proxies only to an endpoint whose
// targetRef is a Pod with that IP in its status.podIPs (storage.go's isValidAddress).
Json EndpointSlice(const std::string& ns, const std::string& name, const std::string& host, int port) {
  const Json endpoint = {{"addresses", Json::array({host})},
                         {"conditions", {{"ready", true}}},
                         {"targetRef", {{"kind", "Pod"}, {"name", name + "-0"}, {"namespace", ns}}}};
  return {{"apiVersion", "discovery.k8s.io/v1"},
          {"kind", "EndpointSlice"},
          {"metadata", {{"name", name + "-1"}, {"namespace", ns}, {"labels", {{"kubernetes.io/service-name", name}}}}},
          {"addressType", "IPv4"},
          {"ports", Json::array({{{"name", "http-web"}, {"port", port}, {"protocol", "TCP"}}})},
          {"endpoints", Json::array({endpoint})}};
}

// The pod NAME-0 that the EndpointSlice names.
Json Pod(const std::string& ns, const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name + "-0"}, {"namespace", ns}}},
          {"spec", {{"containers", Json::array({{{"name", "prometheus"}, {"image", "prom/prometheus"}}})}}}};
}

class KubeDiscovery : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(Scratch("kube-discovery"));
    host_ = new std::string(NonLoopbackAddress());
    if (host_->empty()) {
      error_ = new std::string(
          "no IPv4 address outside loopback and link-local on this machine (hostname -I): the API server proxies "
          "to no other, so the fixture cannot be reached through it");
      return;
    }
    if (!fs::exists(GenTd26())) {
      no_data_ = true;  // skipped, as every test that reads the traces is without them
      return;
    }
    auto fixture = gpufit::testing::MakeDcgmFixture(GenTd26(), 30, 6);
    if (!fixture) {
      error_ = new std::string(fixture.error().message);
      return;
    }
    range_ =
        new std::string(fmt::format("--since {} --until {} --step 60s", static_cast<long long>(fixture->since_s) - 60,
                                    static_cast<long long>(fixture->until_s)));
    fs::create_directories(*dir_ / "prometheus");
    auto prometheus = PrometheusServer::Start(fixture->openmetrics, (*dir_ / "prometheus").string(),
                                              {.web_config_yaml = "", .https = false, .host = *host_});
    if (!prometheus) {
      error_ = new std::string(prometheus.error().message);
      return;
    }
    prometheus_ = prometheus->release();
    auto plane = KubeControlPlane::Start((*dir_ / "plane").string());
    if (!plane) {
      error_ = new std::string(plane.error().message);
      return;
    }
    plane_ = plane->release();
    for (const char* ns : {"monitoring", "a-thanos"})
      if (auto ok = plane_->KubectlOk({"create", "namespace", ns}); !ok) {
        error_ = new std::string(ok.error().message);
        return;
      }
  }
  static void TearDownTestSuite() {
    delete plane_;
    delete prometheus_;
    delete error_;
    delete host_;
    delete range_;
    if (dir_ != nullptr && !HasFailure()) fs::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    if (no_data_) GTEST_SKIP() << "no " << GenTd26() << " (GPUFIT_DATA): the fixture is made from it";
    ASSERT_EQ(error_, nullptr) << *error_;
    ASSERT_NE(plane_, nullptr);
  }
  void TearDown() override {  // each test starts from a cluster with no metrics service
    if (plane_ == nullptr) return;
    for (const char* ns : {"monitoring", "a-thanos"})
      for (const char* kind : {"services", "pods", "endpointslices"})
        (void)plane_->KubectlOk({"delete", kind, "--all", "-n", ns});
  }
  // The Service; with `port` > 0 also its pod, running at host_ (no kubelet: the test writes
  // its status), and its EndpointSlice at host_:port.
  static void Create(const std::string& ns, const std::string& name, const Json& labels, int port) {
    auto ok = plane_->KubectlOk({"create", "-f", "-"}, Service(ns, name, labels, port).dump());
    ASSERT_TRUE(ok) << ok.error().message;
    if (port <= 0) return;
    ok = plane_->KubectlOk({"create", "-f", "-"}, Pod(ns, name).dump());
    ASSERT_TRUE(ok) << ok.error().message;
    ok = plane_->KubectlOk({"get", "pod", "-n", ns, name + "-0", "-o", "json"});
    ASSERT_TRUE(ok) << ok.error().message;
    Json pod = Json::parse(*ok);
    pod["status"]["phase"] = "Running";
    pod["status"]["podIP"] = *host_;
    pod["status"]["podIPs"] = Json::array({{{"ip", *host_}}});
    ok = plane_->KubectlOk({"replace", "--subresource=status", "-f", "-"}, pod.dump());
    ASSERT_TRUE(ok) << ok.error().message;
    ok = plane_->KubectlOk({"create", "-f", "-"}, EndpointSlice(ns, name, *host_, port).dump());
    ASSERT_TRUE(ok) << ok.error().message;
  }
  static int PrometheusPort() { return std::stoi(prometheus_->url().substr(prometheus_->url().rfind(':') + 1)); }
  static std::string ProxyUrl(const std::string& ns, const std::string& name) {
    return fmt::format("{}/api/v1/namespaces/{}/services/http:{}:9090/proxy", plane_->server(), ns, name);
  }

  static fs::path* dir_;
  static std::string* host_;
  static std::string* range_;
  static PrometheusServer* prometheus_;
  static KubeControlPlane* plane_;
  static std::string* error_;
  static bool no_data_;
};
fs::path* KubeDiscovery::dir_ = nullptr;
std::string* KubeDiscovery::host_ = nullptr;
std::string* KubeDiscovery::range_ = nullptr;
PrometheusServer* KubeDiscovery::prometheus_ = nullptr;
KubeControlPlane* KubeDiscovery::plane_ = nullptr;
std::string* KubeDiscovery::error_ = nullptr;
bool KubeDiscovery::no_data_ = false;

// `j` with every string's occurrences of `names` replaced by "<prometheus>".
Json WithoutSource(Json j, const std::vector<std::string>& names) {
  if (j.is_object() || j.is_array()) {
    for (Json& v : j) v = WithoutSource(v, names);
  } else if (j.is_string()) {
    std::string s = j.get<std::string>();
    for (const std::string& n : names)
      for (std::size_t at = s.find(n); at != std::string::npos; at = s.find(n)) s.replace(at, n.size(), "<prometheus>");
    return s;
  }
  return j;
}

TEST_F(KubeDiscovery, OnlyAKubeconfigGivesThePlanOfTheExplicitFlags) {
  Create("monitoring", "kps-prometheus", {{"app", "kube-prometheus-stack-prometheus"}}, PrometheusPort());
  const fs::path dir = Scratch("kube-discovery-plan");
  const std::string common = " --search-budget 0 -f json " + *range_;
  const CliRun explicit_flags = Gpufit(
      "plan --kubeconfig " + plane_->kubeconfig() + " --prometheus " + prometheus_->url() + " --gpu h100-80gb" + common,
      dir);
  ASSERT_EQ(explicit_flags.exit_code, 0) << explicit_flags.err;
  // The first run: the kubeconfig from $KUBECONFIG, no other input flag.
  ASSERT_EQ(setenv("KUBECONFIG", plane_->kubeconfig().c_str(), 1), 0);
  const CliRun discovered = Gpufit("plan" + common, dir);
  unsetenv("KUBECONFIG");
  ASSERT_EQ(discovered.exit_code, 0) << discovered.err;
  const std::string proxy = ProxyUrl("monitoring", "kps-prometheus");
  const Json a = WithoutSource(Json::parse(explicit_flags.out), {prometheus_->url()});
  const Json b = WithoutSource(Json::parse(discovered.out), {proxy});
  EXPECT_EQ(a, b) << "diff: " << Json::diff(a, b).dump(1);
  // The discovered plan did read the data through the proxy.
  EXPECT_THAT(discovered.out, HasSubstr(proxy));
  EXPECT_THAT(a.dump(), HasSubstr("sd-"));
  // What was discovered, each with its flag.
  EXPECT_THAT(discovered.err, HasSubstr("cluster     " + plane_->server()));
  EXPECT_THAT(discovered.err,
              HasSubstr("Prometheus monitoring/kps-prometheus:9090 (app=kube-prometheus-stack-prometheus), through "
                        "the API server's service proxy: " +
                        proxy + "  [--prometheus URL]"));
  EXPECT_THAT(discovered.err, HasSubstr("[--since, --until, --step]"));
  EXPECT_THAT(discovered.err, HasSubstr("target h100-80gb, the model most pods run on  [--gpu]"));
  EXPECT_THAT(discovered.err, Not(HasSubstr("also found")));
}

// The scope and the client's limits override a discovered Prometheus as they do a named one:
// --namespace genai keeps the fixture's pods, --namespace elsewhere reads no series.
TEST_F(KubeDiscovery, ScopeFlagsApplyToTheDiscoveredPrometheus) {
  Create("monitoring", "kps-prometheus", {{"app", "kube-prometheus-stack-prometheus"}}, PrometheusPort());
  const fs::path dir = Scratch("kube-discovery-scope");
  const std::string common = "plan --kubeconfig " + plane_->kubeconfig() +
                             " --search-budget 0 -f json --prometheus-timeout 20 --prometheus-retries 1 " + *range_;
  const CliRun all = Gpufit(common, dir);
  ASSERT_EQ(all.exit_code, 0) << all.err;
  const CliRun genai = Gpufit(common + " --namespace genai --selector 'container=\"sd\"'", dir);
  ASSERT_EQ(genai.exit_code, 0) << genai.err;
  EXPECT_EQ(Json::parse(genai.out)["pods"].size(), Json::parse(all.out)["pods"].size());
  EXPECT_GT(Json::parse(genai.out)["pods"].size(), 0u);
  const CliRun elsewhere = Gpufit(common + " --namespace elsewhere", dir);
  EXPECT_EQ(elsewhere.exit_code, 2) << elsewhere.err;
  EXPECT_THAT(elsewhere.err, Not(HasSubstr("requires --prometheus")));
  EXPECT_THAT(elsewhere.err, HasSubstr("no DCGM_FI_DEV_FB_USED series"));
}

TEST_F(KubeDiscovery, NoMetricsServiceIsExit2NamingPrometheus) {
  // A Service with other labels is not taken.
  Create("monitoring", "grafana", {{"app", "grafana"}}, PrometheusPort());
  const CliRun r = Gpufit("plan --kubeconfig " + plane_->kubeconfig() + " " + *range_, Scratch("kube-discovery-none"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("no Prometheus found in the cluster " + plane_->server()));
  EXPECT_THAT(r.err, HasSubstr("--prometheus URL"));
  EXPECT_THAT(r.err, HasSubstr("app=kube-prometheus-stack-prometheus"));
  EXPECT_THAT(r.err, HasSubstr("app.kubernetes.io/name=vmsingle"));
}

// An empty $KUBECONFIG is no list, as kubectl reads it: ~/.kube/config is the default.
TEST_F(KubeDiscovery, AnEmptyKubeconfigVariableFallsBackToHomeKubeConfig) {
  const fs::path home = Scratch("kube-discovery-home");
  fs::create_directories(home / ".kube");
  fs::copy_file(plane_->kubeconfig(), home / ".kube" / "config");
  const char* old_home = std::getenv("HOME");
  const std::string saved_home = old_home != nullptr ? old_home : "";
  ASSERT_EQ(setenv("HOME", home.c_str(), 1), 0);
  ASSERT_EQ(setenv("KUBECONFIG", "", 1), 0);
  const CliRun r = Gpufit("plan " + *range_, home);
  unsetenv("KUBECONFIG");
  if (old_home != nullptr) setenv("HOME", saved_home.c_str(), 1);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("no Prometheus found in the cluster " + plane_->server()));
}

TEST_F(KubeDiscovery, TwoCandidatesTakeTheHigherPriority) {
  // Thanos Query comes first in the API server's list (namespace a-thanos), Prometheus first by
  // priority; Thanos's endpoints lead nowhere, so only the right choice can plan.
  Create("a-thanos", "thanos-query", {{"app.kubernetes.io/name", "thanos-query"}}, 0);
  Create("monitoring", "prometheus-server", {{"app", "prometheus-server"}}, PrometheusPort());
  const CliRun r = Gpufit("plan --kubeconfig " + plane_->kubeconfig() + " --search-budget 0 -f json " + *range_,
                          Scratch("kube-discovery-two"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("metrics     Prometheus monitoring/prometheus-server:9090 (app=prometheus-server)"));
  EXPECT_THAT(r.err, HasSubstr("also found, not used: Thanos Query a-thanos/thanos-query:9090 "
                               "(app.kubernetes.io/name=thanos-query)"));
  EXPECT_THAT(r.out, HasSubstr(ProxyUrl("monitoring", "prometheus-server")));
}

TEST_F(KubeDiscovery, AServiceWithNoEndpointsIsAnErrorNamingIt) {
  Create("monitoring", "vmsingle", {{"app.kubernetes.io/name", "vmsingle"}}, 0);
  const CliRun r =
      Gpufit("plan --kubeconfig " + plane_->kubeconfig() + " " + *range_, Scratch("kube-discovery-no-endpoints"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("the discovered VictoriaMetrics monitoring/vmsingle:9090 "
                               "(app.kubernetes.io/name=vmsingle) does not answer as Prometheus"));
  EXPECT_THAT(r.err, HasSubstr("503"));
}

}  // namespace
