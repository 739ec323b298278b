#include "gpufit/optimize/agent_consolidation.h"

#include <gtest/gtest.h>

#include "gpufit/core/test_support.h"
#include "gpufit/ingest/kube/kube_reader.h"
#include "kube_fixture.h"

namespace gpufit {
namespace {

// The integration issue's kubectl test cluster (tests/support/kube_fixture.h).
std::vector<KubePod> Pods() {
  const testing::TempDir dir;
  const Result<std::vector<KubePod>> pods =
      ReadKubePods(dir.Write("pods.json", testing::List(testing::MakeCluster().pods).dump()));
  EXPECT_TRUE(pods) << pods.error().message;
  return pods ? *pods : std::vector<KubePod>{};
}

TEST(AgentConsolidation, SidecarsOfTheKubeFixtureAreRecognized) {
  std::map<std::string, int> kinds;  // "container kind" over app containers and native sidecars
  for (const KubePod& p : Pods())
    for (const KubeContainer& c : p.containers)
      if (c.kind != KubeContainer::Kind::kInit) ++kinds[c.name + " " + ToString(ClassifyContainer(c.name, c.image))];
  // By the generator: 20 web pods with a classic istio-proxy, 8 llm-serve pods with a native
  // one and a fluent-bit log shipper, dcgm-exporter on the 18 GPU nodes.
  EXPECT_EQ(kinds["istio-proxy service-mesh-proxy"], 28);
  EXPECT_EQ(kinds["log-shipper log-agent"], 8);
  EXPECT_EQ(kinds["nvidia-dcgm-exporter metrics-agent"], 18);
  EXPECT_EQ(kinds["server application"], 8);  // vLLM holds the GPU: the application
  EXPECT_EQ(kinds["kube-proxy application"], 24);
  EXPECT_EQ(kinds["web application"], 20);
}

TEST(AgentConsolidation, EightLogShippersOnOneNodeAreOneCandidate) {
  const NodeRates h100 = SplitNodePrice(8 * 6.88, 8, 192, 2064100.0 / 1024);
  const auto rates = [&](const std::string& node) { return node.starts_with("h100") ? h100 : NodeRates{}; };
  const std::vector<AgentConsolidation> found = FindDuplicatedAgents(Pods(), rates);
  // dcgm-exporter runs once per node and istio-proxy is not a node agent: one candidate.
  ASSERT_EQ(found.size(), 1u);
  const AgentConsolidation& g = found[0];
  EXPECT_EQ(g.node, "h100-3");
  EXPECT_EQ(g.image_repository, "fluent/fluent-bit");
  EXPECT_EQ(g.kind, ContainerKind::kLogAgent);
  EXPECT_EQ(g.copies.size(), 8u);
  EXPECT_EQ(g.cpu_requests, MilliCpu{800});
  EXPECT_EQ(g.memory_requests, MiB{512});
  // Seven copies go: 700 m and 448 MiB at the H100 node's rates for 730 hours.
  EXPECT_NEAR(g.usd_per_month_saving, (0.7 * h100.usd_per_core_hour + 448.0 / 1024 * h100.usd_per_gib_hour) * 730,
              1e-9);
}

TEST(ContainerKind, ImagesAndNames) {
  EXPECT_EQ(ImageRepository("docker.io/istio/proxyv2:1.23.0"), "istio/proxyv2");
  EXPECT_EQ(ImageRepository("localhost:5000/a/b@sha256:abc"), "a/b");
  EXPECT_EQ(ImageRepository("busybox"), "busybox");
  EXPECT_EQ(ImageRepository("fluent/fluent-bit:3.1"), "fluent/fluent-bit");
  EXPECT_EQ(ClassifyContainer("proxy", "envoyproxy/envoy:v1.31"), ContainerKind::kServiceMeshProxy);
  EXPECT_EQ(ClassifyContainer("linkerd-proxy", "cr.l5d.io/linkerd/proxy:edge"), ContainerKind::kServiceMeshProxy);
  EXPECT_EQ(ClassifyContainer("api", "tiangolo/uvicorn-gunicorn-fastapi:python3.11"), ContainerKind::kApiServer);
  EXPECT_EQ(ClassifyContainer("agent", "gcr.io/datadoghq/agent:7"), ContainerKind::kApplication);
  EXPECT_EQ(ClassifyContainer("datadog-agent", "gcr.io/datadoghq/agent:7"), ContainerKind::kMetricsAgent);
  EXPECT_EQ(ClassifyContainer("vector", "timberio/vector:0.40.0-debian"), ContainerKind::kLogAgent);
  EXPECT_EQ(ClassifyContainer("exporter", "prom/node-exporter:v1.8.2"), ContainerKind::kMetricsAgent);
  EXPECT_EQ(ClassifyContainer("export", "quay.io/prometheuscommunity/postgres-exporter:v0.15"),
            ContainerKind::kMetricsAgent);
  EXPECT_EQ(ClassifyContainer("model", "myorg/onnx-exporter:1"), ContainerKind::kApplication);
  // A container holding a GPU is the application, whatever serves it.
  EXPECT_EQ(ClassifyContainer("api", "myorg/sd-fastapi:2"), ContainerKind::kApiServer);
  EXPECT_EQ(ClassifyContainer("api", "myorg/sd-fastapi:2", true), ContainerKind::kApplication);
  EXPECT_EQ(ClassifyContainer("main", "vllm/vllm-openai:v0.6.3"), ContainerKind::kApplication);
}

}  // namespace
}  // namespace gpufit
