#include "gpufit/optimize/mig_planner.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <set>

namespace gpufit {
namespace {

const MigGpu& H100() { return **MigCatalog::Embedded().Find("h100-80gb"); }

MigWorkload W(std::string name, std::int64_t mib) { return {std::move(name), MiB{mib}, 0}; }

// Brute force for tiny cases: the fewest GPUs such that the workloads, each on some
// adequate profile, split into per-GPU multisets that are valid layouts.
int BruteForceGpus(const MigGpu& gpu, const std::vector<MigWorkload>& ws) {
  for (int gpus = 1; gpus <= static_cast<int>(ws.size()); ++gpus) {
    std::vector<std::vector<const MigProfile*>> bins(static_cast<std::size_t>(gpus));
    std::function<bool(std::size_t)> go = [&](std::size_t i) {
      if (i == ws.size()) return true;
      for (const MigProfile& p : gpu.profiles) {
        if (p.media_extension() || p.memory < ws[i].memory_need) continue;
        for (auto& b : bins) {
          b.push_back(&p);
          if (CheckMigLayout(gpu, b).valid && go(i + 1)) return true;
          b.pop_back();
        }
      }
      return false;
    };
    if (go(0)) return gpus;
  }
  return static_cast<int>(ws.size());
}

TEST(MigLayouts, H100HasEveryValidLayoutWithoutMediaExtension) {
  const auto layouts = MigLayouts(H100());
  EXPECT_GT(layouts.size(), 20u);
  for (const auto& l : layouts)
    for (const auto& [p, n] : l) EXPECT_FALSE(p->media_extension());
}

TEST(PlanMigLayouts, MatchesBruteForceOnSmallCases) {
  // Needs by hand, H100 profiles: 9984 (1g.10gb), 20090 (1g.20gb/2g.20gb), 40448 (3g/4g), 81152 (7g) MiB.
  const std::vector<std::vector<MigWorkload>> cases = {
      {W("a", 30000), W("b", 30000), W("c", 15000)},                                // 3g + 3g | 1g.20gb: 2 GPUs
      {W("a", 30000), W("b", 9000), W("c", 9000), W("d", 15000)},                   // 3g + 1g.20gb + 1g + 1g: 1 GPU
      {W("a", 70000), W("b", 5000)},                                                // 7g | 1g: 2 GPUs
      {W("a", 15000), W("b", 15000), W("c", 15000), W("d", 15000), W("e", 15000)},  // 4 x 1g.20gb fill 8 slices
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    const Result<MigPlan> plan = PlanMigLayouts(H100(), cases[i]);
    ASSERT_TRUE(plan.has_value()) << plan.error().message;
    EXPECT_EQ(plan->gpus, BruteForceGpus(H100(), cases[i]));
    EXPECT_TRUE(plan->optimal);
    EXPECT_EQ(plan->gap, 0);
    // Every workload sits in an instance with at least its memory, on a valid layout.
    for (const MigAssignment& a : plan->assignments) {
      ASSERT_GE(a.gpu, 0) << a.workload;
      EXPECT_THAT(a.resource, ::testing::StartsWith("nvidia.com/mig-"));
    }
    for (const MigGpuPlan& g : plan->gpu_plans) EXPECT_TRUE(ValidateMigInstances(H100(), g.instances).has_value());
  }
}

TEST(PlanMigLayouts, SingleStrategyUsesOneProfilePerGpuAndCanCostMore) {
  // 3g + 1g.20gb + 1g + 1g fit one GPU mixed; with one profile per GPU: 3g | 1g.20gb x2 (the
  // two 1g.10gb needs fit 1g.20gb too): 2 GPUs.
  const std::vector<MigWorkload> ws = {W("a", 30000), W("b", 9000), W("c", 9000), W("d", 15000)};
  MigPlanOptions single;
  single.strategy = MigStrategy::kSingle;
  const MigPlan plan = *PlanMigLayouts(H100(), ws, single);
  EXPECT_EQ(plan.gpus, 2);
  for (const auto& [name, profiles] : plan.configs) EXPECT_EQ(profiles.size(), 1u) << name;
  EXPECT_EQ(PlanMigLayouts(H100(), ws)->gpus, 1);
}

TEST(PlanMigLayouts, SingleStrategyPlansWholeNodesOfOneMigDeviceType) {
  // Seven 9 GB pods and one 70 GB pod on H100. Per GPU, single takes 2 GPUs (7 x 1g.10gb, and
  // 1 x 7g.80gb: only 7g.80gb holds 70 GB). On nodes of 2 GPUs the two GPUs of a node share one
  // device type: a 7g node gives 2 instances (the big pod and one small one), the other six
  // small pods need a second node; 4 of 7g are 4 nodes. Best: 2 nodes, 4 GPUs.
  std::vector<MigWorkload> ws = {W("big", 70000)};
  for (int i = 0; i < 7; ++i) ws.push_back(W(fmt::format("s{}", i), 9000));
  MigPlanOptions single;
  single.strategy = MigStrategy::kSingle;
  EXPECT_EQ(PlanMigLayouts(H100(), ws, single)->gpus, 2);
  single.gpus_per_node = 2;
  const MigPlan plan = *PlanMigLayouts(H100(), ws, single);
  EXPECT_EQ(plan.gpus, 4);
  EXPECT_EQ(plan.nodes, 2);
  EXPECT_TRUE(plan.optimal);
  std::map<int, std::vector<std::vector<const MigProfile*>>> nodes;
  for (const MigGpuPlan& g : plan.gpu_plans) {
    ASSERT_GE(g.node, 0);
    nodes[g.node].emplace_back();
    for (const MigInstance& i : g.instances) nodes[g.node].back().push_back(i.profile);
  }
  ASSERT_EQ(nodes.size(), 2u);
  for (const auto& [n, gpus] : nodes) {
    EXPECT_EQ(gpus.size(), 2u);
    std::set<const MigProfile*> types;
    for (const auto& g : gpus) types.insert(g.begin(), g.end());
    EXPECT_EQ(types.size(), 1u) << "node " << n;
  }
  for (const MigAssignment& a : plan.assignments) EXPECT_GE(a.gpu, 0) << a.workload;
  // Nodes are a single-strategy rule; mixed has none.
  MigPlanOptions mixed;
  mixed.gpus_per_node = 2;
  const Result<MigPlan> refused = PlanMigLayouts(H100(), ws, mixed);
  ASSERT_FALSE(refused.has_value());
  EXPECT_THAT(refused.error().message, ::testing::HasSubstr("the mixed strategy has no rule across a node's GPUs"));
}

TEST(PlanMigPool, CostObjectivePicksTheCheaperModelAndLimitsHold) {
  const MigGpu& h100 = H100();
  const MigGpu& h200 = **MigCatalog::Embedded().Find("h200-141gb");
  // Two 60 GB pods: an H200 holds both (3g.71gb x2), H100 needs two 7g.80gb.
  const std::vector<MigWorkload> ws = {W("a", 60000), W("b", 60000)};
  MigPlanOptions cost;
  cost.minimize_cost = true;
  // H200 at 8 $/h vs two H100 at 6.88: one H200 is cheaper.
  const MigPlan cheap = *PlanMigPool({{&h100, 6.88, -1}, {&h200, 8.0, -1}}, ws, cost);
  EXPECT_EQ(cheap.gpus, 1);
  EXPECT_EQ(cheap.gpu_plans[0].gpu_model, "h200-141gb");
  EXPECT_DOUBLE_EQ(cheap.objective, 8.0);
  // No H200 allowed: two H100.
  const MigPlan limited = *PlanMigPool({{&h100, 6.88, -1}, {&h200, 8.0, 0}}, ws, cost);
  EXPECT_EQ(limited.gpus, 2);
  EXPECT_DOUBLE_EQ(limited.objective, 2 * 6.88);
  // A limit that leaves no plan is an error, not a wrong plan.
  const Result<MigPlan> none = PlanMigPool({{&h100, 6.88, 1}, {&h200, 8.0, 0}}, ws, cost);
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().code, Code::kFailedPrecondition);
}

TEST(PlanMigLayouts, TooBigWorkloadsAreReported) {
  const Result<MigPlan> plan = PlanMigLayouts(H100(), {W("huge", 90000), W("small", 1000)});
  ASSERT_TRUE(plan.has_value());
  EXPECT_THAT(plan->too_big, ::testing::ElementsAre("huge"));
  EXPECT_EQ(plan->gpus, 1);
  EXPECT_EQ(plan->assignments[0].gpu, -1);
}

TEST(MigPartedConfig, ParsesAsYamlInTheDocumentedFormat) {
  const MigPlan plan = *PlanMigLayouts(H100(), {W("a", 30000), W("b", 30000), W("c", 15000)});
  const YAML::Node root = YAML::Load(MigPartedConfig(plan));
  EXPECT_EQ(root["version"].as<std::string>(), "v1");
  ASSERT_TRUE(root["mig-configs"].IsMap());
  int gpus_described = 0;
  for (const auto& config : root["mig-configs"]) {
    const YAML::Node device = config.second[0];
    EXPECT_EQ(device["devices"].as<std::string>(), "all");
    EXPECT_TRUE(device["mig-enabled"].as<bool>());
    for (const auto& profile : device["mig-devices"]) {
      EXPECT_TRUE((*H100().Profile(profile.first.as<std::string>()))->max_count >= profile.second.as<int>());
    }
    ++gpus_described;
  }
  EXPECT_GE(gpus_described, 1);
}

}  // namespace
}  // namespace gpufit

namespace gpufit {
namespace {

TEST(PlanMigLayouts, AFixedProfileIsTheOnlyOneUsed) {
  const MigGpu& h100 = **MigCatalog::Embedded().Find("h100-80gb");
  // 2g.20gb asked by name for three replicas that would each fit a 1g.20gb by memory.
  std::vector<MigWorkload> w;
  for (int i = 0; i < 3; ++i)
    w.push_back(
        {.name = "r" + std::to_string(i), .memory_need = MiB{5000}, .compute_slices_need = 0, .profile = "2g.20gb"});
  const Result<MigPlan> plan = PlanMigLayouts(h100, w);
  ASSERT_TRUE(plan) << plan.error().message;
  for (const MigAssignment& a : plan->assignments) EXPECT_EQ(a.profile, "2g.20gb") << a.workload;
  EXPECT_EQ(SmallestProfile(h100, MiB{5000})->name, "1g.10gb");
  EXPECT_EQ(SmallestProfile(h100, MiB{1'000'000}), nullptr);
}

}  // namespace
}  // namespace gpufit

namespace gpufit {
namespace {

// Replicas apart on MIG: 7 replicas of one workload at 9 GiB (1g.10gb) fit one H100's seven
// 1g.10gb instances; apart, each needs a GPU of its own. With a second workload of 7 the
// planner fills two GPUs, and spreading needs 7 GPUs: each holds one replica of each set.
TEST(SpreadMigReplicas, NoGpuHoldsTwoReplicasOfOneSet) {
  std::vector<MigWorkload> w;
  std::vector<int> sets;
  for (int s = 0; s < 2; ++s)
    for (int r = 0; r < 7; ++r) {
      w.push_back({.name = fmt::format("s{}-r{}", s, r), .memory_need = MiB{9 * 1024}});
      sets.push_back(s);
    }
  Result<MigPlan> plan = PlanMigLayouts(H100(), w);
  ASSERT_TRUE(plan) << plan.error().message;
  ASSERT_EQ(plan->gpus, 2);
  const int added = SpreadMigReplicas(H100(), *plan, sets);
  EXPECT_EQ(plan->gpus, 2 + added);
  EXPECT_EQ(plan->gpus, 7);                   // 7 replicas of a set need 7 GPUs
  std::map<int, std::map<int, int>> per_gpu;  // gpu -> set -> replicas
  for (std::size_t k = 0; k < w.size(); ++k) {
    ASSERT_GE(plan->assignments[k].gpu, 0);
    ++per_gpu[plan->assignments[k].gpu][sets[k]];
    // The assignment and the GPU's own list agree.
    const auto& names = plan->gpu_plans[static_cast<std::size_t>(plan->assignments[k].gpu)].workloads;
    EXPECT_NE(std::find(names.begin(), names.end(), w[k].name), names.end()) << w[k].name;
  }
  for (const auto& [gpu, by_set] : per_gpu)
    for (const auto& [set, n] : by_set) EXPECT_EQ(n, 1) << "gpu " << gpu << " set " << set;
}

}  // namespace
}  // namespace gpufit
