// `gpufit plan --prometheus` on a cluster that publishes its own prices (OpenCost) and its
// pods' network counters (tests/support/cluster_fixture.h): the plan prices its GPUs at the
// cluster's price and says so, prices containers at their node's own CPU and RAM prices, and
// flags the model load capped by a 1 Gbit/s link but not the one on a 25 Gbit/s link. Every
// expected figure is computed here by hand from the fixture's values.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"
#include "cluster_fixture.h"
#include "prometheus_server.h"

namespace {

namespace fs = std::filesystem;
using gpufit::e2e::CliRun;
using gpufit::e2e::Gpufit;
using gpufit::e2e::Scratch;
using gpufit::e2e::Slurp;
using ::testing::HasSubstr;
using json = nlohmann::json;

struct Plan {
  json j;
  std::string md;
};

Plan RunPlan(const gpufit::testing::PrometheusServer& server, const gpufit::testing::ClusterFixture& f,
             const std::string& name) {
  const fs::path dir = Scratch(name);
  const CliRun run = Gpufit(fmt::format("plan --prometheus {} --since {} --until {} --step 60s --gpu h100-80gb "
                                        "--format json --out {}",
                                        server.url(), static_cast<long long>(f.since_s) - 60,
                                        static_cast<long long>(f.until_s), (dir / "out").string()),
                            dir);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  Plan p{json::parse(Slurp(dir / "out" / "plan.json")), Slurp(dir / "out" / "plan.md")};
  fs::remove_all(dir);
  return p;
}

const json* Find(const json& array, const std::string& key, const std::string& value) {
  for (const json& e : array)
    if (e.at(key) == value) return &e;
  return nullptr;
}

TEST(ClusterPlan, PricesFromOpenCostAndFlagsTheLoadCappedByA1GbitLink) {
  const gpufit::testing::ClusterFixture fixture = gpufit::testing::MakeClusterFixture(/*opencost=*/true);
  const fs::path dir = Scratch("cluster-opencost");
  auto server = gpufit::testing::PrometheusServer::Start(fixture.openmetrics, dir.string());
  ASSERT_TRUE(server) << server.error().message;
  const Plan plan = RunPlan(**server, fixture, "cluster-opencost-run");
  const json& prices = plan.j.at("prices");

  // H100 price: gpu-a 8 GPUs at 3.00, gpu-b 4 GPUs at the mean of 90 samples at 4.00 and 90
  // at 5.00 = 4.50; per GPU (3.00 x 8 + 4.50 x 4) / 12 = 3.50 USD/GPU-hour. cpu-a (0 USD per
  // GPU-hour) is no GPU node.
  constexpr double kH100 = (3.0 * 8 + 4.5 * 4) / 12;
  EXPECT_EQ(prices.at("source"), "opencost");
  ASSERT_EQ(prices.at("gpu_models").size(), 1u);
  const json& h100 = prices.at("gpu_models")[0];
  EXPECT_EQ(h100.at("gpu"), "h100-80gb");
  EXPECT_NEAR(h100.at("usd_per_gpu_hour").get<double>(), kH100, 1e-9);
  EXPECT_EQ(h100.at("nodes"), json({"gpu-a", "gpu-b"}));
  EXPECT_EQ(h100.at("gpus"), 12);
  EXPECT_EQ(h100.at("catalog_usd_per_gpu_hour"), 6.88);  // data/gpu_catalog.yaml
  EXPECT_EQ(prices.at("current_gpu").at("source"), "opencost (2 nodes)");
  EXPECT_EQ(prices.at("nodes").size(), 3u);
  EXPECT_THAT(plan.md, HasSubstr("3.5 USD/GPU-hour from OpenCost"));

  // The plan's dollars: two pods, one H100 each, before: 2 x 3.50 x 730 h.
  const json& totals = plan.j.at("totals");
  EXPECT_NEAR(totals.at("usd_per_month_before").get<double>(), 2 * kH100 * 730, 1e-6);
  EXPECT_NEAR(totals.at("usd_per_month_after").get<double>(), totals.at("gpus_after").get<double>() * kH100 * 730,
              1e-6);

  // Containers at their node's own OpenCost rates: 8 cores and 64 GiB requested.
  const json& containers = plan.j.at("ancillary").at("containers");
  const json* a = Find(containers, "pod", "llm/serve-a");
  const json* b = Find(containers, "pod", "llm/serve-b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a->at("node"), "gpu-a");
  EXPECT_NEAR(a->at("usd_per_core_hour").get<double>(), 0.05, 1e-12);
  EXPECT_NEAR(a->at("usd_per_gib_hour").get<double>(), 0.005, 1e-12);
  EXPECT_NEAR(a->at("usd_per_month_now").get<double>(), (8 * 0.05 + 64 * 0.005) * 730, 1e-6);
  EXPECT_NEAR(b->at("usd_per_month_now").get<double>(), (8 * 0.04 + 64 * 0.004) * 730, 1e-6);
  EXPECT_THAT(a->at("rates_basis").get<std::string>(), HasSubstr("OpenCost"));
  EXPECT_THAT(plan.j.at("ancillary").at("rates_basis").get<std::string>(), HasSubstr("OpenCost"));

  // The network check. serve-a: 14,336 MiB over two steps at its link's 125,000,000 B/s.
  const json& network = plan.j.at("ancillary").at("network");
  ASSERT_TRUE(network.is_object()) << plan.j.at("ancillary").dump(1);
  EXPECT_EQ(network.at("fastest_link_node"), "gpu-b");
  EXPECT_EQ(network.at("fastest_link_bytes_per_s"), 3.125e9);  // ens5, not eth1's 10 Gbit/s
  ASSERT_EQ(network.at("loads").size(), 2u) << network.dump(1);
  const json* la = Find(network.at("loads"), "pod", "llm/serve-a");
  const json* lb = Find(network.at("loads"), "pod", "llm/serve-b");
  ASSERT_NE(la, nullptr);
  ASSERT_NE(lb, nullptr);
  EXPECT_TRUE(la->at("network_bound"));
  EXPECT_EQ(la->at("node"), "gpu-a");  // tied through node_uname_info
  EXPECT_EQ(la->at("link_bytes_per_s"), 125e6);
  EXPECT_EQ(la->at("load_s"), 120);
  EXPECT_EQ(la->at("model_mib"), 14336);
  EXPECT_EQ(la->at("steps_at_link"), 2);
  EXPECT_NEAR(la->at("received_bytes").get<double>(), 2 * 60 * 125e6, 1);  // lo and the host's eth0 left out
  const double model_bytes = 14336.0 * 1048576;
  const json& remedies = la->at("remedies");
  ASSERT_EQ(remedies.size(), 3u);
  EXPECT_NEAR(remedies[0].at("saved_s").get<double>(), 120 - model_bytes / 2e9, 1e-6);      // 112.48 s at 2 GB/s
  EXPECT_EQ(remedies[1].at("saved_s"), 0);                                                  // peer-to-peer
  EXPECT_NEAR(remedies[2].at("saved_s").get<double>(), 120 - model_bytes / 3.125e9, 1e-6);  // 115.19 s at 25 Gbit/s
  // serve-b: 15e9 bytes in one 60 s step = 250,000,000 B/s, 8% of 3,125,000,000: not bound.
  EXPECT_FALSE(lb->at("network_bound"));
  EXPECT_EQ(lb->at("link_bytes_per_s"), 3.125e9);
  EXPECT_NEAR(lb->at("mean_receive_bytes_per_s").get<double>(), 250e6, 1);
  EXPECT_EQ(lb->at("steps_at_link"), 0);
  EXPECT_TRUE(lb->at("remedies").is_null());
  EXPECT_THAT(plan.md, HasSubstr("| llm/serve-a | gpu-a | 1 Gbit/s | 120 s | 14336 MiB |"));
  EXPECT_THAT(plan.md, Not(HasSubstr("| llm/serve-b | gpu-b |")));

  // The same cluster without OpenCost: the catalog's list price, and the output says so.
  const gpufit::testing::ClusterFixture bare = gpufit::testing::MakeClusterFixture(/*opencost=*/false);
  const fs::path bare_dir = Scratch("cluster-catalog");
  auto bare_server = gpufit::testing::PrometheusServer::Start(bare.openmetrics, bare_dir.string());
  ASSERT_TRUE(bare_server) << bare_server.error().message;
  const Plan catalog = RunPlan(**bare_server, bare, "cluster-catalog-run");
  const json& cprices = catalog.j.at("prices");
  EXPECT_EQ(cprices.at("source"), "catalog");
  EXPECT_THAT(cprices.at("basis").get<std::string>(), HasSubstr("no OpenCost series"));
  EXPECT_EQ(cprices.at("current_gpu").at("source"), "catalog");
  EXPECT_NEAR(catalog.j.at("totals").at("usd_per_month_before").get<double>(), 2 * 6.88 * 730, 1e-6);
  EXPECT_THAT(catalog.md, HasSubstr("catalog list price (no OpenCost series"));
  EXPECT_THAT(catalog.j.at("ancillary").at("rates_basis").get<std::string>(), Not(HasSubstr("OpenCost's node_cpu")));
  // The network check does not need OpenCost.
  EXPECT_TRUE(Find(catalog.j.at("ancillary").at("network").at("loads"), "pod", "llm/serve-a")->at("network_bound"));
  bare_server->reset();
  server->reset();
  fs::remove_all(bare_dir);
  fs::remove_all(dir);
}

}  // namespace
