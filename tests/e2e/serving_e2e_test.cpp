// Issue 19: `gpufit plan --prometheus` finds the inference services in the server's serving
// metrics, with no other input. The server holds the real Azure LLM conversation trace as a
// vLLM Deployment's series (tests/support/serving_fixture.h) beside a GenTD26 DCGM slice
// (tests/support/dcgm_fixture.h: the plan's GPU telemetry). The replica schedule from the
// metrics is checked against the services-YAML run on the same trace.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"
#include "dcgm_fixture.h"
#include "prometheus_server.h"
#include "serving_fixture.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using gpufit::e2e::CliRun;
using gpufit::e2e::GenTd26;
using gpufit::e2e::Gpufit;
using gpufit::e2e::Scratch;
using gpufit::e2e::Slurp;

std::string AzureTrace() { return gpufit::test_paths::DataDir() + "/azure-llm-2023/AzureLLMInferenceTrace_conv.csv"; }

// The gpufit row of the one service in an inference section.
double GpufitGpuHours(const nlohmann::json& service) {
  for (const auto& row : service["policies"])
    if (row["policy"] == "gpufit") return row["gpu_hours"].get<double>();
  ADD_FAILURE() << "no gpufit row in " << service.dump();
  return 0;
}

class ServingPlan : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(GenTd26()) || !fs::exists(AzureTrace())) return;
    dir_ = new fs::path(Scratch("serving-server"));
    auto dcgm = gpufit::testing::MakeDcgmFixture(GenTd26(), 4, 1);
    ASSERT_TRUE(dcgm) << dcgm.error().message;
    since_ = dcgm->since_s - 60;
    until_ = dcgm->until_s;
    auto serving = gpufit::testing::MakeVllmFixture(AzureTrace(), since_, until_);
    ASSERT_TRUE(serving) << serving.error().message;
    fixture_ = new gpufit::testing::ServingFixture(*serving);
    std::string text = dcgm->openmetrics;
    text.erase(text.rfind("# EOF\n"));
    auto server = gpufit::testing::PrometheusServer::Start(text + serving->openmetrics + "# EOF\n", dir_->string());
    ASSERT_TRUE(server) << server.error().message;
    server_ = server->release();
    std::ofstream(*dir_ / "services.yaml") << serving->services_yaml;
  }
  static void TearDownTestSuite() {
    delete server_;
    if (dir_ != nullptr) fs::remove_all(*dir_);
    delete dir_;
    delete fixture_;
  }
  void SetUp() override {
    if (!fs::exists(GenTd26()) || !fs::exists(AzureTrace())) GTEST_SKIP() << "no GenTD26 or Azure trace";
    ASSERT_NE(server_, nullptr);
  }
  static std::string Range() {
    return fmt::format("--prometheus {} --since {} --until {} --gpu a100-80gb", server_->url(),
                       static_cast<long long>(since_), static_cast<long long>(until_));
  }
  static fs::path* dir_;
  static gpufit::testing::ServingFixture* fixture_;
  static gpufit::testing::PrometheusServer* server_;
  static double since_, until_;
};
fs::path* ServingPlan::dir_ = nullptr;
gpufit::testing::ServingFixture* ServingPlan::fixture_ = nullptr;
gpufit::testing::PrometheusServer* ServingPlan::server_ = nullptr;
double ServingPlan::since_ = 0, ServingPlan::until_ = 0;

TEST_F(ServingPlan, ChatServiceFromMetricsAloneMatchesTheServicesFileRun) {
  const fs::path dir = Scratch("serving-plan");
  const CliRun metrics = Gpufit("plan " + Range() + " --format json --out " + (dir / "out").string() +
                                    " --emit-manifests " + (dir / "manifests").string(),
                                dir);
  ASSERT_EQ(metrics.exit_code, 0) << metrics.err;
  const nlohmann::json plan = nlohmann::json::parse(metrics.out);
  ASSERT_TRUE(plan.contains("inference")) << metrics.out.substr(0, 2000);
  ASSERT_EQ(plan["inference"]["services"].size(), 1u);
  const nlohmann::json& s = plan["inference"]["services"][0];
  SCOPED_TRACE(s.dump(1).substr(0, 6000));
  EXPECT_EQ(s["name"], "chat-vllm");
  EXPECT_EQ(s["namespace"], "llm");
  EXPECT_EQ(s["deployment"], "chat-vllm");
  // Every request of the trace, counted once (each at its arrival, all within the range).
  EXPECT_EQ(s["requests"].get<std::size_t>(), fixture_->requests);
  EXPECT_EQ(s["current_replicas"], 2);
  EXPECT_EQ(s["cold_start"]["seconds"].get<double>(), fixture_->cold_start_s);
  const nlohmann::json& from = s["sources"];
  EXPECT_THAT(from["workload"].get<std::string>(), HasSubstr("Deployment chat-vllm"));
  EXPECT_THAT(from["workload"].get<std::string>(), HasSubstr("kube_replicaset_owner"));
  EXPECT_THAT(from["requests"].get<std::string>(), HasSubstr("vllm:request_success_total"));
  EXPECT_THAT(from["tokens"].get<std::string>(), HasSubstr("vllm:generation_tokens_total"));
  EXPECT_THAT(from["service model"].get<std::string>(),
              HasSubstr("roofline of llama-2-13b (from model_name 'meta-llama/Llama-2-13b-chat-hf')"));
  EXPECT_THAT(from["cold start"].get<std::string>(), HasSubstr("kube_pod_status_ready_time - kube_pod_created"));
  EXPECT_THAT(from["replicas today"].get<std::string>(), HasSubstr("kube_deployment_status_replicas"));
  EXPECT_THAT(from["slo"].get<std::string>(), HasSubstr("assumption"));
  EXPECT_THAT(from["measured latency"].get<std::string>(), HasSubstr("vllm:e2e_request_latency_seconds_bucket"));
  // The Markdown says the same.
  const std::string md = Slurp(dir / "out" / "plan.md");
  EXPECT_THAT(md, HasSubstr("## chat-vllm (llm/chat-vllm)"));
  EXPECT_THAT(md, HasSubstr("- from serving metrics, requests: 19366 requests: vllm:request_success_total"));
  EXPECT_THAT(md, HasSubstr("- replicas today: 2"));
  // The autoscaler scales the Deployment found through kube-state-metrics.
  const std::string hpa = Slurp(dir / "manifests" / "chat-vllm-hpa.yaml");
  EXPECT_THAT(hpa, HasSubstr("kind: Deployment"));
  EXPECT_THAT(hpa, HasSubstr("name: \"chat-vllm\""));
  EXPECT_THAT(hpa, HasSubstr("namespace: \"llm\""));
  // The GPU telemetry's own plan is there too.
  EXPECT_EQ(plan["pods"].size(), 4u);

  // The services file naming the same trace: the schedule's GPU-hours within 5%.
  const CliRun yaml = Gpufit("plan --inference " + (*dir_ / "services.yaml").string() + " --format json", dir);
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  const nlohmann::json from_yaml = nlohmann::json::parse(yaml.out);
  const nlohmann::json& y =
      from_yaml["services"].is_array() ? from_yaml["services"][0] : from_yaml["inference"]["services"][0];
  EXPECT_EQ(y["requests"].get<std::size_t>(), fixture_->requests);
  const double metric_hours = GpufitGpuHours(s), yaml_hours = GpufitGpuHours(y);
  std::fprintf(stderr, "gpufit GPU-hours: serving metrics %.4f, services YAML %.4f, difference %+.2f%%\n", metric_hours,
               yaml_hours, 100 * (metric_hours - yaml_hours) / yaml_hours);
  EXPECT_GT(yaml_hours, 0);
  EXPECT_LE(std::abs(metric_hours - yaml_hours), 0.05 * yaml_hours);
  EXPECT_EQ(s["service_model"]["tpot_s"], y["service_model"]["tpot_s"]);
  EXPECT_EQ(s["service_model"]["concurrency"], y["service_model"]["concurrency"]);
}

TEST_F(ServingPlan, TheServicesFileOverridesAServiceFoundInMetrics) {
  const fs::path dir = Scratch("serving-override");
  const CliRun r =
      Gpufit("plan " + Range() + " --inference " + (*dir_ / "services.yaml").string() + " --format json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json plan = nlohmann::json::parse(r.out);
  ASSERT_EQ(plan["inference"]["services"].size(), 1u);
  EXPECT_EQ(plan["inference"]["services"][0]["name"], "chat");
  EXPECT_FALSE(plan["inference"]["services"][0].contains("sources"));
  ASSERT_EQ(plan["inference"]["notes"].size(), 1u);
  EXPECT_THAT(plan["inference"]["notes"][0].get<std::string>(),
              HasSubstr("llm/chat-vllm: the services file's 'chat' is used instead"));
  // --no-serving: the services file alone, no note.
  const CliRun off = Gpufit(
      "plan " + Range() + " --inference " + (*dir_ / "services.yaml").string() + " --no-serving --format json", dir);
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_FALSE(nlohmann::json::parse(off.out)["inference"].contains("notes"));
}

TEST_F(ServingPlan, BadServingFlagsAreErrorsNamingTheFlag) {
  const fs::path dir = Scratch("serving-bad");
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {" --serving-slo ttft", "--serving-slo 'ttft'"},
           {" --serving-slo p99:2", "the metric must be ttft, latency or wait"},
           {" --serving-query nameonly", "--serving-query 'nameonly'"},
           {" --serving-query a=x --serving-latency b=y", "no --serving-query names 'b'"},
           {" --serving-query 'Bad_Name=vector(1)'", "NAME 'Bad_Name' must be a deployment or namespace/deployment"},
           {" --serving-query 'a=vector(1)' --serving-query 'a=vector(2)'", "NAME 'a' is given twice"},
           {" --no-serving --serving-query 'a=vector(1)'", "--no-serving"},
           {" --no-serving --serving-slo wait:1", "--no-serving"},
           {" --serving-query 'llm/chat-vllm=vector(5)'", "llm/chat-vllm is already found from its vllm metrics"}}) {
    SCOPED_TRACE(args);
    const CliRun r = Gpufit("plan " + Range() + args, dir);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_THAT(r.err, HasSubstr(says));
    EXPECT_TRUE(r.out.empty());
  }
}

}  // namespace
