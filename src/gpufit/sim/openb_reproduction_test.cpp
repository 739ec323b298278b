// The FGD paper's saturation experiment on the openb trace, 10 seeds (42-51), against the
// means its simulator's own result files report (experiments/analysis/expected_results/
// analysis_allo_discrete.csv of github.com/hkust-adsl/kubernetes-scheduler-simulator, the
// column "130" averaged over seeds 42-51; as quoted in issue 3 and in the data README):
// GPU allocation when arrivals reach 130% of the cluster's GPUs. Each baseline must land
// within half a percentage point; gpufit's own policy must leave fewer GPUs unallocated
// than FGD.
#include <gtest/gtest.h>

#include <filesystem>

#include "gpufit/core/test_support.h"
#include "gpufit/ingest/files/openb_reader.h"
#include "gpufit/sim/batch.h"

namespace gpufit {
namespace {

struct Published {
  const char* policy;
  double alloc_pct;
};

class OpenbSaturation : public ::testing::Test {
 protected:
  static std::vector<PolicySummary> Run(const std::string& pods, const std::vector<std::string>& policies,
                                        std::vector<RunResult>& keep) {
    const std::string dir = testing::DataDir() + "/openb/";
    SimOptions o;
    const SimInput in =
        *PrepareSimulation(*ReadOpenbNodes(dir + "openb_node_list_gpu_node.csv"), *ReadOpenbPods(dir + pods), o);
    std::vector<std::uint64_t> seeds;
    for (std::uint64_t s = 42; s <= 51; ++s) seeds.push_back(s);
    keep = *RunBatch(in, policies, seeds, o);
    return Summarize(keep);
  }
  void SetUp() override {
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "160 full-trace runs are too slow under AddressSanitizer; the Release build runs them";
#endif
    if (!std::filesystem::exists(testing::DataDir() + "/openb")) GTEST_SKIP() << "no openb trace";
  }
};

TEST_F(OpenbSaturation, DefaultTraceBaselinesMatchThePaperAndGpufitBeatsFgd) {
  const Published published[] = {{"fgd", 95.39},         {"best-fit", 93.08},
                                 {"gpu-packing", 92.00}, {"gpu-clustering", 91.88},
                                 {"dot-product", 90.85}, {"random", 87.47}};
  std::vector<std::string> policies;
  for (const Published& p : published) policies.push_back(p.policy);
  policies.push_back("gpufit");
  std::vector<RunResult> runs;
  const std::vector<PolicySummary> s = Run("openb_pod_list_default.csv", policies, runs);
  for (std::size_t i = 0; i < std::size(published); ++i) {
    SCOPED_TRACE(published[i].policy);
    EXPECT_NEAR(100 * s[i].alloc_ratio.mean, published[i].alloc_pct, 0.5);
  }
  EXPECT_NEAR(s[0].unallocated_gpus.mean, 286, 0.005 * 6212);  // FGD: 286 GPUs unallocated
  // gpufit: at least 10% fewer unallocated GPUs than FGD (measured: 12%; see docs/simulate.md).
  EXPECT_LT(s.back().unallocated_gpus.mean, 0.9 * s[0].unallocated_gpus.mean);
  for (const RunResult& r : runs) EXPECT_GE(r.pods_submitted, 10600);
}

TEST_F(OpenbSaturation, Gpuspec33FgdMatchesThePaperAndGpufitLeavesAFifthFewerGpus) {
  std::vector<RunResult> runs;
  const std::vector<PolicySummary> s = Run("openb_pod_list_gpuspec33.csv", {"fgd", "gpufit"}, runs);
  EXPECT_NEAR(100 * s[0].alloc_ratio.mean, 94.55, 0.5);
  EXPECT_LT(s[1].unallocated_gpus.mean, 0.8 * s[0].unallocated_gpus.mean);
}

// The multigpu50 list asks for 183% of the GPUs, so saturation cuts it down to 130% (the
// simulator's tuneDownPods) instead of adding copies; random-fit, whose allocation still
// grows past 130% arrivals, is the policy that shows it (measured before the cut: 91.6%).
TEST_F(OpenbSaturation, Multigpu50BaselinesMatchThePaperAndGpufitBeatsFgd) {
  if (!std::filesystem::exists(testing::DataDir() + "/openb/openb_pod_list_multigpu50.csv"))
    GTEST_SKIP() << "no openb multigpu50 list";
  const Published published[] = {{"fgd", 97.18},         {"best-fit", 95.74},
                                 {"gpu-packing", 96.18}, {"gpu-clustering", 95.81},
                                 {"dot-product", 94.85}, {"random", 90.27}};
  std::vector<std::string> policies;
  for (const Published& p : published) policies.push_back(p.policy);
  policies.push_back("gpufit");
  std::vector<RunResult> runs;
  const std::vector<PolicySummary> s = Run("openb_pod_list_multigpu50.csv", policies, runs);
  for (std::size_t i = 0; i < std::size(published); ++i) {
    SCOPED_TRACE(published[i].policy);
    EXPECT_NEAR(100 * s[i].alloc_ratio.mean, published[i].alloc_pct, 0.5);
  }
  EXPECT_LT(s.back().unallocated_gpus.mean, s[0].unallocated_gpus.mean);
}

}  // namespace
}  // namespace gpufit
