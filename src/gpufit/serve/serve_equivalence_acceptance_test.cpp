// Issue 22, "same decisions as the simulator": the extender is fed the openb saturation arrival
// sequence one pod at a time, as kube-scheduler calls an extender that binds (filter over every
// node, prioritize over the nodes kept, bind to the highest score: with the extender's weight
// above the scheduler's own plugins, its unique 10 decides), and makes the same placements,
// node and GPUs, as `simulate` with the same policy and seed (sim/engine.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "gpufit/core/rng.h"
#include "gpufit/core/test_support.h"
#include "gpufit/ingest/files/openb_reader.h"
#include "gpufit/ingest/kube/kube_reader.h"
#include "gpufit/serve/extender.h"
#include "gpufit/sim/arrivals.h"
#include "gpufit/sim/engine.h"
#include "serve_fixture.h"

namespace gpufit::serve {
namespace {

using Json = nlohmann::json;

void ExpectSameDecisionsAsSimulate(const std::string& policy, std::uint64_t seed) {
  const std::string dir = gpufit::testing::DataDir() + "/openb/";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no openb trace under " << dir;
  Result<std::vector<NodeSpec>> nodes = ReadOpenbNodes(dir + "openb_node_list_all_node.csv");
  Result<std::vector<PodSpec>> pods = ReadOpenbPods(dir + "openb_pod_list_default.csv");
  ASSERT_TRUE(nodes) << nodes.error().message;
  ASSERT_TRUE(pods) << pods.error().message;
  for (const PodSpec& p : *pods) ASSERT_LE(p.gpu_models.size(), 1U) << p.name << ": one node selector holds one type";

  SimOptions options;
  options.keep_steps = true;
  Result<SimInput> input = PrepareSimulation(*nodes, *pods, options);
  ASSERT_TRUE(input) << input.error().message;
  Result<RunResult> run = Simulate(*input, policy, seed, options);
  ASSERT_TRUE(run) << run.error().message;

  // The arrivals, drawn as sim/engine.cpp draws them: the node order's shuffle, then the
  // sequence. The run's own record of them must agree.
  Rng rng(seed);
  (void)SeededNodeOrder(nodes->size(), rng);
  const std::vector<std::size_t> arrivals =
      SaturationArrivals(input->pods, input->initial.gpu_capacity(), options.inflation, rng);
  ASSERT_EQ(arrivals.size(), run->steps.size());

  // The extender's snapshot: the trace's nodes, and the trace's pods as Pending (nothing runs
  // yet; their shapes are the target workload, as simulate takes it from the trace).
  Json node_list = Json::array();
  for (const NodeSpec& n : *nodes) node_list.push_back(testing::NodeJsonOf(n));
  Result<std::vector<KubeNode>> kube_nodes = ParseKubeNodes(Json{{"kind", "NodeList"}, {"items", node_list}}, "nodes");
  ASSERT_TRUE(kube_nodes) << kube_nodes.error().message;
  std::vector<KubePod> pending;
  for (const PodSpec& p : *pods) pending.push_back(*ParseKubePod(testing::PodJsonOf(p, p.name), "pods"));
  Result<std::unique_ptr<Extender>> made = Extender::FromSnapshot(*kube_nodes, pending, {.policy = policy, .seed = seed});
  ASSERT_TRUE(made) << made.error().message;
  Extender& e = **made;

  std::vector<std::string> all_names;
  for (const NodeSpec& n : *nodes) all_names.push_back(n.name);
  int placed = 0;
  for (std::size_t k = 0; k < arrivals.size(); ++k) {
    const StepMetrics& step = run->steps[k];
    ASSERT_EQ(step.pod, static_cast<std::int64_t>(arrivals[k])) << "arrival " << k;
    const std::string name = "arrival-" + std::to_string(k);  // copies of a trace pod arrive under new names
    ExtenderArgs args{.pod = *ParseKubePod(testing::PodJsonOf(input->pods[arrivals[k]], name), "arrival"),
                      .node_names = all_names};
    const Result<FilterResult> kept = e.Filter(args);
    ASSERT_TRUE(kept) << kept.error().message;
    if (kept->kept.empty()) {
      ASSERT_EQ(step.node, -1) << "arrival " << k << ": the extender kept no node, simulate placed it on "
                               << nodes->at(static_cast<std::size_t>(step.node)).name;
      continue;
    }
    ASSERT_GE(step.node, 0) << "arrival " << k << ": simulate placed it nowhere, the extender kept "
                            << kept->kept.size() << " nodes";
    ExtenderArgs candidates{.pod = args.pod};
    for (const std::size_t i : kept->kept) candidates.node_names.push_back(all_names[i]);
    const Result<std::vector<HostPriority>> scores = e.Prioritize(candidates);
    ASSERT_TRUE(scores) << scores.error().message;
    const HostPriority* best = &scores->front();
    for (const HostPriority& h : *scores) {
      if (h.score > best->score) best = &h;
    }
    ASSERT_EQ(best->host, nodes->at(static_cast<std::size_t>(step.node)).name) << "arrival " << k;
    const Result<Reservation> bound = e.Reserve(
        BindingArgs{.pod_name = name, .pod_namespace = "trace", .pod_uid = "uid-" + name, .node = best->host});
    ASSERT_TRUE(bound) << bound.error().message;
    ASSERT_EQ(bound->gpus, step.gpus) << "arrival " << k << " on " << best->host;
    ++placed;
  }
  EXPECT_EQ(static_cast<std::int64_t>(arrivals.size()) - placed, run->failed_pods);
  EXPECT_DOUBLE_EQ(e.GpuAllocationRatio(), run->alloc_ratio);
  ::testing::Test::RecordProperty("arrivals", static_cast<int>(arrivals.size()));
  ::testing::Test::RecordProperty("placed", placed);
}

TEST(ServeEquivalence, GpufitPolicyOnOpenbSaturation) { ExpectSameDecisionsAsSimulate("gpufit", 42); }

TEST(ServeEquivalence, FgdPolicyOnOpenbSaturationAnotherSeed) { ExpectSameDecisionsAsSimulate("fgd", 7); }

}  // namespace
}  // namespace gpufit::serve
