// Replicas apart (PlanOptions::replicas_apart): no two replicas of one workload share a GPU
// in the same-model plan or the mixed fleet; bare pods and whole_workloads are not held to it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "gpufit/plan/plan.h"

namespace gpufit {
namespace {

// 48 h at 10-minute steps: three replicas of deployment/ml/web and two bare pods, each flat
// at 10,000 MiB and 2% duty: all five fit one A100-80GB (50,000 MiB, 10% duty together).
Telemetry FivePods() {
  Telemetry t;
  t.step_s = 600;
  t.samples = 288;
  for (const char* name : {"ml/web-1", "ml/web-2", "ml/web-3", "ml/x", "ml/y"}) {
    PodSeries p;
    p.pod = name;
    p.last = t.samples - 1;
    p.fb_used_mib.assign(t.samples, 10000);
    p.gpu_util_pct.assign(t.samples, 2);
    t.pods.push_back(p);
  }
  return t;
}

PlanOptions Options(bool apart) {
  PlanOptions o;
  o.target_gpu = "a100-80gb";
  o.search_budget = 2'000'000;
  o.replicas_apart = apart;
  for (const char* pod : {"ml/web-1", "ml/web-2", "ml/web-3"}) o.workload_by_pod[pod] = "deployment/ml/web";
  o.workload_by_pod["ml/x"] = "pod/ml/x";
  o.workload_by_pod["ml/y"] = "pod/ml/y";
  return o;
}

std::size_t WebPods(const std::vector<std::size_t>& pods) {
  return static_cast<std::size_t>(std::count_if(pods.begin(), pods.end(), [](std::size_t p) { return p < 3; }));
}

TEST(ReplicasApart, NoGpuOfEitherPlanHoldsTwoReplicas) {
  const Result<Plan> plan = BuildPlan(FivePods(), GpuCatalog::Embedded(), Options(true), "apart");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->replica_set, (std::vector<int>{0, 0, 0, -1, -1}));
  // Three replicas need three GPUs; the bare pods ride along.
  EXPECT_EQ(plan->replay.gpus.size(), 3U);
  // The bound knows: 3 replicas need 3 GPUs, so the plan is optimal.
  EXPECT_EQ(plan->largest_replica_set, 3U);
  EXPECT_EQ(plan->totals.gpus_lower_bound, 3U);
  for (const GpuReplay& g : plan->replay.gpus) EXPECT_LE(WebPods(g.pods), 1U);
  ASSERT_FALSE(plan->fleet.gpus.empty());
  std::size_t web = 0;
  for (const FleetGpu& g : plan->fleet.gpus) {
    EXPECT_LE(WebPods(g.pods), 1U) << g.model;
    web += WebPods(g.pods);
  }
  EXPECT_EQ(web, 3U);
}

TEST(ReplicasApart, OffTheyShareOneGpu) {
  const Result<Plan> plan = BuildPlan(FivePods(), GpuCatalog::Embedded(), Options(false), "together");
  ASSERT_TRUE(plan) << plan.error().message;
  EXPECT_EQ(plan->replay.gpus.size(), 1U);
  EXPECT_EQ(plan->replica_set, (std::vector<int>(5, -1)));
}

}  // namespace
}  // namespace gpufit
