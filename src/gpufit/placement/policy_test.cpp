#include "gpufit/placement/policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>

#include "gpufit/placement/gpu_pickers.h"
#include "gpufit/placement/registry.h"
#include "gpufit/placement/scores.h"
#include "gpufit/placement/test_cluster.h"
#include "gpufit/placement/test_oracle.h"

namespace gpufit {
namespace {

using ::testing::HasSubstr;
using testing::MakeCluster;
using testing::MakeWorkload;

std::shared_ptr<const std::vector<TypicalPod>> Target() {
  return std::make_shared<const std::vector<TypicalPod>>(
      std::vector<TypicalPod>{{.cpu = MilliCpu{8000}, .gpu_count = 1, .gpu_per_gpu = GpuMilli{1000}, .share = 0.4},
                              {.cpu = MilliCpu{4000}, .gpu_count = 1, .gpu_per_gpu = GpuMilli{500}, .share = 0.3},
                              {.cpu = MilliCpu{2000}, .gpu_count = 1, .gpu_per_gpu = GpuMilli{250}, .share = 0.2},
                              {.cpu = MilliCpu{16000}, .gpu_count = 0, .gpu_per_gpu = GpuMilli{0}, .share = 0.1}});
}

Policy Make(std::string_view name) {
  Result<Policy> p = MakePolicy(name, PolicyContext{Target()});
  EXPECT_TRUE(p.has_value()) << p.error().message;
  return std::move(*p);
}

TEST(Registry, KnowsThePaperBaselinesFgdAndGpufit) {
  EXPECT_THAT(PolicyNames(), ::testing::ElementsAre("random", "first-fit", "best-fit", "dot-product", "gpu-packing",
                                                    "gpu-clustering", "fgd", "gpufit"));
}

TEST(Registry, UnknownPolicyIsNotFoundAndListsTheKnownOnes) {
  const Result<Policy> p = MakePolicy("tetris", PolicyContext{Target()});
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().code, Code::kNotFound);
  EXPECT_THAT(p.error().message, HasSubstr("unknown policy 'tetris' (known: random, first-fit"));
}

TEST(Registry, FgdNeedsATargetWorkload) {
  const Result<Policy> p = MakePolicy("fgd", PolicyContext{});
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.error().code, Code::kInvalidArgument);
}

TEST(Policy, FirstFitTakesTheFirstFeasibleNodeInNodeOrder) {
  const ClusterState c = MakeCluster({{.cpu = 1000}, {}, {}});
  Policy p = Make("first-fit");
  Rng rng(1);
  const Workload w = MakeWorkload({.cpu = 2000});
  EXPECT_EQ(p.Place(w, c, rng).node, 1);  // node 0 lacks CPU
  p.SetNodeOrder({2, 0, 1});
  EXPECT_EQ(p.Place(w, c, rng).node, 2);
}

TEST(Policy, RandomTieBreakIsUniform) {
  const ClusterState c = MakeCluster({{}, {}, {}});
  Policy p = Make("random");
  Rng rng(5);
  int counts[3] = {};
  for (int i = 0; i < 3000; ++i) ++counts[p.Place(MakeWorkload({}), c, rng).node];
  for (int n = 0; n < 3; ++n) EXPECT_NEAR(counts[n], 1000, 120) << "node " << n;
}

TEST(Policy, SaysWhyNoNodeFits) {
  const ClusterState c = MakeCluster({{.cpu = 8000, .cpu_used = 7000}, {.gpus = 2, .gpu_used = {300, 0}}});
  Policy p = Make("best-fit");
  Rng rng(1);
  const Policy::Decision busy = p.Place(MakeWorkload({.cpu = 2000, .gpus = 2}), c, rng);
  EXPECT_LT(busy.node, 0);
  EXPECT_EQ(busy.verdict.kind, Verdict::Kind::kNotNow);  // node 1 frees up when its pod leaves
  EXPECT_EQ(busy.why, "0/2 nodes fit: 1 insufficient cpu, 1 too few idle GPUs");
  const Policy::Decision never = p.Place(MakeWorkload({.gpus = 16}), c, rng);
  EXPECT_EQ(never.verdict.kind, Verdict::Kind::kNever);
}

// --- Brute force: every feasible (node, GPU) of small random clusters, scored from the
// definitions, against the pipeline's choice.

struct Option {
  int node = -1;
  GpuSet gpus = 0;
  double key = 0;
};

NodeFree FreeAfter(const NodeState& n, const Workload& w, GpuSet gpus) {
  NodeFree f{.cpu = n.cpu_free() - w.cpu, .model = n.model, .gpu_count = n.gpu_count};
  for (int g = 0; g < n.gpu_count; ++g)
    f.gpu[static_cast<std::size_t>(g)] =
        n.gpu_free[static_cast<std::size_t>(g)] - ((gpus >> g) & 1 ? w.gpu_per_gpu : GpuMilli{0});
  return f;
}

// The best option by `key`, first node in `order` and lowest GPU on ties.
template <class Key>
Option BruteForce(const ClusterState& c, const Workload& w, const std::vector<int>& order, Key key) {
  Option best;
  for (int id : order) {
    const NodeState& n = c.node(id);
    if (w.cpu > n.cpu_free() || w.memory > n.memory_free()) continue;
    std::vector<GpuSet> options;
    if (w.gpu_count == 0) {
      options.push_back(0);
    } else if (w.SharesGpu()) {
      for (int g = 0; g < n.gpu_count; ++g)
        if (n.gpu_free[static_cast<std::size_t>(g)] >= w.gpu_per_gpu) options.push_back(GpuSet{1} << g);
    } else {
      GpuSet idle = 0;
      int count = 0;
      for (int g = 0; g < n.gpu_count && count < w.gpu_count; ++g)
        if (n.gpu_free[static_cast<std::size_t>(g)].value == 1000) idle |= GpuSet{1} << g, ++count;
      if (count == w.gpu_count) options.push_back(idle);
    }
    for (GpuSet gpus : options) {
      const double k = key(n, gpus);
      if (best.node < 0 || k > best.key) best = {id, gpus, k};
    }
  }
  return best;
}

ClusterState RandomCluster(Rng& rng) {
  std::vector<testing::NodeArgs> nodes(2 + rng.Below(4));
  for (auto& n : nodes) {
    n.cpu = 8000 + static_cast<std::int64_t>(rng.Below(9)) * 4000;
    n.gpus = 1 + static_cast<int>(rng.Below(4));
    n.cpu_used = static_cast<std::int64_t>(rng.Below(static_cast<std::uint64_t>(n.cpu / 1000))) * 1000;
    for (int g = 0; g < n.gpus; ++g) n.gpu_used.push_back(static_cast<std::int64_t>(rng.Below(5)) * 250);
  }
  return MakeCluster(nodes);
}

Workload RandomPod(Rng& rng) {
  const std::uint64_t kind = rng.Below(4);
  return MakeWorkload({.cpu = static_cast<std::int64_t>(1 + rng.Below(12)) * 1000,
                       .gpus = kind == 0 ? 0 : (kind == 3 ? 2 : 1),
                       .milli = kind == 1 ? 250 * static_cast<std::int64_t>(1 + rng.Below(3)) : 1000});
}

std::vector<int> RandomOrder(std::size_t n, Rng& rng) {
  std::vector<int> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<int>(i);
  rng.Shuffle(order);
  return order;
}

// 500 random small clusters, pods and node orders: `policy` picks the node and GPUs that
// BruteForce picks with key(workload, node, gpus).
template <class Key>
void ExpectMatchesBruteForce(std::string_view policy, std::uint64_t seed, Key key) {
  Rng rng(seed);
  for (int trial = 0; trial < 500; ++trial) {
    SCOPED_TRACE(trial);
    const ClusterState c = RandomCluster(rng);
    const Workload w = RandomPod(rng);
    const std::vector<int> order = RandomOrder(c.nodes().size(), rng);
    const Option expected = BruteForce(c, w, order, [&](const NodeState& n, GpuSet gpus) { return key(w, n, gpus); });
    Policy p = Make(policy);
    p.SetNodeOrder(order);
    const Policy::Decision d = p.Place(w, c, rng);
    EXPECT_EQ(d.node, expected.node);
    if (expected.node >= 0) {
      EXPECT_EQ(d.gpus, expected.gpus);
    }
  }
}

TEST(Policy, FgdMatchesBruteForceOnSmallClusters) {
  const auto target = Target();
  ExpectMatchesBruteForce("fgd", 11, [&](const Workload& w, const NodeState& n, GpuSet gpus) {
    const double delta =
        testing::FragOracle(NodeFree::Of(n), *target) - testing::FragOracle(FreeAfter(n, w, gpus), *target);
    return std::floor(100.0 / (1.0 + std::exp(-delta / 1000.0)));  // the simulator's integer score
  });
}

TEST(Policy, GpufitMatchesBruteForceOnSmallClusters) {
  const auto target = Target();
  // rho by hand: mean over the GPU shapes of CPU / GPU, weighted by share:
  // (.4 * 8 + .3 * 8 + .2 * 8) / .9 = 8 millicores per milli-GPU.
  const double rho = 8.0;
  auto stranded = [&](const NodeFree& f) {
    double gpu = 0;
    for (int g = 0; g < f.gpu_count; ++g) gpu += static_cast<double>(f.gpu[static_cast<std::size_t>(g)].value);
    return std::max(0.0, gpu - static_cast<double>(f.cpu.value) / rho);
  };
  ExpectMatchesBruteForce("gpufit", 12, [&](const Workload& w, const NodeState& n, GpuSet gpus) {
    const NodeFree before = NodeFree::Of(n), after = FreeAfter(n, w, gpus);
    const double value = testing::FragOracle(before, *target) - testing::FragOracle(after, *target) -
                         2.0 * (stranded(after) - stranded(before));
    return std::round(value * 1000.0);  // the plugin's fixed-point score
  });
}

// --- The index: decisions over a changing cluster, against a scan of every node in node
// order written from policy.h's definition (best value; kFirst: the first; kRandom:
// reservoir sampling, each node tying the best so far drawing rng.Below(ties)).

// The node a scan chooses, with the draws a scan makes on `rng`.
int ScanChoice(Policy& oracle, TieBreak tie_break, const Workload& w, const ClusterState& c,
               const std::vector<int>& order, Rng& rng) {
  std::optional<std::int64_t> best;
  std::uint64_t ties = 0;
  int chosen = -1;
  for (int id : order) {
    const std::optional<std::int64_t> v = oracle.Value(w, c, c.node(id));
    if (!v) continue;
    if (!best || *v > *best) {
      best = v;
      chosen = id;
      ties = 1;
    } else if (*v == *best) {
      ++ties;
      if (tie_break == TieBreak::kRandom && rng.Below(ties) == 0) chosen = id;
    }
  }
  return chosen;
}

// kRandom with GPU packing's coarse scores (many ties, several record values per scan) and a
// picker that draws nothing, so both random streams must stay in step.
Policy RandomTiesPolicy() {
  std::vector<WeightedScore> scores;
  scores.push_back({std::make_unique<GpuPackingScore>(), 1});
  return Policy("packing-random", StandardFilters(), std::move(scores), std::make_unique<BestFitGpu>(),
                TieBreak::kRandom);
}

void ExpectIndexMatchesScan(const std::function<Policy()>& make, TieBreak tie_break, std::uint64_t seed) {
  Rng setup(seed);
  for (int trial = 0; trial < 20; ++trial) {
    SCOPED_TRACE(trial);
    std::vector<testing::NodeArgs> args(5 + setup.Below(40));
    for (auto& n : args) {
      n.cpu = 16000 + static_cast<std::int64_t>(setup.Below(4)) * 16000;
      n.gpus = 1 + static_cast<int>(setup.Below(8));
      n.model = setup.Below(3) == 0 ? "T4" : "G2";
    }
    ClusterState c = MakeCluster(args);
    Policy indexed = make(), oracle = make();
    const std::vector<int> order = RandomOrder(c.nodes().size(), setup);
    indexed.SetNodeOrder(order);
    Rng a(seed + static_cast<std::uint64_t>(trial)), b(seed + static_cast<std::uint64_t>(trial));
    struct Placed {
      int node;
      Workload w;
      GpuSet gpus;
    };
    std::vector<Placed> placed;
    const std::vector<Workload> shapes = {RandomPod(setup), RandomPod(setup), RandomPod(setup), RandomPod(setup)};
    for (int step = 0; step < 150; ++step) {
      SCOPED_TRACE(step);
      if (!placed.empty() && setup.Below(3) == 0) {  // a departure
        const std::size_t k = setup.Below(placed.size());
        c.Remove(placed[k].node, placed[k].w, placed[k].gpus);
        placed.erase(placed.begin() + static_cast<std::ptrdiff_t>(k));
        continue;
      }
      const Workload w = shapes[setup.Below(shapes.size())];
      const int expected = ScanChoice(oracle, tie_break, w, c, order, b);
      const Policy::Decision d = indexed.Place(w, c, a, /*explain=*/false);
      ASSERT_EQ(d.node, expected);
      Rng a_next = a, b_next = b;  // the same draws so far
      ASSERT_EQ(a_next.Below(1u << 30), b_next.Below(1u << 30));
      if (d.node >= 0) {
        c.Place(d.node, w, d.gpus);
        placed.push_back({d.node, w, d.gpus});
      }
    }
  }
}

TEST(PolicyIndex, DecisionsEqualAScanInNodeOrderForEveryFirstTieBreakPolicy) {
  for (const char* name : {"first-fit", "best-fit", "dot-product", "gpu-packing", "gpu-clustering", "fgd", "gpufit"}) {
    SCOPED_TRACE(name);
    ExpectIndexMatchesScan([&] { return Make(name); }, TieBreak::kFirst, 3);
  }
}

TEST(PolicyIndex, RandomTieBreakMakesTheScansDraws) { ExpectIndexMatchesScan(RandomTiesPolicy, TieBreak::kRandom, 11); }

TEST(PolicyIndex, AnotherClusterOrACopyStartsOver) {
  ClusterState c = MakeCluster({{}, {}});
  Policy p = Make("best-fit");
  Rng rng(1);
  const Workload w = MakeWorkload({.cpu = 4000});
  EXPECT_EQ(p.Place(w, c, rng).node, 0);  // equal scores: the first node
  ClusterState copy = c;
  copy.Place(1, MakeWorkload({.cpu = 8000}), 1);  // node 1 of the copy is fuller: best fit
  EXPECT_EQ(copy.changed_nodes(), std::vector<int>{1});
  EXPECT_NE(copy.journal_id(), c.journal_id());
  EXPECT_EQ(p.Place(w, copy, rng).node, 1);
  EXPECT_EQ(p.Place(w, c, rng).node, 0);  // the original is unchanged
}

}  // namespace
}  // namespace gpufit
