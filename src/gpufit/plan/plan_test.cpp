#include "gpufit/plan/plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "gpufit/ingest/synthetic_telemetry.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/plan/plan_writers.h"

namespace gpufit {
namespace {

using ::testing::HasSubstr;

const Telemetry& Demo() {
  static const Telemetry t = GenerateSyntheticTelemetry({.pods = 16, .samples = 720, .step_s = 120});
  return t;
}

PlanOptions Options() {
  PlanOptions o;
  o.target_gpu = "h100-80gb";
  o.search_budget = 20'000'000;
  return o;
}

TEST(BuildPlan, TotalsAgreeWithTheGroupsAndPrices) {
  const Result<Plan> plan = BuildPlan(Demo(), GpuCatalog::Embedded(), Options(), "demo");
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  const PlanTotals& t = plan->totals;
  EXPECT_EQ(t.gpus_before, 16u);
  EXPECT_EQ(t.gpus_after, plan->replay.gpus.size() + plan->too_big.size());
  EXPECT_LE(t.gpus_lower_bound, t.gpus_after);
  EXPECT_LE(t.gpus_after, t.gpus_first_fit_decreasing);
  EXPECT_DOUBLE_EQ(t.usd_per_month_before, 16 * 6.88 * 730);
  EXPECT_DOUBLE_EQ(t.usd_per_month_after, static_cast<double>(t.gpus_after) * 6.88 * 730);
  EXPECT_TRUE(plan->replay.safe);
  // Every pod is in exactly one group.
  std::size_t placed = 0;
  for (const GpuReplay& g : plan->replay.gpus) placed += g.pods.size();
  EXPECT_EQ(placed + plan->too_big.size(), 16u);
}

TEST(BuildPlan, JsonCarriesTheDocumentedFields) {
  const Result<Plan> plan = BuildPlan(Demo(), GpuCatalog::Embedded(), Options(), "demo");
  ASSERT_TRUE(plan.has_value());
  const nlohmann::json j = nlohmann::json::parse(PlanToJson(*plan));
  for (const char* key :
       {"gpus_before", "gpus_after", "gpus_lower_bound", "usd_per_month_before", "usd_per_month_after"}) {
    EXPECT_TRUE(j["totals"].contains(key)) << key;
  }
  EXPECT_EQ(j["replay"]["memory_overflows"], 0);
  EXPECT_TRUE(j["replay"].contains("max_collision_share"));
  EXPECT_EQ(j["pods"].size(), 16u);
  EXPECT_EQ(j["groups"].size(), plan->replay.gpus.size());
}

// Issue 40: Prometheus's warnings ("partial result: ...") were ignored; a plan on partial data
// must say so in plan.json and plan.md.
TEST(BuildPlan, PrometheusWarningsReachTheJsonAndTheMarkdown) {
  Telemetry t = Demo();
  t.queries = TelemetryQueries{};
  t.queries->notices = {{.query = "max_over_time(DCGM_FI_DEV_FB_USED[60s])",
                         .kind = "warning",
                         .text = "partial result: store gateway <down>"}};
  const Result<Plan> plan = BuildPlan(t, GpuCatalog::Embedded(), Options(), "demo");
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  const nlohmann::json j = nlohmann::json::parse(PlanToJson(*plan));
  ASSERT_EQ(j["prometheus_warnings"].size(), 1u);
  EXPECT_EQ(j["prometheus_warnings"][0]["query"], "max_over_time(DCGM_FI_DEV_FB_USED[60s])");
  EXPECT_EQ(j["prometheus_warnings"][0]["kind"], "warning");
  EXPECT_EQ(j["prometheus_warnings"][0]["warning"], "partial result: store gateway <down>");
  EXPECT_THAT(PlanToMarkdown(*plan),
              HasSubstr("**Prometheus warned** while the telemetry was read (the plan may rest on partial data):\n\n"
                        "- warning on query max_over_time(DCGM_FI_DEV_FB_USED\\[60s\\]): partial result: store "
                        "gateway &lt;down&gt;\n"));
  // From files: no Prometheus, no field.
  EXPECT_FALSE(nlohmann::json::parse(PlanToJson(*BuildPlan(Demo(), GpuCatalog::Embedded(), Options(), "demo")))
                   .contains("prometheus_warnings"));
}

// Pod 3 of the demo gets a container that is CPU-bound: capped at 2 cores, CFS-throttled,
// its GPU at 100 x 2 / 6 % of the time. It must keep its current GPU, alone: the plan
// never shrinks or shares the GPU of a pod that waits on its CPU.
TEST(BuildPlan, CpuStarvedPodKeepsItsCurrentGpuAlone) {
  Telemetry t = Demo();
  PodSeries& pod = t.pods[3];
  ContainerSeries c;
  c.pod = pod.pod;
  c.container = "trainer";
  c.cpu_limit = MilliCpu{2000};
  for (std::size_t k = 0; k < t.samples; ++k) {
    const bool alive = k >= pod.first && k <= pod.last;
    pod.gpu_util_pct[k] = alive ? 100.0f * 2 / 6 : 0;
    c.cpu_cores.push_back(alive ? 2.0f : std::nanf(""));
    c.cpu_throttled_ratio.push_back(alive ? 0.6f : std::nanf(""));
    c.memory_working_set_mib.push_back(alive ? 3000 : std::nanf(""));
  }
  t.containers.push_back(c);
  PlanOptions o = Options();
  o.target_gpu = "l40s";  // a smaller, cheaper target: the starved pod must not move to it
  o.current_gpu = "h100-80gb";
  const Result<Plan> plan = BuildPlan(t, GpuCatalog::Embedded(), o, "demo");
  ASSERT_TRUE(plan.has_value()) << plan.error().message;
  ASSERT_EQ(plan->cpu_starvation.size(), 1u);
  EXPECT_EQ(plan->cpu_starvation[0].pod, 3u);
  EXPECT_NEAR(plan->cpu_starvation[0].recommended_cores, 6.0, 0.6);
  EXPECT_EQ(plan->kept_on_current_gpu(), std::vector<std::size_t>{3});
  EXPECT_FALSE(plan->group_of[3].has_value());
  EXPECT_EQ(std::count(plan->too_big.begin(), plan->too_big.end(), 3u), 0);
  EXPECT_EQ(plan->right_sizing[3].recommended_gpu, "h100-80gb");
  EXPECT_EQ(plan->totals.gpus_after, plan->replay.gpus.size() + plan->too_big.size() + 1);
  const nlohmann::json j = nlohmann::json::parse(PlanToJson(*plan));
  EXPECT_EQ(j["kept_on_current_gpu"], nlohmann::json::array({pod.pod}));
  EXPECT_EQ(j["cpu_starvation"][0]["pod"], pod.pod);
  EXPECT_THAT(PlanToMarkdown(*plan), HasSubstr("GPUs starved by CPU"));
  // With MIG isolation it keeps the whole H100 too: no instance, priced as one current GPU.
  o.target_gpu = "a100-80gb";
  o.mig_isolation = true;
  const Result<Plan> mig = BuildPlan(t, GpuCatalog::Embedded(), o, "demo");
  ASSERT_TRUE(mig.has_value()) << mig.error().message;
  ASSERT_TRUE(mig->mig.has_value());
  EXPECT_EQ(mig->mig->assignments.size(), 15u);
  for (const MigAssignment& a : mig->mig->assignments) EXPECT_NE(a.workload, pod.pod);
  EXPECT_DOUBLE_EQ(
      mig->mig_usd_per_month,
      (static_cast<double>(mig->mig->gpus + static_cast<int>(mig->mig->too_big.size())) * 3.4309 + 6.88) * 730);
  o.mig_isolation = false;
  // Without the container data the pod is packed like the others.
  t.containers.clear();
  const Result<Plan> blind = BuildPlan(t, GpuCatalog::Embedded(), o, "demo");
  ASSERT_TRUE(blind.has_value());
  EXPECT_TRUE(blind->kept_on_current_gpu().empty());
}

TEST(BuildPlan, BadOptionsNameTheOption) {
  struct Case {
    const char* name;
    PlanOptions options;
    Code code;
    const char* expect;
  };
  PlanOptions unknown = Options(), headroom = Options(), share = Options(), reserve = Options();
  unknown.target_gpu = "v100";
  headroom.headroom = -0.1;
  share.max_collision_share = 1.5;
  reserve.reserve = MiB{90000};
  const Case cases[] = {
      {"unknown gpu", unknown, Code::kNotFound, "unknown GPU model 'v100'"},
      {"negative headroom", headroom, Code::kInvalidArgument, "--headroom"},
      {"share above one", share, Code::kInvalidArgument, "--max-collision-share"},
      {"reserve above memory", reserve, Code::kInvalidArgument, "--reserve-mib"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Result<Plan> plan = BuildPlan(Demo(), GpuCatalog::Embedded(), c.options, "demo");
    ASSERT_FALSE(plan.has_value());
    EXPECT_EQ(plan.error().code, c.code);
    EXPECT_THAT(plan.error().message, HasSubstr(c.expect));
  }
}

// 48 h at 10-minute steps of pods flat at their memory (MiB), each at `duty` percent.
Telemetry FlatPods(const std::vector<std::pair<std::string, float>>& pods, float duty) {
  Telemetry t;
  t.step_s = 600;
  t.samples = 288;
  for (const auto& [name, mib] : pods) {
    PodSeries p;
    p.pod = name;
    p.last = t.samples - 1;
    p.fb_used_mib.assign(t.samples, mib);
    p.gpu_util_pct.assign(t.samples, duty);
    t.pods.push_back(p);
  }
  return t;
}

// Two pods flat at 40,960 MiB for 48 h (servers that pre-allocate): together exactly an
// A100-80GB's 81,920 MiB. Flat pods show no surprise, so the learned margin is 0, but a shared
// GPU keeps the group margin's floor (kPerPodFloorMib per pod beyond the first) free: never
// planned 100% full, so each keeps its own GPU.
TEST(BuildPlan, FlatPairIsNotPlannedFull) {
  Telemetry t = FlatPods({{"a", 40960}, {"b", 40960}}, 1);
  PlanOptions o = Options();
  o.target_gpu = "a100-80gb";
  const Result<Plan> plan = BuildPlan(t, GpuCatalog::Embedded(), o, "flat");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->memory_margin_mib, 0);
  EXPECT_EQ(plan->group_margin.per_pod_mib, kPerPodFloorMib);
  EXPECT_EQ(plan->totals.gpus_after, 2u);
  EXPECT_DOUBLE_EQ(plan->packing_line_mib(2), 81920 - 512);
  // 512 MiB less each and they share: 40,448 x 2 = 80,896 <= 81,920 - 512 = 81,408.
  for (PodSeries& p : t.pods) p.fb_used_mib.assign(t.samples, 40448);
  const Result<Plan> fits = BuildPlan(t, GpuCatalog::Embedded(), o, "flat");
  ASSERT_TRUE(fits);
  EXPECT_EQ(fits->totals.gpus_after, 1u);
}

// A pod at 0 MiB for 48 h was not measured (a CUDA context alone holds hundreds of MiB): it is
// flagged, keeps its current GPU alone, and is neither right-sized nor packed nor profiled.
TEST(BuildPlan, AllZeroPodIsFlaggedUnmeasured) {
  const Telemetry t = FlatPods({{"ns/zero", 0}, {"ns/real", 20000}}, 5);
  PlanOptions o = Options();
  o.target_gpu = "a100-80gb";
  const Result<Plan> plan = BuildPlan(t, GpuCatalog::Embedded(), o, "zero");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->unmeasured, (std::vector<std::size_t>{0}));
  EXPECT_EQ(plan->right_sizing[0].recommended_gpu, "a100-80gb");
  EXPECT_THAT(plan->right_sizing[0].reason, HasSubstr("unmeasured"));
  EXPECT_FALSE(plan->group_of[0].has_value());
  EXPECT_EQ(plan->totals.gpus_after, 2u);  // its own GPU and the real pod's
  const nlohmann::json j = nlohmann::json::parse(PlanToJson(*plan));
  EXPECT_EQ(j["warnings"]["unmeasured_pods"], nlohmann::json::array({"ns/zero"}));
  const WorkloadProfiles profiles = ProfileWorkloads(t, {"pod/ns/zero", "pod/ns/real"}, 0.99, 0, std::nullopt);
  ASSERT_EQ(profiles.workloads.size(), 1u);
  EXPECT_EQ(profiles.workloads[0].workload, "pod/ns/real");
  EXPECT_EQ(profiles.unmeasured, (std::vector<std::string>{"pod/ns/zero"}));
}

// A pod on a MIG instance holds its slice, not the GPU: the "before" cost charges it its
// compute slices' share of its GPU (1g.10gb: 1 of the A100-80GB's 7 compute slices), not a
// whole GPU. A100-80GB: 3.4309 USD/h (data/gpu_catalog.yaml), 730 h a month.
TEST(BuildPlan, APodOnAMigSliceIsPricedAsItsShareOfTheGpuBefore) {
  Telemetry t = FlatPods({{"ml/small", 5000}, {"ml/big", 60000}}, 5);
  t.pods[0].device = "GPU-a/gi7";
  t.pods[0].mig_profile = "1g.10gb";
  PlanOptions o = Options();
  o.target_gpu = "a100-80gb";
  const Result<Plan> plan = BuildPlan(t, GpuCatalog::Embedded(), o, "mig");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_NEAR(plan->totals.usd_per_month_before, (1.0 / 7 + 1) * 3.4309 * 730, 1e-6);
}

// Without GPU_I_PROFILE in the telemetry, the pod spec's nvidia.com/mig-2g.20gb says it:
// 2 of the A100-80GB's 7 compute slices.
TEST(BuildPlan, ThePodSpecsMigProfilePricesItsPodWhenTheTelemetryDoesNotSay) {
  Telemetry t = FlatPods({{"ml/small", 5000}, {"ml/big", 60000}}, 5);
  t.pods[0].device = "GPU-a/gi3";
  KubePod spec;
  spec.namespace_name = "ml";
  spec.name = "small";
  KubeContainer c;
  c.resources.devices["nvidia.com/mig-2g.20gb"] = 1;
  spec.containers.push_back(c);
  EXPECT_EQ(spec.MigProfile(), "2g.20gb");
  PlanOptions o = Options();
  o.target_gpu = "a100-80gb";
  o.spec_mig_profiles[spec.Key()] = spec.MigProfile();
  const Result<Plan> plan = BuildPlan(t, GpuCatalog::Embedded(), o, "mig");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_NEAR(plan->totals.usd_per_month_before, (2.0 / 7 + 1) * 3.4309 * 730, 1e-6);
}

TEST(KubePod, MigProfileUndoesTheDevicePluginsDot) {
  KubePod p;
  KubeContainer c;
  c.resources.devices["nvidia.com/mig-1g.10gb.me"] = 1;
  p.containers.push_back(c);
  EXPECT_EQ(p.MigProfile(), "1g.10gb+me");
  p.containers[0].resources.devices["nvidia.com/gpu"] = 1;  // a whole GPU beside it: no one slice
  EXPECT_EQ(p.MigProfile(), "");
}

// An unmeasured pod (0 MiB) on a 3g.40gb keeps its slice: 3/7 of the GPU before and after.
TEST(BuildPlan, AKeptPodOnAMigSliceKeepsItsShareAfter) {
  Telemetry t = FlatPods({{"ml/zero", 0}, {"ml/real", 20000}}, 5);
  t.pods[0].device = "GPU-a/gi2";
  t.pods[0].mig_profile = "3g.40gb";
  PlanOptions o = Options();
  o.target_gpu = "a100-80gb";
  const Result<Plan> plan = BuildPlan(t, GpuCatalog::Embedded(), o, "mig");
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->unmeasured, (std::vector<std::size_t>{0}));
  EXPECT_NEAR(plan->totals.usd_per_month_before, (3.0 / 7 + 1) * 3.4309 * 730, 1e-6);
  EXPECT_NEAR(plan->totals.usd_per_month_after, (3.0 / 7 + 1) * 3.4309 * 730, 1e-6);  // real alone on one A100
  EXPECT_NEAR(plan->fleet.usd_per_month_kept, 3.0 / 7 * 3.4309 * 730, 1e-6);          // the mixed fleet keeps it too
}

}  // namespace
}  // namespace gpufit
