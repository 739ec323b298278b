#include "gpufit/plan/cluster_prices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace gpufit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

NodePrice Price(const std::string& node, std::optional<double> gpu, std::optional<int> gpus) {
  NodePrice p;
  p.node = node;
  p.usd_per_gpu_hour = gpu;
  p.gpus = gpus;
  p.usd_per_core_hour = 0.04;
  p.usd_per_gib_hour = 0.004;
  return p;
}

TEST(PriceFromCluster, MeanPerGpuOverTheNodesOfEachCatalogModel) {
  const GpuCatalog& catalog = GpuCatalog::Embedded();
  // h1: 8 H100 at 3 (product from the server); h2: 2 H100 at 5, GPU count from kubectl;
  // a1: A100 80GB at 2, count unknown anywhere (1); cpu: 0 USD/GPU-hour; x: unknown product;
  // y: a GPU the catalog lacks.
  KubeNode h2;
  h2.name = "h2";
  h2.gpu_product = "NVIDIA-H100-80GB-HBM3";
  h2.gpu_count = 2;
  const std::vector<KubeNode> kube = {h2};
  const ClusterPrices p = PriceFromCluster(
      {Price("h1", 3, 8), Price("h2", 5, std::nullopt), Price("a1", 2, std::nullopt), Price("cpu", 0, 0),
       Price("x", 1, 1), Price("y", 1, 1)},
      {{"h1", "NVIDIA H100 80GB HBM3"}, {"a1", "NVIDIA-A100-SXM4-80GB"}, {"y", "NVIDIA-GeForce-RTX-1234"}}, &kube,
      catalog);
  EXPECT_TRUE(p.opencost);
  ASSERT_EQ(p.models.size(), 2u);
  const GpuModelPrice* h100 = p.Find("h100-80gb");
  ASSERT_NE(h100, nullptr);
  EXPECT_DOUBLE_EQ(h100->usd_per_gpu_hour, (3.0 * 8 + 5.0 * 2) / 10);
  EXPECT_EQ(h100->gpus, 10);
  EXPECT_EQ(h100->nodes, (std::vector<std::string>{"h1", "h2"}));
  EXPECT_DOUBLE_EQ(h100->catalog_usd_per_gpu_hour, catalog.Find("h100-80gb")->on_demand_per_gpu_hour.value);
  const GpuModelPrice* a100 = p.Find("a100-80gb");
  ASSERT_NE(a100, nullptr);
  EXPECT_DOUBLE_EQ(a100->usd_per_gpu_hour, 2);
  EXPECT_EQ(a100->gpus, 1);
  ASSERT_EQ(p.unpriced.size(), 2u);
  EXPECT_THAT(p.unpriced[0], HasSubstr("x: GPU model unknown"));
  EXPECT_THAT(p.unpriced[1], HasSubstr("y: GPU 'NVIDIA-GeForce-RTX-1234' is not in the catalog"));
  EXPECT_NE(p.CpuRamOf("cpu"), nullptr);
}

TEST(ApplyClusterPrices, OnlyThePricedModelsChangeAndTheOrderFollowsThePrice) {
  const GpuCatalog& catalog = GpuCatalog::Embedded();
  ClusterPrices p;
  p.models.push_back(
      {.gpu = "h100-80gb", .usd_per_gpu_hour = 0.01, .catalog_usd_per_gpu_hour = 6.88, .nodes = {"n"}, .gpus = 1});
  const GpuCatalog priced = ApplyClusterPrices(catalog, p);
  EXPECT_DOUBLE_EQ(priced.Find("h100-80gb")->on_demand_per_gpu_hour.value, 0.01);
  EXPECT_EQ(priced.Find("h100-80gb")->spot_per_gpu_hour, catalog.Find("h100-80gb")->spot_per_gpu_hour);
  EXPECT_EQ(priced.Find("a100-80gb")->on_demand_per_gpu_hour, catalog.Find("a100-80gb")->on_demand_per_gpu_hour);
  EXPECT_EQ(priced.models().front().id, "h100-80gb");  // now the cheapest
}

TEST(ClusterPricesToJson, APriceOfZeroIsSaidNotNoNodePublishes) {
  const GpuCatalog& catalog = GpuCatalog::Embedded();
  const ClusterPrices p = PriceFromCluster({Price("a1", 0, 8)}, {{"a1", "NVIDIA-A100-SXM4-80GB"}}, nullptr, catalog);
  EXPECT_TRUE(p.models.empty());
  ASSERT_EQ(p.unpriced.size(), 1u);
  EXPECT_THAT(p.unpriced[0], HasSubstr("a1: node_gpu_hourly_cost is 0"));
  const GpuModel a100 = *catalog.Find("a100-80gb");
  const nlohmann::json j = nlohmann::json::parse(ClusterPricesToJson(&p, "", a100, a100));
  const std::string basis = j.at("current_gpu").at("basis");
  EXPECT_THAT(basis, HasSubstr("node_gpu_hourly_cost is 0 on every a100-80gb node that publishes it: a1"));
  EXPECT_THAT(basis, Not(HasSubstr("no a100-80gb node publishes")));
}

TEST(ClusterPricesToJson, TheCatalogSaysWhyWithoutOpenCost) {
  const GpuModel h100 = *GpuCatalog::Embedded().Find("h100-80gb");
  const nlohmann::json j = nlohmann::json::parse(ClusterPricesToJson(nullptr, "no --prometheus", h100, h100));
  EXPECT_EQ(j.at("source"), "catalog");
  EXPECT_EQ(j.at("basis"), "catalog list prices: no --prometheus");
  EXPECT_EQ(j.at("current_gpu").at("source"), "catalog");
  EXPECT_EQ(j.at("current_gpu").at("usd_per_gpu_hour"), 6.88);
}

}  // namespace
}  // namespace gpufit
