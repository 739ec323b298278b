// Issue 19: `gpufit plan` finds the cluster's training jobs itself: from kube-state-metrics
// in a real Prometheus (tests/support/training_fixture.h) with the cluster's own spot
// reclaim rate, from kubectl's pods with the catalog band, with --training-jobs overriding,
// and the example workload file planned as documented.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"
#include "prometheus_server.h"
#include "test_paths.h"
#include "training_fixture.h"

namespace {

namespace fs = std::filesystem;
using gpufit::e2e::CliRun;
using gpufit::e2e::Gpufit;
using gpufit::e2e::Scratch;
using ::testing::HasSubstr;

const nlohmann::json* JobNamed(const nlohmann::json& jobs, const std::string& name) {
  for (const nlohmann::json& j : jobs)
    if (j["job"] == name) return &j;
  return nullptr;
}

class TrainingFromCluster : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(Scratch("training-server"));
    fixture_ = new gpufit::testing::TrainingFixture(gpufit::testing::MakeTrainingFixture());
    auto server = gpufit::testing::PrometheusServer::Start(fixture_->openmetrics, dir_->string());
    ASSERT_TRUE(server) << server.error().message;
    server_ = server->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    if (dir_ != nullptr) fs::remove_all(*dir_);
    delete dir_;
    delete fixture_;
  }
  void SetUp() override { ASSERT_NE(server_, nullptr); }
  static std::string Plan() {
    return fmt::format(
        "plan --prometheus {} --since 2026-01-01T00:00:00Z --until 2026-01-01T06:00:00Z --step 60s "
        "--gpu a100-80gb",
        server_->url());
  }
  static fs::path* dir_;
  static gpufit::testing::TrainingFixture* fixture_;
  static gpufit::testing::PrometheusServer* server_;
};
fs::path* TrainingFromCluster::dir_ = nullptr;
gpufit::testing::TrainingFixture* TrainingFromCluster::fixture_ = nullptr;
gpufit::testing::PrometheusServer* TrainingFromCluster::server_ = nullptr;

TEST_F(TrainingFromCluster, PrometheusAloneGivesTheJobsAndTheClustersOwnReclaimRate) {
  const fs::path dir = Scratch("training-prom");
  const CliRun r = Gpufit(Plan() + " --format json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json plan = nlohmann::json::parse(r.out);
  ASSERT_TRUE(plan.contains("training")) << r.out.substr(0, 2000);
  const nlohmann::json& t = plan["training"];
  // One spot node gone in 15 spot node-hours (training_fixture.h): 1 / 15 per node-hour.
  const nlohmann::json& in = t["interruptions"];
  EXPECT_EQ(in["spot_source"], "cluster history");
  EXPECT_DOUBLE_EQ(in["observed_reclaims"].get<double>(), 1);
  EXPECT_DOUBLE_EQ(in["observed_spot_node_hours"].get<double>(), 15);
  EXPECT_NEAR(in["spot_per_hour"].get<double>(), 1.0 / 15, 1e-12);
  EXPECT_DOUBLE_EQ(in["spot_notice_s"].get<double>(), 120);
  EXPECT_THAT(in["counted_by"].get<std::string>(), HasSubstr("kube_node_labels"));
  // The two running jobs; the Deployment's pod and the pod gone with its node are not jobs.
  ASSERT_EQ(t["jobs"].size(), 2u) << t["jobs"].dump(1);
  const nlohmann::json* ft = JobNamed(t["jobs"], "finetune");
  const nlohmann::json* llm = JobNamed(t["jobs"], "llm-pretrain");
  ASSERT_TRUE(ft != nullptr && llm != nullptr);
  // finetune: 4 GPUs on od-a, started T0 - 2 h: 8 h so far of its annotated 20 h, 12 h left;
  // write 60 s (annotation); size 4 x 30,000 MiB = 117.1875 GiB (DCGM peaks), restore
  // 120 + 117.1875 / (4 x 0.5) = 178.59375 s.
  EXPECT_EQ((*ft)["gpus"], 4);
  EXPECT_EQ((*ft)["pods"], 1);
  EXPECT_EQ((*ft)["gpu_model"], "a100-80gb");
  EXPECT_DOUBLE_EQ((*ft)["work_h"].get<double>(), 12);
  EXPECT_DOUBLE_EQ((*ft)["checkpoint_write_s"].get<double>(), 60);
  EXPECT_NEAR((*ft)["checkpoint_size_gib"].get<double>(), 117.1875, 1e-9);
  EXPECT_NEAR((*ft)["restore_s"].get<double>(), 178.59375, 1e-9);
  const nlohmann::json& fo = (*ft)["origin"];
  EXPECT_EQ(fo["found_in"], "cluster");
  EXPECT_EQ(fo["owner"], "Job/finetune");
  EXPECT_EQ(fo["nodes"], nlohmann::json::array({"od-a"}));
  EXPECT_EQ(fo["capacity"], "on-demand");
  EXPECT_EQ(fo["started"], "2025-12-31T22:00:00Z");
  EXPECT_DOUBLE_EQ(fo["runtime_so_far_h"].get<double>(), 8);
  EXPECT_THAT(fo["sources"]["work_h"].get<std::string>(), HasSubstr("annotation gpufit.io/work-hours = 20 h"));
  EXPECT_EQ(fo["sources"]["checkpoint_write_s"], "annotation gpufit.io/checkpoint-write-seconds");
  EXPECT_THAT(fo["sources"]["checkpoint_size_gib"].get<std::string>(), HasSubstr("DCGM_FI_DEV_FB_USED"));
  EXPECT_THAT(fo["sources"]["restore_s"].get<std::string>(), HasSubstr("assumption"));
  EXPECT_EQ(fo["sources"]["gpu_model"], "its node's nvidia.com/gpu.product label");
  // llm-pretrain: a 2-pod gang of 8 GPUs on the two spot nodes, started T0 + 1 h: 5 h so far,
  // 5 h left (the runtime rule); size 16 x 60,000 MiB = 937.5 GiB, write 937.5 / (16 x 0.25)
  // = 234.375 s, restore 120 + 937.5 / (16 x 0.5) = 237.1875 s.
  EXPECT_EQ((*llm)["gpus"], 8);
  EXPECT_EQ((*llm)["pods"], 2);
  EXPECT_EQ((*llm)["gang"], "label training.kubeflow.org/job-name=llm-pretrain");
  EXPECT_DOUBLE_EQ((*llm)["work_h"].get<double>(), 5);
  EXPECT_NEAR((*llm)["checkpoint_size_gib"].get<double>(), 937.5, 1e-9);
  EXPECT_NEAR((*llm)["checkpoint_write_s"].get<double>(), 234.375, 1e-9);
  EXPECT_NEAR((*llm)["restore_s"].get<double>(), 237.1875, 1e-9);
  const nlohmann::json& lo = (*llm)["origin"];
  EXPECT_EQ(lo["capacity"], "spot");
  EXPECT_EQ(lo["nodes"], nlohmann::json::array({"spot-a", "spot-b"}));
  EXPECT_DOUBLE_EQ(lo["runtime_so_far_h"].get<double>(), 5);
  EXPECT_THAT(lo["sources"]["work_h"].get<std::string>(), HasSubstr("remaining work = runtime so far"));
  EXPECT_THAT(lo["sources"]["checkpointing"].get<std::string>(), HasSubstr("assumption: application"));
  // The Markdown says the same, with where each figure came from.
  const CliRun md = Gpufit(Plan(), dir);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_THAT(md.out, HasSubstr("cluster history: 1 reclaim(s) in 15.0 spot node-hours"));
  EXPECT_THAT(md.out, HasSubstr("Where the figures came from (spot rate: cluster history)"));
  EXPECT_THAT(md.out, HasSubstr("| llm-pretrain | ml/PyTorchJob/llm-pretrain (2 pods) | spot-a, spot-b (spot)"));
}

TEST_F(TrainingFromCluster, TheWorkloadFileOverridesItsJobsAndTheSpotRate) {
  const fs::path dir = Scratch("training-override");
  std::ofstream(dir / "jobs.yaml") << "jobs:\n"
                                      "  - {name: finetune, gpus: 2, work_h: 3, checkpoint_size_gib: 10, gpu_model: "
                                      "a100-80gb}\n"
                                      "interruptions:\n  spot: {band: \"<5%\"}\n";
  const CliRun r = Gpufit(Plan() + " --format json --training-jobs " + (dir / "jobs.yaml").string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json t = nlohmann::json::parse(r.out)["training"];
  ASSERT_EQ(t["jobs"].size(), 2u);
  const nlohmann::json* ft = JobNamed(t["jobs"], "finetune");
  ASSERT_NE(ft, nullptr);
  EXPECT_EQ((*ft)["gpus"], 2);
  EXPECT_DOUBLE_EQ((*ft)["work_h"].get<double>(), 3);
  EXPECT_EQ((*ft)["origin"]["found_in"], "workload file");
  EXPECT_EQ((*JobNamed(t["jobs"], "llm-pretrain"))["origin"]["found_in"], "cluster");
  EXPECT_EQ(t["interruptions"]["spot_source"], "workload file");
  EXPECT_NEAR(t["interruptions"]["spot_per_hour"].get<double>(), -std::log(1 - 0.05) / 730, 1e-15);
}

// kubectl get pods -A -o json: a 2-pod PyTorchJob on nodes without history, a Deployment's pod.
std::string PodsJson(const std::string& annotation_value) {
  nlohmann::json items = nlohmann::json::array();
  for (int i = 0; i < 3; ++i) {
    const bool web = i == 2;
    nlohmann::json meta = {{"name", web ? std::string("web-6c9f-x") : fmt::format("llm-worker-{}", i)},
                           {"namespace", "ml"},
                           {"uid", fmt::format("u{}", i)},
                           {"labels", web ? nlohmann::json{{"pod-template-hash", "6c9f"}}
                                          : nlohmann::json{{"training.kubeflow.org/job-name", "llm"}}},
                           {"ownerReferences",
                            {{{"apiVersion", web ? "apps/v1" : "kubeflow.org/v1"},
                              {"kind", web ? "ReplicaSet" : "PyTorchJob"},
                              {"name", web ? "web-6c9f" : "llm"},
                              {"uid", "o"},
                              {"controller", true}}}}};
    if (!web) meta["annotations"] = {{"gpufit.io/checkpoint-size-gib", annotation_value}};
    items.push_back(
        {{"apiVersion", "v1"},
         {"kind", "Pod"},
         {"metadata", meta},
         {"spec",
          {{"nodeName", fmt::format("gpu-{}", i)},
           {"containers",
            {{{"name", "main"}, {"image", "trainer:1"}, {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}}}}},
         {"status", {{"phase", "Running"}, {"startTime", "2026-01-01T00:00:00Z"}}}});
  }
  return nlohmann::json({{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}).dump(1);
}

TEST(TrainingFromKubectl, PodsAloneGiveTheJobsWithTheCatalogBand) {
  const fs::path dir = Scratch("training-kubectl");
  std::ofstream(dir / "pods.json") << PodsJson("160");
  const CliRun r = Gpufit("plan --pods " + (dir / "pods.json").string() + " --gpu a100-80gb --format json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json t = nlohmann::json::parse(r.out);
  ASSERT_EQ(t["jobs"].size(), 1u) << r.out;
  const nlohmann::json& j = t["jobs"][0];
  EXPECT_EQ(j["job"], "llm");
  EXPECT_EQ(j["pods"], 2);
  // 160 GiB over 16 GPUs: write 160 / (16 x 0.25) = 40 s, restore 120 + 160 / (16 x 0.5) = 140 s.
  EXPECT_DOUBLE_EQ(j["checkpoint_write_s"].get<double>(), 40);
  EXPECT_DOUBLE_EQ(j["restore_s"].get<double>(), 140);
  EXPECT_EQ(j["origin"]["sources"]["checkpoint_size_gib"], "annotation gpufit.io/checkpoint-size-gib");
  EXPECT_EQ(j["origin"]["capacity"], "unknown");
  EXPECT_EQ(t["interruptions"]["spot_source"], "catalog band");
  EXPECT_NEAR(t["interruptions"]["spot_per_hour"].get<double>(), -std::log(1 - 0.10) / 730, 1e-15);
  EXPECT_THAT(t["interruptions"]["spot_basis"].get<std::string>(), HasSubstr("no node history"));
  // A bad annotation names the file, the pod and the annotation; nothing is written.
  std::ofstream(dir / "bad.json") << PodsJson("lots");
  const CliRun bad =
      Gpufit("plan --pods " + (dir / "bad.json").string() + " --gpu a100-80gb --out " + (dir / "out").string(), dir);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("bad.json: pod ml/llm-worker-0: annotation gpufit.io/checkpoint-size-gib"));
  EXPECT_FALSE(fs::exists(dir / "out"));
}

TEST(TrainingExample, TheExampleFilePlansAsDocumented) {
  const fs::path dir = Scratch("training-example");
  const CliRun r = Gpufit(std::string("plan --training-jobs ") +
                              gpufit::test_paths::SourcePath("examples/training-jobs.yaml") + " --format json",
                          dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json t = nlohmann::json::parse(r.out);
  ASSERT_EQ(t["jobs"].size(), 3u);
  const nlohmann::json* ft = JobNamed(t["jobs"], "llm-finetune");
  const nlohmann::json* pre = JobNamed(t["jobs"], "pretrain");  // named after its gang label
  ASSERT_TRUE(ft != nullptr && pre != nullptr);
  EXPECT_EQ((*pre)["pods"], 2);
  // Young's interval on spot, sqrt(2 delta M), with delta = 120 GiB / (8 x 0.25 GiB/s) = 60 s and
  // M = 1 / (8 / 50,000 h + the 5-10% band's -ln(0.9) / 730 h).
  const double m_s = 3600 / (8.0 / 50000 + -std::log(0.9) / 730);
  EXPECT_NEAR((*ft)["spot"]["young_interval_s"].get<double>(), std::sqrt(2 * 60 * m_s), 1e-6);
  EXPECT_EQ(t["interruptions"]["spot_basis"].get<std::string>().find("AWS Spot Advisor band 5-10%"), 0u);
}

}  // namespace
