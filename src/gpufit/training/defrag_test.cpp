#include "gpufit/training/defrag.h"

#include <gtest/gtest.h>

#include <map>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "gpufit/core/rng.h"

namespace gpufit {
namespace {

TrainingJob Job(std::string name, int gpus, Checkpointing c = Checkpointing::kApplication) {
  return {.name = std::move(name),
          .gpu_count = gpus,
          .checkpoint_write = Seconds{60},
          .restore = Seconds{120},
          .checkpointing = c};
}

std::vector<TrainingNode> Nodes(const std::vector<int>& gpus) {
  std::vector<TrainingNode> nodes;
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    nodes.push_back({.name = "n" + std::to_string(i),
                     .gpu_count = gpus[i],
                     .gpu_model = "A100",
                     .capacity = CapacityType::kOnDemand});
  }
  return nodes;
}

// The oracle: breadth-first search over every placement reachable by single moves of jobs
// that can checkpoint. Returns the fewest moves, or -1 when none within max_depth.
int BruteForce(const std::vector<TrainingNode>& nodes, const std::vector<TrainingJob>& jobs,
               const std::vector<std::size_t>& start, int need, int max_depth) {
  const auto fits = [&](const std::vector<std::size_t>& at) {
    std::vector<int> free(nodes.size());
    for (std::size_t n = 0; n < nodes.size(); ++n) free[n] = nodes[n].gpu_count;
    for (std::size_t j = 0; j < jobs.size(); ++j) free[at[j]] -= jobs[j].gpu_count;
    for (const int f : free) {
      if (f >= need) return true;
    }
    return false;
  };
  std::map<std::vector<std::size_t>, int> dist{{start, 0}};
  std::queue<std::vector<std::size_t>> q;
  q.push(start);
  while (!q.empty()) {
    const std::vector<std::size_t> at = q.front();
    q.pop();
    const int d = dist[at];
    if (fits(at)) return d;
    if (d == max_depth) continue;
    std::vector<int> free(nodes.size());
    for (std::size_t n = 0; n < nodes.size(); ++n) free[n] = nodes[n].gpu_count;
    for (std::size_t j = 0; j < jobs.size(); ++j) free[at[j]] -= jobs[j].gpu_count;
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      if (jobs[j].checkpointing == Checkpointing::kNone) continue;
      for (std::size_t to = 0; to < nodes.size(); ++to) {
        if (to == at[j] || free[to] < jobs[j].gpu_count) continue;
        std::vector<std::size_t> next = at;
        next[j] = to;
        if (dist.emplace(next, d + 1).second) q.push(next);
      }
    }
  }
  return -1;
}

TEST(DefragTest, OneMoveJoinsTwoHalfEmptyNodes) {
  const auto nodes = Nodes({8, 8});
  const std::vector<TrainingJob> jobs{Job("a", 4), Job("b", 4)};
  const auto r = PlanDefragmentation(nodes, jobs, {0, 1}, Job("big", 8));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->outcome, DefragResult::Outcome::kMoves);
  ASSERT_EQ(r->moves.size(), 1u);
  EXPECT_EQ(*r->target, r->moves[0].from);
  // 4 GPUs x (60 s + 120 s) = 0.2 GPU-hours.
  EXPECT_NEAR(r->cost_gpu_hours, 0.2, 1e-12);
}

TEST(DefragTest, JobsWithoutCheckpointsCannotMove) {
  const auto nodes = Nodes({8, 8});
  const std::vector<TrainingJob> jobs{Job("a", 4, Checkpointing::kNone), Job("b", 4, Checkpointing::kNone)};
  const auto r = PlanDefragmentation(nodes, jobs, {0, 1}, Job("big", 8));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->outcome, DefragResult::Outcome::kImpossible);
  EXPECT_TRUE(r->moves.empty());
}

TEST(DefragTest, ImpossibleWhenTooFewGpusAreFreeOrNoNodeIsBigEnough) {
  const auto nodes = Nodes({8, 8});
  const std::vector<TrainingJob> jobs{Job("a", 4), Job("b", 6)};  // 6 GPUs free in all
  const auto r = PlanDefragmentation(nodes, jobs, {0, 1}, Job("p", 7), {.max_moves = 8, .max_expansions = 100000});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->outcome, DefragResult::Outcome::kImpossible);
  EXPECT_NE(r->reason.find("only 6 GPUs are free"), std::string::npos);
  TrainingJob h100 = Job("h", 2);
  h100.gpu_model = "H100";
  const auto s = PlanDefragmentation(nodes, jobs, {0, 1}, h100);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->outcome, DefragResult::Outcome::kImpossible);
  EXPECT_NE(s->reason.find("no node of H100"), std::string::npos);
}

TEST(DefragTest, TheBudgetBoundsTheSearch) {
  // 30 nodes of 16 GPUs, each with jobs of 4, 4, 4, 1, 1, 1 GPUs (one free); a 9-GPU job
  // needs many moves, far beyond what 20,000 visited states can show.
  const auto nodes = Nodes(std::vector<int>(30, 16));
  std::vector<TrainingJob> jobs;
  std::vector<std::size_t> at;
  for (std::size_t n = 0; n < 30; ++n) {
    for (const int g : {4, 4, 4, 1, 1, 1}) {
      jobs.push_back(Job("j" + std::to_string(jobs.size()), g));
      at.push_back(n);
    }
  }
  const auto r = PlanDefragmentation(nodes, jobs, at, Job("p", 9), {.max_moves = 4, .max_expansions = 20000});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->outcome, DefragResult::Outcome::kBudgetExhausted);
  EXPECT_LE(r->expansions, 20001);
}

TEST(DefragTest, AChainOfMovesWhenNoSingleMoveHelps) {
  // n0 (8): a 4, 4 free. n1 (8): b 4 + c 2, 2 free. n2 (4): d 2, 2 free. Pending: 8 GPUs.
  // n2 is too small; n0 needs a moved, but no node has 4 free; n1 needs 6 more GPUs, which
  // is two jobs. So no single move works, and two do (c -> n2, then a -> n1).
  const auto nodes = Nodes({8, 8, 4});
  const std::vector<TrainingJob> jobs{Job("a", 4), Job("b", 4), Job("c", 2), Job("d", 2)};
  const std::vector<std::size_t> at{0, 1, 1, 2};
  const auto r = PlanDefragmentation(nodes, jobs, at, Job("big", 8));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->outcome, DefragResult::Outcome::kMoves);
  EXPECT_EQ(r->moves.size(), 2u);
  EXPECT_EQ(BruteForce(nodes, jobs, at, 8, 6), 2);
}

// Acceptance: small cases agree with the brute-force search on the fewest migrations.
TEST(DefragTest, AgreesWithBruteForceOnRandomSmallClusters) {
  Rng rng(2026);
  int with_moves = 0, none = 0;
  for (int instance = 0; instance < 400; ++instance) {
    const int node_count = 2 + static_cast<int>(rng.Below(3));  // 2..4
    std::vector<int> sizes;
    for (int n = 0; n < node_count; ++n) sizes.push_back(rng.Below(2) ? 8 : 4);
    const auto nodes = Nodes(sizes);
    std::vector<int> free(sizes);
    std::vector<TrainingJob> jobs;
    std::vector<std::size_t> at;
    for (int tries = 0; tries < 12; ++tries) {
      const int gpus = 1 << rng.Below(3);  // 1, 2, 4
      const auto n = static_cast<std::size_t>(rng.Below(static_cast<std::uint64_t>(node_count)));
      if (free[n] < gpus) continue;
      free[n] -= gpus;
      jobs.push_back(Job("j" + std::to_string(jobs.size()), gpus,
                         rng.Below(6) == 0 ? Checkpointing::kNone : Checkpointing::kApplication));
      at.push_back(n);
    }
    const int need = 2 + static_cast<int>(rng.Below(7));  // 2..8
    const auto r = PlanDefragmentation(nodes, jobs, at, Job("p", need), {.max_moves = 4, .max_expansions = 1000000});
    ASSERT_TRUE(r) << r.error().message;
    const int oracle = BruteForce(nodes, jobs, at, need, 4);
    SCOPED_TRACE(instance);
    switch (r->outcome) {
      case DefragResult::Outcome::kFitsNow:
        EXPECT_EQ(oracle, 0);
        break;
      case DefragResult::Outcome::kMoves:
        EXPECT_EQ(static_cast<int>(r->moves.size()), oracle);
        ++with_moves;
        break;
      case DefragResult::Outcome::kImpossible:
      case DefragResult::Outcome::kNoneWithinLimit:
        EXPECT_EQ(oracle, -1);
        ++none;
        break;
      case DefragResult::Outcome::kBudgetExhausted:
        ADD_FAILURE() << "budget";
        break;
    }
    // The moves are legal in order and leave room on the target.
    if (r->outcome == DefragResult::Outcome::kMoves) {
      std::vector<int> f(sizes);
      for (std::size_t j = 0; j < jobs.size(); ++j) f[at[j]] -= jobs[j].gpu_count;
      std::vector<std::size_t> where = at;
      for (const DefragMove& m : r->moves) {
        ASSERT_EQ(where[m.job], m.from);
        f[m.from] += jobs[m.job].gpu_count;
        f[m.to] -= jobs[m.job].gpu_count;
        ASSERT_GE(f[m.to], 0);
        where[m.job] = m.to;
      }
      ASSERT_TRUE(r->target);
      EXPECT_GE(f[*r->target], need);
    }
  }
  // The generator produces both kinds of case.
  EXPECT_GT(with_moves, 20);
  EXPECT_GT(none, 20);
}

}  // namespace
}  // namespace gpufit
