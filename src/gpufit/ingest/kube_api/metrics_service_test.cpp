// FindMetricsServices on a Service list written here (a loopback server answering every GET with
// it): which Services match which selector, in what order, and the URL of each way in. A real
// API server's list and its service proxy: tests/e2e/kube_discovery_e2e_test.cpp.
#include "gpufit/ingest/kube_api/metrics_service.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <thread>

namespace gpufit::kube_api {
namespace {

using Json = nlohmann::json;

Json ServiceItem(const std::string& ns, const std::string& name, const Json& labels, const Json& ports) {
  return {{"metadata", {{"namespace", ns}, {"name", name}, {"labels", labels}}}, {"spec", {{"ports", ports}}}};
}

TEST(FindMetricsServices, MatchesEveryLabelOfASelectorAndOrdersByPriority) {
  const Json port9090 = Json::array({{{"name", "web"}, {"port", 9090}}, {{"name", "reloader"}, {"port", 8080}}});
  Json items = Json::array();
  items.push_back(ServiceItem("a", "grafana", {{"app", "grafana"}}, port9090));
  // One of app=prometheus,component=server's two labels: no match.
  items.push_back(ServiceItem("a", "half", {{"app", "prometheus"}}, port9090));
  items.push_back(ServiceItem("a", "thanos", {{"app.kubernetes.io/name", "thanos-query"}}, port9090));
  items.push_back(ServiceItem("b", "vm", {{"app", "vmselect"}}, Json::array({{{"port", 8481}}})));
  items.push_back(ServiceItem("z", "prom", {{"app", "prometheus"}, {"component", "server"}, {"x", "y"}},
                              Json::array({{{"port", 80}}})));
  items.push_back(ServiceItem("c", "no-ports", {{"app", "prometheus-server"}}, Json::array()));
  items.push_back({{"metadata", {{"name", "odd"}, {"namespace", 5}, {"labels", nullptr}}}, {"spec", 1}});
  const std::string answer = Json{{"kind", "ServiceList"}, {"items", items}, {"metadata", Json::object()}}.dump();

  httplib::Server server;
  server.Get(".*",
             [&](const httplib::Request&, httplib::Response& res) { res.set_content(answer, "application/json"); });
  const int port = server.bind_to_any_port("127.0.0.1");
  std::thread thread([&] { server.listen_after_bind(); });
  while (!server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  KubeConnection c;
  c.server = "http://127.0.0.1:" + std::to_string(port);
  c.source = "test";
  const Result<KubeClient> client = KubeClient::Make(c);
  ASSERT_TRUE(client) << client.error().message;
  const Result<std::vector<MetricsService>> found = FindMetricsServices(*client);
  server.stop();
  thread.join();
  ASSERT_TRUE(found) << found.error().message;
  ASSERT_EQ(found->size(), 3u);
  EXPECT_EQ((*found)[0].Describe(), "Prometheus z/prom:80 (app=prometheus,component=server)");
  EXPECT_EQ((*found)[1].Describe(), "Thanos Query a/thanos:9090 (app.kubernetes.io/name=thanos-query)");
  EXPECT_EQ((*found)[2].Describe(), "VictoriaMetrics b/vm:8481 (app=vmselect)");
  EXPECT_EQ(MetricsServiceUrl((*found)[1], "https://10.0.0.1:6443/", false),
            "https://10.0.0.1:6443/api/v1/namespaces/a/services/http:thanos:9090/proxy");
  EXPECT_EQ(MetricsServiceUrl((*found)[1], "https://10.0.0.1:6443", true), "http://thanos.a.svc:9090");
  EXPECT_EQ(MetricsServiceUrl((*found)[2], "https://10.0.0.1:6443", false),
            "https://10.0.0.1:6443/api/v1/namespaces/b/services/http:vm:8481/proxy/select/0/prometheus");
  EXPECT_EQ(MetricsServiceUrl((*found)[2], "https://10.0.0.1:6443", true), "http://vm.b.svc:8481/select/0/prometheus");
}

}  // namespace
}  // namespace gpufit::kube_api
