#include "gpufit/sim/engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <deque>
#include <filesystem>
#include <numeric>
#include <random>

#include "gpufit/core/test_support.h"
#include "gpufit/ingest/files/openb_reader.h"
#include "gpufit/placement/registry.h"
#include "gpufit/sim/arrivals.h"
#include "gpufit/sim/batch.h"
#include "gpufit/sim/report.h"

namespace gpufit {
namespace {

using ::testing::HasSubstr;

NodeSpec Node(std::string name, int gpus, std::int64_t cpu = 16000) {
  return {.name = std::move(name), .cpu = MilliCpu{cpu}, .memory = MiB{65536}, .gpu_count = gpus, .gpu_model = "T4"};
}

PodSpec Pod(std::string name, int gpus, std::int64_t milli, double created = 0, std::optional<double> deleted = {},
            std::int64_t cpu = 1000) {
  PodSpec p;
  p.name = std::move(name);
  p.cpu = MilliCpu{cpu};
  p.memory = MiB{1024};
  p.gpu_count = gpus;
  p.gpu_per_gpu = GpuMilli{gpus ? milli : 0};
  p.creation = Seconds(created);
  if (deleted) p.deletion = Seconds(*deleted);
  return p;
}

TEST(Saturation, TwoGpusFourWholeGpuPods) {
  // 4 one-GPU pods (4000 milli-GPU) ask for exactly 2.0 x 2000: no copies, none cut (a
  // target of 1.0 would cut two at random, as the simulator's tuneDownPods). The first two
  // fill both GPUs, the last two fail; arrivals reach 90% (100%) at pod 2.
  SimOptions o;
  o.inflation = 2.0;
  o.check_invariants = true;
  const SimInput in = *PrepareSimulation(
      {Node("n", 2)}, {Pod("a", 1, 1000), Pod("b", 1, 1000), Pod("c", 1, 1000), Pod("d", 1, 1000)}, o);
  const Result<RunResult> r = Simulate(in, "best-fit", 42, o);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->pods_submitted, 4);
  EXPECT_EQ(r->failed_pods, 2);
  EXPECT_DOUBLE_EQ(r->alloc_ratio, 1.0);
  EXPECT_DOUBLE_EQ(r->unallocated_gpus, 0.0);
  ASSERT_TRUE(r->unallocated_gpus_at_first_failure.has_value());
  EXPECT_DOUBLE_EQ(*r->unallocated_gpus_at_first_failure, 0.0);
  ASSERT_EQ(r->steps.size(), 4u);
  EXPECT_DOUBLE_EQ(r->steps[0].arrived_gpu_pct, 50.0);
  EXPECT_DOUBLE_EQ(r->steps[0].alloc_ratio, 0.5);
  EXPECT_DOUBLE_EQ(r->steps[3].arrived_gpu_pct, 200.0);
  EXPECT_EQ(r->steps[3].failed_pods, 2);
}

TEST(Replay, FragmentationRateWhenArrivalsReachNinetyPercent) {
  // One node with 2 GPUs. h (half a GPU) at t=0, w1 and w2 (one GPU each) at t=1 and t=2.
  // Target shapes: whole GPU (3 of 4 pods, share .75), half GPU (share .25). Arrivals reach
  // 90% of 2000 milli-GPU with w2 (2500): h is on GPU 0, w1 on GPU 1, w2 waits. Free: 500
  // on GPU 0, a fragment for the whole-GPU shape and usable by the half-GPU shape:
  // frag = .75 * 500 = 375, rate = 375 / 500 = .75.
  SimOptions o;
  o.mode = SimMode::kReplay;
  o.target.popularity = 1.0;
  const SimInput in = *PrepareSimulation(
      {Node("n", 2)}, {Pod("h", 1, 500, 0), Pod("w1", 1, 1000, 1), Pod("w2", 1, 1000, 2), Pod("w3", 1, 1000, 3)}, o);
  ASSERT_EQ(in.target->size(), 2u);
  const RunResult r = *Simulate(in, "first-fit", 1, o);
  EXPECT_DOUBLE_EQ(r.steps[2].frag_milli, 375.0);
  ASSERT_TRUE(r.frag_rate_at_90.has_value());
  EXPECT_DOUBLE_EQ(*r.frag_rate_at_90, 0.75);
  EXPECT_EQ(r.steps[2].pending_pods, 1);
}

TEST(Replay, WaitingPodRunsWhenAnotherLeaves) {
  // One GPU. a runs [0,10); b arrives at 5, waits, runs [10,20); c runs [25,30).
  // Allocation over [0,30]: 1 on [0,20), 0 on [20,25), 1 on [25,30): mean 25/30.
  SimOptions o;
  o.mode = SimMode::kReplay;
  o.check_invariants = true;
  const SimInput in = *PrepareSimulation(
      {Node("n", 1)}, {Pod("a", 1, 1000, 0, 10), Pod("b", 1, 1000, 5, 20), Pod("c", 1, 1000, 25, 30)}, o);
  const RunResult r = *Simulate(in, "best-fit", 1, o);
  EXPECT_EQ(r.failed_pods, 0);
  EXPECT_NEAR(r.alloc_ratio, 25.0 / 30.0, 1e-12);
  ASSERT_EQ(r.steps.size(), 6u);
  EXPECT_EQ(r.steps[1].pending_pods, 1);  // b waits at t=5
  EXPECT_EQ(r.steps[2].pending_pods, 0);  // a left at 10, b runs
  EXPECT_EQ(r.steps[2].running_pods, 1);
}

TEST(Replay, PodThatLeavesBeforeItRunsHasFailed) {
  SimOptions o;
  o.mode = SimMode::kReplay;
  const SimInput in = *PrepareSimulation({Node("n", 1)}, {Pod("a", 1, 1000, 0, 10), Pod("b", 1, 1000, 1, 2)}, o);
  EXPECT_EQ(Simulate(in, "fgd", 1, o)->failed_pods, 1);
}

TEST(Replay, ZeroLengthPodRunsAndLeaves) {
  SimOptions o;
  o.mode = SimMode::kReplay;
  o.check_invariants = true;
  const SimInput in = *PrepareSimulation({Node("n", 1)}, {Pod("z", 1, 1000, 3, 3), Pod("b", 1, 1000, 4, 9)}, o);
  const RunResult r = *Simulate(in, "fgd", 1, o);
  EXPECT_EQ(r.failed_pods, 0);
  EXPECT_EQ(r.steps[1].running_pods, 0);  // z came and went at t=3
  EXPECT_EQ(r.steps[2].running_pods, 1);  // b found the GPU free
}

TEST(Replay, PodThatNoNodeCouldEverTakeFailsAtOnce) {
  SimOptions o;
  o.mode = SimMode::kReplay;
  const SimInput in = *PrepareSimulation({Node("n", 1)}, {Pod("big", 4, 1000, 0, 9)}, o);
  const RunResult r = *Simulate(in, "gpufit", 1, o);
  EXPECT_EQ(r.failed_pods, 1);
  EXPECT_EQ(r.steps[0].pending_pods, 0);
}

// Replay as engine.h states it, written plainly: every waiting pod retried, in arrival
// order, on every node after every departure. Returns per event: running, waiting, failed,
// allocated milli-GPU.
std::vector<std::array<std::int64_t, 4>> PlainReplay(const SimInput& in, const std::string& policy_name,
                                                     std::uint64_t seed) {
  ClusterState cluster = in.initial;
  Policy policy = *MakePolicy(policy_name, PolicyContext{in.target});
  Rng rng(seed);
  std::vector<int> order(cluster.nodes().size());
  std::iota(order.begin(), order.end(), 0);
  rng.Shuffle(order);
  policy.SetNodeOrder(order);
  struct Running {
    std::size_t pod;
    int node;
    GpuSet gpus;
  };
  std::vector<Running> running;
  std::deque<std::size_t> waiting;
  std::int64_t failed = 0;
  std::vector<std::array<std::int64_t, 4>> steps;
  auto try_place = [&](std::size_t pod) {
    const Policy::Decision d = policy.Place(in.workloads[pod], cluster, rng, false);
    if (d.node >= 0) {
      cluster.Place(d.node, in.workloads[pod], d.gpus);
      running.push_back({pod, d.node, d.gpus});
    }
    return d;
  };
  for (const TraceEvent& e : ReplayEvents(in.pods)) {
    if (e.arrival) {
      const Policy::Decision d = try_place(e.pod);
      if (d.node < 0 && d.verdict.kind == Verdict::Kind::kNever) ++failed;
      if (d.node < 0 && d.verdict.kind != Verdict::Kind::kNever) waiting.push_back(e.pod);
    } else if (auto it = std::find_if(running.begin(), running.end(), [&](const Running& r) { return r.pod == e.pod; });
               it != running.end()) {
      cluster.Remove(it->node, in.workloads[e.pod], it->gpus);
      running.erase(it);
      for (std::size_t k = waiting.size(); k > 0; --k) {
        const std::size_t p = waiting.front();
        waiting.pop_front();
        if (try_place(p).node < 0) waiting.push_back(p);
      }
    } else if (auto w = std::find(waiting.begin(), waiting.end(), e.pod); w != waiting.end()) {
      waiting.erase(w);
      ++failed;
    }
    steps.push_back({static_cast<std::int64_t>(running.size()), static_cast<std::int64_t>(waiting.size()), failed,
                     cluster.gpu_allocated().value});
  }
  return steps;
}

TEST(Replay, OverloadedClusterRunsAsPlainRetryOfEveryWaitingPod) {
  // 4 nodes, 14 GPUs; 400 pods of a few shapes (0-2 GPUs, shares, CPU-heavy ones) over
  // 1000 s, each 1-300 s long: about 7x the GPUs are asked for at once, so most pods wait.
  std::mt19937_64 gen(9);
  std::vector<NodeSpec> nodes = {Node("a", 2), Node("b", 4, 8000), Node("c", 8), Node("d", 0)};
  std::vector<PodSpec> pods;
  const std::int64_t milli[] = {250, 500, 1000};
  for (int i = 0; i < 400; ++i) {
    const int gpus = static_cast<int>(gen() % 3);
    const double created = static_cast<double>(gen() % 1000);
    pods.push_back(Pod("p" + std::to_string(i), gpus, gpus == 1 ? milli[gen() % 3] : 1000, created,
                       created + 1 + static_cast<double>(gen() % 300), gen() % 4 == 0 ? 7000 : 1000));
  }
  SimOptions o;
  o.mode = SimMode::kReplay;
  o.check_invariants = true;
  const SimInput in = *PrepareSimulation(nodes, pods, o);
  for (const char* policy : {"random", "best-fit", "fgd", "gpufit"}) {
    const RunResult r = *Simulate(in, policy, 3, o);
    const std::vector<std::array<std::int64_t, 4>> plain = PlainReplay(in, policy, 3);
    ASSERT_EQ(r.steps.size(), plain.size()) << policy;
    std::int64_t most_waiting = 0;
    for (std::size_t k = 0; k < plain.size(); ++k) {
      const StepMetrics& s = r.steps[k];
      const double alloc = static_cast<double>(plain[k][3]) / static_cast<double>(in.initial.gpu_capacity().value);
      ASSERT_EQ(s.running_pods, plain[k][0]) << policy << " event " << k;
      ASSERT_EQ(s.pending_pods, plain[k][1]) << policy << " event " << k;
      ASSERT_EQ(s.failed_pods, plain[k][2]) << policy << " event " << k;
      ASSERT_DOUBLE_EQ(s.alloc_ratio, alloc) << policy << " event " << k;
      most_waiting = std::max(most_waiting, plain[k][1]);
    }
    EXPECT_GE(most_waiting, 30) << policy;  // overloaded indeed
    EXPECT_EQ(r.failed_pods, plain.back()[2] + plain.back()[1]);
  }
}

TEST(Simulate, UnknownPolicyAndBadOptionsAreErrors) {
  SimOptions o;
  const SimInput in = *PrepareSimulation({Node("n", 1)}, {Pod("a", 1, 1000)}, o);
  const Result<RunResult> r = Simulate(in, "nope", 1, o);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code, Code::kNotFound);
  o.inflation = 0.5;
  EXPECT_FALSE(PrepareSimulation({Node("n", 1)}, {Pod("a", 1, 1000)}, o).has_value());
  o.inflation = 100;  // 1-milli-GPU copies to reach 100 x 16 nodes x 16 GPUs: 25.6 million
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 16; ++i) nodes.push_back(Node("n" + std::to_string(i), 16));
  const Result<SimInput> huge = PrepareSimulation(nodes, {Pod("a", 1, 1)}, o);
  ASSERT_FALSE(huge.has_value());
  EXPECT_THAT(huge.error().message, HasSubstr("more than 10000000 arrivals"));
  EXPECT_FALSE(PrepareSimulation({Node("n", 0)}, {Pod("a", 0, 0)}, SimOptions{}).has_value());  // no GPUs
}

TEST(Simulate, SameSeedSameRun) {
  SimOptions o;
  std::vector<PodSpec> pods;
  for (int i = 0; i < 40; ++i) pods.push_back(Pod("p" + std::to_string(i), 1, 100 + 20 * i));
  const SimInput in = *PrepareSimulation({Node("a", 4), Node("b", 4), Node("c", 2)}, pods, o);
  for (const char* policy : {"random", "fgd", "gpufit"}) {
    const RunResult x = *Simulate(in, policy, 7, o), y = *Simulate(in, policy, 7, o);
    EXPECT_EQ(StepsCsv(x), StepsCsv(y)) << policy;
  }
}

TEST(ParseSeeds, RangesAndLists) {
  EXPECT_THAT(*ParseSeeds("42-45"), ::testing::ElementsAre(42, 43, 44, 45));
  EXPECT_THAT(*ParseSeeds("1,5,9"), ::testing::ElementsAre(1, 5, 9));
  EXPECT_THAT(*ParseSeeds("3"), ::testing::ElementsAre(3));
  EXPECT_THAT(*ParseSeeds("18446744073709551614-18446744073709551615"),
              ::testing::ElementsAre(18446744073709551614ULL, 18446744073709551615ULL));
  for (const char* bad : {"", "a", "5-2", "1,,2", "-3", "1,1", "0-9999,10000-19999", "0-20000"}) {
    const Result<std::vector<std::uint64_t>> s = ParseSeeds(bad);
    ASSERT_FALSE(s.has_value()) << bad;
    EXPECT_THAT(s.error().message, HasSubstr("--seeds"));
  }
}

TEST(RunBatch, ParallelRunsEqualSerialRuns) {
  SimOptions o;
  std::vector<PodSpec> pods;
  for (int i = 0; i < 60; ++i)
    pods.push_back(Pod("p" + std::to_string(i), 1 + (i % 3 == 0), i % 3 ? 100 + 15 * i : 1000));
  const SimInput in = *PrepareSimulation({Node("a", 4), Node("b", 8), Node("c", 2)}, pods, o);
  const std::vector<std::string> policies = {"fgd", "gpufit", "random"};
  const std::vector<std::uint64_t> seeds = {1, 2, 3};
  const std::vector<RunResult> parallel = *RunBatch(in, policies, seeds, o, 3);
  ASSERT_EQ(parallel.size(), 9u);
  for (std::size_t j = 0; j < parallel.size(); ++j) {
    const RunResult serial = *Simulate(in, policies[j / 3], seeds[j % 3], o);
    EXPECT_EQ(parallel[j].policy, policies[j / 3]);
    EXPECT_EQ(parallel[j].seed, seeds[j % 3]);
    EXPECT_EQ(StepsCsv(parallel[j]), StepsCsv(serial));
  }
}

TEST(SpreadOf, MeanAndSampleStandardDeviation) {
  const Spread s = SpreadOf({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_DOUBLE_EQ(s.mean, 5.0);
  EXPECT_NEAR(s.sd, std::sqrt(32.0 / 7.0), 1e-12);
}

// Every placement on the real trace, in both modes, checked after every event.
TEST(OpenbTrace, InvariantsHoldAfterEveryEvent) {
  const std::string dir = testing::DataDir() + "/openb/";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no " << dir;
  SimOptions o;
  o.check_invariants = true;
  const SimInput in = *PrepareSimulation(*ReadOpenbNodes(dir + "openb_node_list_gpu_node.csv"),
                                         *ReadOpenbPods(dir + "openb_pod_list_gpuspec33.csv"), o);
  for (const char* policy : {"fgd", "gpufit", "random"}) {
    const Result<RunResult> r = Simulate(in, policy, 42, o);
    ASSERT_TRUE(r.has_value()) << r.error().message;
  }
  o.mode = SimMode::kReplay;
  const Result<RunResult> replay = Simulate(in, "gpufit", 42, o);
  ASSERT_TRUE(replay.has_value()) << replay.error().message;
  EXPECT_EQ(replay->pods_submitted, 8152);
}

}  // namespace
}  // namespace gpufit
