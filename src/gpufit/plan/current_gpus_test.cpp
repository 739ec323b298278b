// Each pod's current GPU (plan/current_gpus.h): from its modelName, its node's product label,
// else --current-gpu/--gpu; and the plan prices and right-sizes each pod from its own.
#include "gpufit/plan/current_gpus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpufit/plan/plan.h"
#include "gpufit/plan/plan_writers.h"

namespace gpufit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// 48 h at 10-minute steps, each pod flat at 20,000 MiB and 5% duty, with its modelName.
Telemetry Pods(const std::vector<std::pair<std::string, std::string>>& pod_models) {
  Telemetry t;
  t.step_s = 600;
  t.samples = 288;
  for (const auto& [name, model] : pod_models) {
    PodSeries p;
    p.pod = name;
    p.gpu_model = model;
    p.last = t.samples - 1;
    p.fb_used_mib.assign(t.samples, 20000);
    p.gpu_util_pct.assign(t.samples, 5);
    t.pods.push_back(p);
  }
  return t;
}

const Telemetry kMixed = Pods({{"ml/a", "NVIDIA A100-SXM4-80GB"},
                               {"ml/h", "NVIDIA H100 80GB HBM3"},
                               {"ml/n", ""},
                               {"ml/x", "NVIDIA B300 SXM6 AC"}});
// ml/n names no model itself; its node's GFD label says H100.
const std::vector<KubePod> kPods = {KubePod{.namespace_name = "ml", .name = "n", .node_name = "node-h"}};
const std::vector<KubeNode> kNodes = {KubeNode{.name = "node-h", .gpu_product = "NVIDIA-H100-80GB-HBM3"}};

TEST(CurrentGpus, EachPodFromItsModelNameElseItsNodeElseTheAssumption) {
  const GpuCatalog& catalog = GpuCatalog::Embedded();
  const CurrentGpus c = ResolveCurrentGpus(
      {.telemetry = &kMixed, .catalog = &catalog, .pods = &kPods, .nodes = &kNodes, .fallback_id = "a100-80gb"});
  EXPECT_EQ(c.id_of.at("ml/a"), "a100-80gb");
  EXPECT_EQ(c.id_of.at("ml/h"), "h100-80gb");
  EXPECT_EQ(c.id_of.at("ml/n"), "h100-80gb");
  EXPECT_EQ(c.source_of.at("ml/n"), "node node-h label nvidia.com/gpu.product");
  EXPECT_EQ(c.id_of.at("ml/x"), "a100-80gb");  // unknown to the catalog: the assumption, warned
  EXPECT_EQ(c.source_of.at("ml/x"), "assumed: --gpu");
  EXPECT_EQ(c.named_by_data, 3U);
  EXPECT_EQ(c.most_common, "a100-80gb");  // 2 and 2: the first in catalog order
  ASSERT_EQ(c.warnings.size(), 1U);
  EXPECT_THAT(c.warnings[0], HasSubstr("no GPU named 'NVIDIA B300 SXM6 AC' (1 pod: ml/x)"));
}

TEST(CurrentGpus, AnOverrideTheDataContradictsIsWarnedAndTheDataWins) {
  const GpuCatalog& catalog = GpuCatalog::Embedded();
  const CurrentGpus c = ResolveCurrentGpus({.telemetry = &kMixed,
                                            .catalog = &catalog,
                                            .pods = &kPods,
                                            .nodes = &kNodes,
                                            .override_id = "a100-80gb",
                                            .fallback_id = "l4"});
  EXPECT_EQ(c.id_of.at("ml/h"), "h100-80gb");
  EXPECT_EQ(c.id_of.at("ml/x"), "a100-80gb");
  EXPECT_EQ(c.source_of.at("ml/x"), "--current-gpu");
  ASSERT_EQ(c.warnings.size(), 2U);
  EXPECT_THAT(c.warnings[1], HasSubstr("--current-gpu a100-80gb is contradicted by the data: 2 pods run on "
                                       "h100-80gb (ml/h, ml/n)"));
}

TEST(CurrentGpus, ThePlanPricesAndRightSizesEachPodFromItsOwnModel) {
  const GpuCatalog& catalog = GpuCatalog::Embedded();
  const CurrentGpus c = ResolveCurrentGpus(
      {.telemetry = &kMixed, .catalog = &catalog, .pods = &kPods, .nodes = &kNodes, .fallback_id = "a100-80gb"});
  PlanOptions o;
  o.target_gpu = "a100-80gb";
  o.current_gpu = c.most_common;
  o.current_gpu_of = c.id_of;
  o.current_gpu_source_of = c.source_of;
  o.search_budget = 0;
  const Result<Plan> plan = BuildPlan(kMixed, catalog, o, "mixed");
  ASSERT_TRUE(plan) << plan.error().message;
  // Before: 2 A100s at 3.4309 and 2 H100s at 6.88 USD per GPU-hour, 730 hours.
  EXPECT_NEAR(plan->totals.usd_per_month_before, (2 * 3.4309 + 2 * 6.88) * 730, 1e-6);
  EXPECT_EQ(plan->right_sizing[1].current_gpu, "h100-80gb");
  EXPECT_NEAR(plan->right_sizing[1].usd_per_month_current, 6.88 * 730, 1e-6);
  EXPECT_EQ(plan->right_sizing[0].current_gpu, "a100-80gb");
  EXPECT_TRUE(plan->mixed_current());

  const nlohmann::json j = nlohmann::json::parse(PlanToJson(*plan));
  EXPECT_EQ(j["pods"][2]["current_gpu"]["id"], "h100-80gb");
  EXPECT_EQ(j["pods"][2]["current_gpu"]["source"], "node node-h label nvidia.com/gpu.product");
  ASSERT_EQ(j["current_gpus"].size(), 2U);
  EXPECT_EQ(j["current_gpus"][0]["id"], "a100-80gb");
  EXPECT_EQ(j["current_gpus"][0]["gpus"], 2);
  EXPECT_NEAR(j["current_gpus"][1]["usd_per_month"].get<double>(), 2 * 6.88 * 730, 1e-6);
  const std::string md = PlanToMarkdown(*plan);
  EXPECT_THAT(md, Not(HasSubstr("names no GPU model")));
  EXPECT_THAT(md, HasSubstr("2 pods on a100-80gb; 2 pods on h100-80gb"));
}

}  // namespace
}  // namespace gpufit
