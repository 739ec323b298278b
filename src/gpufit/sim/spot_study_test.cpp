// Acceptance on openb: whole-GPU training pods on spot at the low AWS Spot Advisor bands
// cost 20-40% of all-on-demand, lost GPU-hours are reported, and no job with a deadline
// misses it with the deadline policy on.
#include "gpufit/sim/spot_study.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/test_support.h"
#include "gpufit/ingest/files/openb_reader.h"
#include "gpufit/training/workload_file.h"

namespace gpufit {
namespace {

TEST(SpotStudyTest, JobsWithoutASpotHostStayOnDemand) {
  // An 8-GPU job and a 4-GPU spot node: the job runs on the on-demand node instead.
  const std::vector<TrainingNode> nodes{
      {.name = "s0", .gpu_count = 4, .gpu_model = "A100", .capacity = CapacityType::kSpot},
      {.name = "o0", .gpu_count = 8, .gpu_model = "A100", .capacity = CapacityType::kOnDemand}};
  const std::vector<TrainingJob> jobs{{.name = "a",
                                       .gpu_count = 8,
                                       .gpu_model = "A100",
                                       .work = Seconds{5 * 3600.0},
                                       .checkpoint_write = Seconds{60},
                                       .restore = Seconds{120}}};
  const std::vector<GpuPrices> prices{{.on_demand_per_gpu_hour = Usd{3}, .spot_per_gpu_hour = Usd{1}}};
  InterruptionModel model;
  model.spot = *SpotMarketFromBand("<5%", kAwsSpotNotice);
  const auto row = RunSpotStudy(nodes, jobs, prices, model, "<5%", {});
  ASSERT_TRUE(row) << row.error().message;
  EXPECT_EQ(row->on_demand_jobs, 1);
  EXPECT_EQ(row->spot_jobs, 0);
  // 5 h of work and one final 60 s write on 8 GPUs at 3 USD: both runs cost the same.
  EXPECT_NEAR(row->recommended.cost.value, 8 * (5 + 60.0 / 3600) * 3, 1e-9);
  EXPECT_NEAR(row->CostRatio(), 1.0, 1e-12);
}

TEST(SpotStudyTest, OpenbTrainingSetOnSpotCostsTwentyToFortyPercentOfOnDemand) {
  const std::string dir = testing::DataDir() + "/openb";
  if (!std::filesystem::exists(dir + "/openb_pod_list_default.csv")) GTEST_SKIP() << "no openb trace in " << dir;
  const auto pods = ReadOpenbPods(dir + "/openb_pod_list_default.csv");
  const auto nodes = ReadOpenbNodes(dir + "/openb_node_list_gpu_node.csv");
  ASSERT_TRUE(pods && nodes);
  OpenbTrainingOptions o;
  o.deadline_factor = 1.5;  // every job must finish within 1.5 x its failure-free run
  const std::vector<TrainingJob> jobs = TrainingJobsFromOpenb(*pods, o);
  ASSERT_EQ(jobs.size(), 720u);
  // openb's GPU types are not sold by clouds under those names; priced as A100-40GB
  // (AWS 2.7447 USD/GPU-h on-demand; spot 0.8234 at GCP's 70% preemptible discount).
  const GpuModel price = *GpuCatalog::Embedded().Find("a100-40gb");
  const std::vector<GpuPrices> prices(jobs.size(), GpuPrices{.on_demand_per_gpu_hour = price.on_demand_per_gpu_hour,
                                                             .spot_per_gpu_hour = price.spot_per_gpu_hour});
  const auto pools = SpotAndOnDemandPools(*nodes);
  for (const char* band : {"<5%", "5-10%", "10-15%"}) {
    InterruptionModel model;
    model.spot = *SpotMarketFromBand(band, kAwsSpotNotice);
    TrainingSimOptions options;
    options.seed = 42;
    const auto row = RunSpotStudy(pools, jobs, prices, model, band, options);
    ASSERT_TRUE(row) << row.error().message;
    SCOPED_TRACE(band);
    std::printf(
        "%s: cost %.0f vs %.0f USD on-demand (%.1f%%), lost %.1f GPU-h (on-demand %.1f), reclaims %d, "
        "misses %d\n",
        band, row->recommended.cost.value, row->on_demand.cost.value, 100 * row->CostRatio(),
        row->recommended.lost_gpu_hours, row->on_demand.lost_gpu_hours, row->recommended.spot_reclaims,
        row->recommended.deadline_misses);
    EXPECT_GE(row->CostRatio(), 0.20);
    EXPECT_LE(row->CostRatio(), 0.40);
    EXPECT_EQ(row->recommended.deadline_misses, 0);
    EXPECT_EQ(row->recommended.completed, 720);
    EXPECT_GT(row->recommended.spot_reclaims, 0);
    EXPECT_GE(row->recommended.lost_gpu_hours, 0);
    // The all-on-demand run is the same work: its held GPU-hours are at least the work.
    EXPECT_GE(row->on_demand.held_gpu_hours, row->on_demand.useful_gpu_hours);
    EXPECT_NEAR(row->on_demand.useful_gpu_hours, 15626.57, 0.01);
  }
}

}  // namespace
}  // namespace gpufit
