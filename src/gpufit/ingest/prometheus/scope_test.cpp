// --namespace/--selector (PrometheusOptions::ScopeMatchers) reach the pod-level queries of the
// training, network and serving readers, and not the node-level ones (kube_node_*, node exporter,
// Karpenter). A fake server records every query and answers an empty matrix; what it records is
// checked against the matchers written by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <mutex>
#include <string>
#include <vector>

#include "gpufit/ingest/prometheus/network.h"
#include "gpufit/ingest/prometheus/serving.h"
#include "gpufit/ingest/prometheus/training.h"
#include "prometheus_server.h"

namespace gpufit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr double kT0 = 1767225600;  // 2026-01-01T00:00:00Z
constexpr const char* kScope = R"(pod="pt-0",namespace="ml")";

struct Recorder {
  std::mutex mu;
  std::vector<std::string> queries;
  testing::FakeHttpServer server{[this](const httplib::Request& req, httplib::Response& res) {
    {
      const std::lock_guard<std::mutex> lock(mu);
      queries.push_back(req.get_param_value("query"));
    }
    res.set_content(R"({"status":"success","data":{"resultType":"matrix","result":[]}})", "application/json");
  }};
  PrometheusOptions Options() {
    PrometheusOptions o;
    o.url = server.url();
    o.timeout_s = 5;
    o.retries = 0;
    o.namespaces = {"ml"};
    o.selector = {{.label = "pod", .op = "=", .value = "pt-0"}};
    return o;
  }
  // The recorded queries that mention `metric`.
  std::vector<std::string> Of(const std::string& metric) {
    std::vector<std::string> out;
    for (const std::string& q : queries)
      if (q.find(metric) != std::string::npos) out.push_back(q);
    return out;
  }
};

const TelemetryRange kRange{.since_s = kT0, .until_s = kT0 + 3600, .step_s = 60};

TEST(PrometheusScope, TrainingPodSeriesAreScopedNodeSeriesAreNot) {
  Recorder r;
  ASSERT_TRUE(ReadPrometheusClusterState(r.Options(), kRange));
  const auto pod = r.Of("kube_pod_container_resource_requests");
  ASSERT_EQ(pod.size(), 1U);
  EXPECT_THAT(pod[0], HasSubstr(std::string("{resource=\"nvidia_com_gpu\",") + kScope + "}"));
  const auto node = r.Of("kube_node_labels");
  ASSERT_EQ(node.size(), 1U);
  EXPECT_THAT(node[0], Not(HasSubstr("pt-0")));
}

TEST(PrometheusScope, NetworkPodCountersAndPodNodesAreScopedLinksAreNot) {
  Recorder r;
  Telemetry t;
  t.start_s = kT0 + 60;
  t.step_s = 60;
  t.samples = 60;
  ASSERT_TRUE(ReadPrometheusNetwork(r.Options(), kRange, t, {}));
  const auto rx = r.Of("container_network_receive_bytes_total");
  ASSERT_EQ(rx.size(), 1U);
  EXPECT_THAT(rx[0], HasSubstr(std::string("{pod!=\"\",interface!=\"lo\",") + kScope + "}"));
  const auto info = r.Of("kube_pod_info");
  ASSERT_EQ(info.size(), 1U);
  EXPECT_THAT(info[0], HasSubstr(std::string("{node!=\"\",") + kScope + "}"));
  for (const char* m : {"node_network_speed_bytes", "node_uname_info"}) {
    const auto q = r.Of(m);
    ASSERT_EQ(q.size(), 1U) << m;
    EXPECT_THAT(q[0], Not(HasSubstr("pt-0"))) << m;
  }
}

TEST(PrometheusScope, ServingEngineDiscoveryIsScoped) {
  Recorder r;
  ASSERT_TRUE(ReadPrometheusServing(r.Options(), kRange));
  // Each engine's discovery query (vLLM's, Triton's success counters) carries the scope.
  const auto vllm = r.Of("vllm:request_success_total");
  ASSERT_FALSE(vllm.empty());
  for (const std::string& q : vllm)
    EXPECT_THAT(q, HasSubstr(std::string("vllm:request_success_total{") + kScope + "}"));
  const auto triton = r.Of("nv_inference_request_success");
  ASSERT_FALSE(triton.empty());
  for (const std::string& q : triton) EXPECT_THAT(q, HasSubstr(kScope));
}

}  // namespace
}  // namespace gpufit
