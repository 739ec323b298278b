// The OpenCost, kube-state-metrics, dcgm-exporter, cAdvisor and node-exporter mappings of
// ingest/prometheus/opencost.h and ingest/prometheus/network.h, on answers written by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "gpufit/ingest/prometheus/network.h"
#include "gpufit/ingest/prometheus/opencost.h"

namespace gpufit {
namespace {

PromSeries S(std::map<std::string, std::string> labels, std::vector<double> t, std::vector<double> v) {
  return {std::move(labels), std::move(t), std::move(v)};
}

TEST(NodePricesFromSeries, MeansPerNodeByNodeLabelElseInstance) {
  const auto prices = NodePricesFromSeries(
      {S({{"node", "a"}, {"instance", "a"}, {"instance_type", "p5.48xlarge"}, {"region", "us-east-1"}}, {1, 2, 3},
         {3, 3, 6}),
       // a relabeled instance (the OpenCost pod's address) does not split the node
       S({{"node", "a"}, {"instance", "10.1.2.3:9003"}}, {4}, {4}), S({{"instance", "b"}}, {1}, {2})},
      {S({{"node", "a"}}, {1}, {0.05}), S({{"node", "a"}}, {2}, {NAN})}, {S({{"node", "b"}}, {1, 2}, {0.004, 0.006})},
      {S({{"node", "a"}}, {1, 2}, {8, 7.6})});
  ASSERT_EQ(prices.size(), 2u);
  const NodePrice& a = prices[0];
  EXPECT_EQ(a.node, "a");
  EXPECT_EQ(a.instance_type, "p5.48xlarge");
  EXPECT_EQ(a.region, "us-east-1");
  EXPECT_DOUBLE_EQ(*a.usd_per_gpu_hour, (3 + 3 + 6 + 4) / 4.0);
  EXPECT_DOUBLE_EQ(*a.usd_per_core_hour, 0.05);  // NaN is no sample
  EXPECT_FALSE(a.usd_per_gib_hour.has_value());
  EXPECT_EQ(*a.gpus, 8);  // mean 7.8, rounded
  EXPECT_EQ(a.samples, 4u);
  EXPECT_EQ(prices[1].node, "b");
  EXPECT_DOUBLE_EQ(*prices[1].usd_per_gpu_hour, 2);
  EXPECT_DOUBLE_EQ(*prices[1].usd_per_gib_hour, 0.005);
}

TEST(CheckOpenCostSeries, NegativeNanOrAbsurdValuesAreBadInputNamingTheNodeAndMetric) {
  const PromSeries ok = S({{"node", "ok"}}, {1767225600}, {0});  // 0 is a valid price
  ASSERT_TRUE(CheckOpenCostSeries({ok}, {ok}, {ok}, {ok}));
  ASSERT_TRUE(CheckOpenCostSeries({S({{"node", "g"}}, {1767225600}, {1000})}, {}, {}, {}));  // at the bound
  struct Case {
    int which;  // 0 gpu, 1 cpu, 2 ram, 3 count
    double value;
    const char* want;
  };
  const Case cases[] = {{0, 1e12, "node_gpu_hourly_cost of node n at 2026-01-01T00:00:00Z is 1e+12"},
                        {0, -5, "node_gpu_hourly_cost of node n at 2026-01-01T00:00:00Z is -5"},
                        {0, NAN, "node_gpu_hourly_cost of node n at 2026-01-01T00:00:00Z is nan"},
                        {1, 101, "node_cpu_hourly_cost of node n"},
                        {2, -0.5, "node_ram_hourly_cost of node n"},
                        {3, 1e9, "node_gpu_count of node n"}};
  for (const Case& c : cases) {
    std::vector<PromSeries> a[4];
    a[c.which].push_back(S({{"node", "n"}}, {1767225600}, {c.value}));
    const Result<void> r = CheckOpenCostSeries(a[0], a[1], a[2], a[3]);
    ASSERT_FALSE(r) << c.want;
    EXPECT_EQ(r.error().code, Code::kInvalidArgument);
    EXPECT_NE(r.error().message.find(c.want), std::string::npos) << r.error().message;
  }
}

TEST(NodeGpuProductsFromSeries, TheNodeLabelWinsOverDcgmModelName) {
  const auto products = NodeGpuProductsFromSeries(
      {S({{"node", "a"}, {"label_nvidia_com_gpu_product", "NVIDIA-A100-SXM4-80GB"}}, {1}, {1})},
      {S({{"Hostname", "a"}, {"modelName", "NVIDIA H100 80GB HBM3"}}, {1}, {4}),
       S({{"hostname", "b"}, {"modelName", "NVIDIA H100 80GB HBM3"}}, {1}, {4})});
  EXPECT_EQ(products.at("a"), "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(products.at("b"), "NVIDIA H100 80GB HBM3");  // dcgm-exporter's newer lower-case label
}

TEST(PodReceiveRates, SandboxSeriesSummedOverInterfacesWithCounterResets) {
  Telemetry t;
  t.start_s = 100;
  t.step_s = 10;
  t.samples = 4;
  const auto pods = PodReceiveRates(
      {
          // containerd: container="" on the sandbox; a reset at t=130 (increase = 50).
          S({{"namespace", "ns"}, {"pod", "p"}, {"container", ""}, {"interface", "eth0"}}, {100, 110, 120, 130},
            {0, 1000, 3000, 50}),
          // the same namespace under a second cgroup: the larger rate per interface, not the sum
          S({{"namespace", "ns"}, {"pod", "p"}, {"container", "POD"}, {"interface", "eth0"}}, {110, 120}, {0, 1000}),
          S({{"namespace", "ns"}, {"pod", "p"}, {"interface", "net1"}}, {110, 120}, {0, 10}),
          S({{"namespace", "ns"}, {"pod", "p"}, {"interface", "lo"}}, {110, 120}, {0, 1e9}),
          S({{"namespace", ""}, {"pod", ""}, {"interface", "eth0"}, {"id", "/"}}, {110, 120}, {0, 1e9}),
      },
      t);
  ASSERT_EQ(pods.size(), 1u);
  EXPECT_EQ(pods[0].pod, "ns/p");
  const std::vector<float>& r = pods[0].receive_bytes_per_s;
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_FLOAT_EQ(r[1], 100);
  EXPECT_FLOAT_EQ(r[2], 200 + 1);  // eth0: max(2000, 1000) / 10; net1: 10 / 10
  EXPECT_FLOAT_EQ(r[3], 5);
}

TEST(PodNodesFromSeries, TheLastNodeSeen) {
  const auto nodes = PodNodesFromSeries({S({{"namespace", "ns"}, {"pod", "p"}, {"node", "old"}}, {1, 2}, {1, 1}),
                                         S({{"namespace", "ns"}, {"pod", "p"}, {"node", "new"}}, {3}, {1})});
  EXPECT_EQ(nodes.at("ns/p"), "new");
}

TEST(NodeLinksFromSeries, FastestDeviceTiedToTheNodeByLabelUnameOrInstance) {
  const auto links =
      NodeLinksFromSeries({S({{"instance", "10.0.0.1:9100"}, {"device", "eth0"}}, {1}, {125e6}),
                           S({{"instance", "10.0.0.1:9100"}, {"device", "lo"}}, {1}, {1e12}),
                           S({{"instance", "10.0.0.2:9100"}, {"node", "b"}, {"device", "ens5"}}, {1}, {3.125e9}),
                           S({{"instance", "10.0.0.2:9100"}, {"node", "b"}, {"device", "eth1"}}, {1}, {1.25e9}),
                           S({{"instance", "c:9100"}, {"device", "eth0"}}, {1}, {1.25e9}),
                           S({{"instance", "d:9100"}, {"device", "veth1"}}, {1}, {-1})},
                          {S({{"instance", "10.0.0.1:9100"}, {"nodename", "a"}}, {1}, {1})});
  ASSERT_EQ(links.size(), 4u);  // d has no positive speed: a link of 0 that says why
  EXPECT_EQ(links[0].node, "a");
  EXPECT_EQ(links[0].device, "eth0");
  EXPECT_EQ(links[0].bytes_per_s, 125e6);
  EXPECT_EQ(links[0].node_source, "node_uname_info nodename of instance 10.0.0.1:9100");
  EXPECT_EQ(links[1].node, "b");
  EXPECT_EQ(links[1].device, "ens5");
  EXPECT_EQ(links[2].node, "c");
  EXPECT_EQ(links[2].node_source, "the instance label without its port");
  EXPECT_TRUE(links[2].unusable.empty());
  EXPECT_EQ(links[3].node, "d");
  EXPECT_EQ(links[3].bytes_per_s, 0);
  EXPECT_EQ(
      links[3].unusable,
      "node_network_speed_bytes{device=\"veth1\"} is -1 (0, negative or NaN in every sample): link speed unknown");
}

TEST(CheckReceiveSeries, ACounterRisingPastEightTbitPerSecondIsBadInputNamingTheSeries) {
  // 1e12 bytes in 1 s is the bound (accepted); 1e300 in 60 s is not.
  ASSERT_TRUE(CheckReceiveSeries({S({{"namespace", "ml"}, {"pod", "p"}, {"interface", "eth0"}}, {0, 1}, {0, 1e12})}));
  const Result<void> r = CheckReceiveSeries(
      {S({{"namespace", "ml"}, {"pod", "p"}, {"interface", "eth0"}}, {1767225600, 1767225660}, {5, 1e300})});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_NE(r.error().message.find(
                "container_network_receive_bytes_total{pod=\"ml/p\",interface=\"eth0\"} rises 1e+300 bytes in 60 s "
                "to 2026-01-01T00:01:00Z"),
            std::string::npos)
      << r.error().message;
}

TEST(ClusterStepFor, AtMost720EvaluationsAndNeverFinerThanTheStep) {
  EXPECT_EQ(ClusterStepFor({.since_s = 0, .until_s = 7 * 86400, .step_s = 60}), 840);
  EXPECT_EQ(ClusterStepFor({.since_s = 0, .until_s = 3600, .step_s = 60}), 60);
}

}  // namespace
}  // namespace gpufit
