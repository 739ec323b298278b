// Issue 18, points 1 and 2 end to end, from a long CSV with the device columns and a kubectl
// pods file: a MIG instance's duty cycle is its engine activity (its DCGM_FI_DEV_GPU_UTIL is
// 0), a pod whose spec asks for 2 GPUs and a pod on 2 MIG instances are kept whole (never in
// a sharing group), the idle second instance gives "ask for 1", and the emitted manifests keep
// the 2-GPU pod off shared nodes and pass the schema check.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_run.h"
#include "kube_fixture.h"
#include "manifest_validator.h"

namespace {

using namespace gpufit::e2e;
using gpufit::testing::Container;
using gpufit::testing::List;
using gpufit::testing::OwnerRef;
using gpufit::testing::Pod;
using ::testing::HasSubstr;

TEST(PlanMultiGpu, MigEngineActivityAndWholeMultiGpuPodsFromACsv) {
  const fs::path dir = Scratch("multi-gpu");
  {
    std::ofstream csv(dir / "gpu.csv");
    csv << "timestamp_s,pod,metric,value,device,GPU_I_ID\n";
    for (int k = 0; k < 60; ++k) {
      const int t = 60 * k;
      for (int w = 0; w < 2; ++w)
        csv << t << ",ml/web-" << w << ",DCGM_FI_DEV_FB_USED,10000,GPU-w" << w << ",\n"
            << t << ",ml/web-" << w << ",DCGM_FI_DEV_GPU_UTIL,10,GPU-w" << w << ",\n";
      csv << t << ",ml/train-0,DCGM_FI_DEV_FB_USED,10000,GPU-t0,\n"
          << t << ",ml/train-0,DCGM_FI_DEV_GPU_UTIL,10,GPU-t0,\n"
          << t << ",ml/infer-0,DCGM_FI_DEV_FB_USED,9000,GPU-m,1\n"
          << t << ",ml/infer-0,DCGM_FI_DEV_GPU_UTIL,0,GPU-m,1\n"
          << t << ",ml/infer-0,DCGM_FI_PROF_GR_ENGINE_ACTIVE,0.6,GPU-m,1\n"
          << t << ",ml/infer-0,DCGM_FI_DEV_FB_USED,0,GPU-m,2\n"
          << t << ",ml/infer-0,DCGM_FI_DEV_GPU_UTIL,0,GPU-m,2\n"
          << t << ",ml/infer-0,DCGM_FI_PROF_GR_ENGINE_ACTIVE,0,GPU-m,2\n";
    }
  }
  const auto gpus = [](const char* resource, int n) { return nlohmann::json{{resource, std::to_string(n)}}; };
  nlohmann::json items = nlohmann::json::array();
  for (int w = 0; w < 2; ++w)
    items.push_back(
        Pod({.ns = "ml",
             .name = "web-" + std::to_string(w),
             // Two workloads: replicas of one would be kept apart (issue 38).
             .owners = {OwnerRef("apps/v1", "StatefulSet", "web-" + std::to_string(w))},
             .containers = {Container("server", "web:1", gpus("nvidia.com/gpu", 1), gpus("nvidia.com/gpu", 1))}},
            w));
  items.push_back(
      Pod({.ns = "ml",
           .name = "train-0",
           .owners = {OwnerRef("apps/v1", "StatefulSet", "train")},
           .containers = {Container("trainer", "train:1", gpus("nvidia.com/gpu", 2), gpus("nvidia.com/gpu", 2))}},
          2));
  items.push_back(Pod({.ns = "ml",
                       .name = "infer-0",
                       .owners = {OwnerRef("apps/v1", "StatefulSet", "infer")},
                       .containers = {Container("server", "infer:1", gpus("nvidia.com/mig-3g.40gb", 2),
                                                gpus("nvidia.com/mig-3g.40gb", 2))}},
                      3));
  std::ofstream(dir / "pods.json") << List(items).dump();

  const CliRun r =
      Gpufit("plan --telemetry " + (dir / "gpu.csv").string() + " --pods " + (dir / "pods.json").string() +
                 " --gpu h100-80gb --search-budget 0 --format json " + "--emit-manifests " + (dir / "k8s").string(),
             dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  // Point 1: 0.6 of the time active is 60 %, not the 0 of GPU_UTIL.
  for (const auto& pod : j["pods"]) {
    if (pod["pod"] != "ml/infer-0[0]") continue;
    EXPECT_EQ(pod["profile"]["duty_cycle_field"], "DCGM_FI_PROF_GR_ENGINE_ACTIVE");
    EXPECT_NEAR(pod["profile"]["gpu_util_pct"]["p50"].get<double>(), 60.0, 1e-3);
    EXPECT_EQ(pod["profile"]["device"], "GPU-m/gi1");
  }
  // Point 2: only the two web pods share a GPU; train-0 (2 GPUs) and infer-0 (2 instances)
  // keep theirs: 2 + 2 + 2 = 6 GPUs before, 1 + 2 + 2 after.
  ASSERT_EQ(j["groups"].size(), 1u);
  EXPECT_EQ(j["groups"][0]["pods"], nlohmann::json::array({"ml/web-0", "ml/web-1"}));
  EXPECT_EQ(j["totals"]["gpus_before"], 6);
  EXPECT_EQ(j["totals"]["gpus_after"], 5);
  ASSERT_EQ(j["multi_gpu"].size(), 2u);
  EXPECT_EQ(j["multi_gpu"][0]["pod"], "ml/infer-0");
  EXPECT_EQ(j["multi_gpu"][0]["ask_for_one"]["busy_peak_mib"], 9000.0);
  EXPECT_EQ(j["multi_gpu"][0]["ask_for_one"]["idle_peak_mib"], 0.0);
  EXPECT_EQ(j["multi_gpu"][1]["pod"], "ml/train-0");
  EXPECT_EQ(j["multi_gpu"][1]["devices"], 2);

  const std::string train = Slurp(dir / "k8s" / "workload-ml-statefulset-train.yaml");
  EXPECT_THAT(train, HasSubstr("nvidia.com/gpu.sharing-strategy"));
  EXPECT_THAT(train, HasSubstr("NotIn"));
  EXPECT_THAT(Slurp(dir / "k8s" / "README.md"), HasSubstr("pod ml/infer-0: ask for 1 MIG instance instead of 2"));
  const gpufit::testing::ManifestValidation v = gpufit::testing::ValidateManifests({dir / "k8s"});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_EQ(v.output, gpufit::testing::ValidatedLine(gpufit::testing::YamlFiles(dir / "k8s")));
}

}  // namespace
