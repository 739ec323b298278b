// Issue 19's acceptance in one run: a cluster's metrics server (Prometheus, then
// VictoriaMetrics) holding, on one six-hour range from kFixtureT0, the series of
//  * a vLLM chat Deployment serving the real Azure LLM conversation trace
//    (tests/support/serving_fixture.h; its pods carry no GPU series);
//  * training Jobs on A100 nodes, one spot node disappearing half-way, with their
//    dcgm-exporter series (tests/support/training_fixture.h);
//  * OpenCost prices of two H100 nodes and a CPU node, node-exporter link speeds and cAdvisor
//    network counters of two serving pods loading a model, with their dcgm-exporter series
//    (tests/support/cluster_fixture.h, stretched to the six hours), and OpenCost prices of the
//    training fixture's on-demand A100 node od-a, written here;
// and `gpufit plan --prometheus URL --since --until --gpu a100-80gb` with no other input gives
// the chat service, the training jobs with the cluster's own spot rate, OpenCost's prices
// and the network check, each figure with its source. Expected values are computed here by
// hand from the fixtures (the request count from the Azure CSV itself). The fixtures' node,
// pod and GPU names do not overlap (ml/*, llm/serve-*, llm/chat-vllm-*).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"
#include "cluster_fixture.h"
#include "dcgm_fixture.h"
#include "metrics_server.h"
#include "serving_fixture.h"
#include "test_paths.h"
#include "training_fixture.h"

namespace {

namespace fs = std::filesystem;
using gpufit::e2e::CliRun;
using gpufit::e2e::Gpufit;
using gpufit::e2e::Scratch;
using gpufit::e2e::Slurp;
using gpufit::testing::kFixtureT0;
using ::testing::HasSubstr;
using ::testing::Not;
using json = nlohmann::json;

constexpr double kSince = kFixtureT0, kUntil = kFixtureT0 + 6 * 3600;
constexpr double kOdAUsdPerGpuHour = 2.40;  // od-a's OpenCost GPU price, written here

std::string AzureTrace() { return gpufit::test_paths::DataDir() + "/azure-llm-2023/AzureLLMInferenceTrace_conv.csv"; }

// The trace's requests: its data rows (every non-empty line after the header).
std::size_t CsvRows(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::size_t rows = 0;
  std::getline(in, line);  // TIMESTAMP,ContextTokens,GeneratedTokens
  while (std::getline(in, line))
    if (!line.empty() && line != "\r") ++rows;
  return rows;
}

// OpenCost's series for od-a (8 A100s, training_fixture.h), one a minute over the range.
std::string OdAOpenCost() {
  std::string gpu = "# TYPE node_gpu_hourly_cost gauge\n", cpu = "# TYPE node_cpu_hourly_cost gauge\n",
              ram = "# TYPE node_ram_hourly_cost gauge\n", count = "# TYPE node_gpu_count gauge\n";
  const std::string l =
      R"(instance="od-a",node="od-a",instance_type="p4de.24xlarge",region="us-east-1",provider_id="aws:///us-east-1a/i-od-a",arch="amd64",uid="u-od-a")";
  for (long long t = static_cast<long long>(kSince); t <= static_cast<long long>(kUntil); t += 60) {
    gpu += fmt::format("node_gpu_hourly_cost{{{}}} {} {}\n", l, kOdAUsdPerGpuHour, t);
    cpu += fmt::format("node_cpu_hourly_cost{{{}}} 0.03 {}\n", l, t);
    ram += fmt::format("node_ram_hourly_cost{{{}}} 0.004 {}\n", l, t);
    count += fmt::format("node_gpu_count{{{}}} 8 {}\n", l, t);
  }
  return gpu + cpu + ram + count;
}

std::string WithoutEof(std::string text) {
  const auto eof = text.rfind("# EOF\n");
  if (eof != std::string::npos) text.erase(eof);
  return text;
}

// The gpufit row of a service's replica policies.
double GpufitGpuHours(const json& service) {
  for (const json& row : service["policies"])
    if (row["policy"] == "gpufit") return row["gpu_hours"].get<double>();
  ADD_FAILURE() << "no gpufit row in " << service.dump();
  return 0;
}

const json* Find(const json& array, const std::string& key, const std::string& value) {
  for (const json& e : array)
    if (e.at(key) == value) return &e;
  return nullptr;
}

class LiveCluster : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(AzureTrace())) return;
    auto serving = gpufit::testing::MakeVllmFixture(AzureTrace(), kSince, kUntil);
    ASSERT_TRUE(serving) << serving.error().message;
    // The cluster fixture's minute samples from T0 to T0 + 6 h (361 of them).
    const gpufit::testing::ClusterFixture cluster = gpufit::testing::MakeClusterFixture(/*opencost=*/true, 361);
    services_yaml_ = new std::string(serving->services_yaml);
    text_ = new std::string(WithoutEof(gpufit::testing::MakeTrainingFixture().openmetrics) +
                            WithoutEof(cluster.openmetrics) + OdAOpenCost() + serving->openmetrics + "# EOF\n");
    dir_ = new fs::path(Scratch("live-cluster"));
  }
  static void TearDownTestSuite() {
    if (dir_ != nullptr) fs::remove_all(*dir_);
    delete dir_;
    dir_ = nullptr;
    delete text_;
    text_ = nullptr;
    delete services_yaml_;
    services_yaml_ = nullptr;
  }
  void SetUp() override {
    if (!fs::exists(AzureTrace())) GTEST_SKIP() << "no " << AzureTrace();
    ASSERT_NE(text_, nullptr);
    const fs::path dir = *dir_ / GetParam();
    fs::create_directories(dir);
    auto started = gpufit::testing::StartMetricsServer(GetParam(), *text_, dir.string());
    ASSERT_TRUE(started) << started.error().message;
    server_ = std::move(*started);
  }
  void TearDown() override { server_.reset(); }
  std::string Plan() const {
    return fmt::format("plan --prometheus {} --since {} --until {} --gpu a100-80gb", server_->url(),
                       static_cast<long long>(kSince), static_cast<long long>(kUntil));
  }
  static std::string* text_;
  static std::string* services_yaml_;  // the chat service as a services file naming the trace
  static fs::path* dir_;
  std::unique_ptr<gpufit::testing::MetricsServer> server_;
};
std::string* LiveCluster::text_ = nullptr;
std::string* LiveCluster::services_yaml_ = nullptr;
fs::path* LiveCluster::dir_ = nullptr;

INSTANTIATE_TEST_SUITE_P(Servers, LiveCluster, ::testing::ValuesIn(gpufit::testing::MetricsServerNames()),
                         [](const ::testing::TestParamInfo<std::string>& server) {
                           std::string name = server.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST_P(LiveCluster, EveryStrategyFromTheServerAlone) {
  const fs::path dir = *dir_ / (GetParam() + "-run");
  fs::create_directories(dir);
  const auto start = std::chrono::steady_clock::now();
  const CliRun run = Gpufit(Plan() + " --format json", dir);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::fprintf(stderr, "%s: plan took %.2f s\n", GetParam().c_str(),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  const json plan = json::parse(run.out);

  // Inference: the chat Deployment, every request of the trace (all arrive within the range).
  ASSERT_TRUE(plan.contains("inference")) << run.out.substr(0, 2000);
  ASSERT_EQ(plan["inference"]["services"].size(), 1u) << plan["inference"].dump(1).substr(0, 2000);
  const json& s = plan["inference"]["services"][0];
  {
    SCOPED_TRACE(s.dump(1).substr(0, 4000));
    EXPECT_EQ(s["name"], "chat-vllm");
    EXPECT_EQ(s["namespace"], "llm");
    EXPECT_EQ(s["deployment"], "chat-vllm");
    EXPECT_EQ(s["requests"].get<std::size_t>(), CsvRows(AzureTrace()));
    EXPECT_EQ(s["current_replicas"], 2);
    EXPECT_EQ(s["cold_start"]["seconds"].get<double>(), 56);  // ready_time - created (serving_fixture.h)
    const json& from = s["sources"];
    EXPECT_THAT(from["requests"].get<std::string>(), HasSubstr("vllm:request_success_total"));
    EXPECT_THAT(from["tokens"].get<std::string>(), HasSubstr("vllm:generation_tokens_total"));
    EXPECT_THAT(from["measured latency"].get<std::string>(), HasSubstr("vllm:e2e_request_latency_seconds_bucket"));
    EXPECT_THAT(from["workload"].get<std::string>(), HasSubstr("kube_replicaset_owner"));
    EXPECT_THAT(from["cold start"].get<std::string>(), HasSubstr("kube_pod_status_ready_time - kube_pod_created"));
    EXPECT_THAT(from["replicas today"].get<std::string>(), HasSubstr("kube_deployment_status_replicas"));
  }

  // The replica schedule's GPU-hours within 5% of the services-file run on the same trace.
  std::ofstream(dir / "services.yaml") << *services_yaml_;
  const CliRun yaml = Gpufit("plan --inference " + (dir / "services.yaml").string() + " --format json", dir);
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  const json from_yaml = json::parse(yaml.out);
  const json& y = from_yaml["services"].is_array() ? from_yaml["services"][0] : from_yaml["inference"]["services"][0];
  const double metric_hours = GpufitGpuHours(s), yaml_hours = GpufitGpuHours(y);
  std::fprintf(stderr, "%s: gpufit GPU-hours: serving metrics %.4f, services file %.4f\n", GetParam().c_str(),
               metric_hours, yaml_hours);
  EXPECT_GT(yaml_hours, 0);
  EXPECT_LE(std::abs(metric_hours - yaml_hours), 0.05 * yaml_hours);

  // Training: the two running jobs; one spot node gone in 15 spot node-hours
  // (training_fixture.h; the cluster fixture's nodes carry no capacity type).
  ASSERT_TRUE(plan.contains("training")) << run.out.substr(0, 2000);
  const json& t = plan["training"];
  EXPECT_EQ(t["interruptions"]["spot_source"], "cluster history");
  EXPECT_DOUBLE_EQ(t["interruptions"]["observed_reclaims"].get<double>(), 1);
  EXPECT_DOUBLE_EQ(t["interruptions"]["observed_spot_node_hours"].get<double>(), 15);
  EXPECT_NEAR(t["interruptions"]["spot_per_hour"].get<double>(), 1.0 / 15, 1e-12);
  ASSERT_EQ(t["jobs"].size(), 2u) << t["jobs"].dump(1);
  const json* ft = Find(t["jobs"], "job", "finetune");
  const json* llm = Find(t["jobs"], "job", "llm-pretrain");
  ASSERT_TRUE(ft != nullptr && llm != nullptr);
  // finetune started T0 - 2 h: 8 h so far of its annotated 20 h; llm-pretrain T0 + 1 h: 5 h so
  // far, 5 h left; its checkpoint 16 x 60,000 MiB = 937.5 GiB.
  EXPECT_EQ((*ft)["gpus"], 4);
  EXPECT_DOUBLE_EQ((*ft)["work_h"].get<double>(), 12);
  EXPECT_DOUBLE_EQ((*ft)["origin"]["runtime_so_far_h"].get<double>(), 8);
  EXPECT_EQ((*ft)["origin"]["capacity"], "on-demand");
  EXPECT_EQ((*llm)["pods"], 2);
  EXPECT_DOUBLE_EQ((*llm)["work_h"].get<double>(), 5);
  EXPECT_NEAR((*llm)["checkpoint_size_gib"].get<double>(), 937.5, 1e-9);
  EXPECT_EQ((*llm)["origin"]["capacity"], "spot");
  EXPECT_THAT((*ft)["origin"]["sources"]["checkpoint_size_gib"].get<std::string>(), HasSubstr("DCGM_FI_DEV_FB_USED"));

  // Prices from OpenCost. A100: od-a alone, 8 GPUs at 2.40. H100: gpu-a 8 GPUs at 3.00 and
  // gpu-b 4 GPUs at 4.00 for samples 0-179 and 5.00 for 180-360; the range's minute grid is
  // T0 + 60 ... T0 + 6 h (samples 1-360): 179 at 4.00 and 181 at 5.00.
  const double gpu_b = (179 * 4.0 + 181 * 5.0) / 360;
  const double h100 = (3.0 * 8 + gpu_b * 4) / 12;
  const json& prices = plan["prices"];
  EXPECT_EQ(prices["source"], "opencost");
  ASSERT_EQ(prices["gpu_models"].size(), 2u) << prices.dump(1);
  const json* a100p = Find(prices["gpu_models"], "gpu", "a100-80gb");
  const json* h100p = Find(prices["gpu_models"], "gpu", "h100-80gb");
  ASSERT_TRUE(a100p != nullptr && h100p != nullptr) << prices.dump(1);
  EXPECT_NEAR((*a100p)["usd_per_gpu_hour"].get<double>(), kOdAUsdPerGpuHour, 1e-9);
  EXPECT_EQ((*a100p)["nodes"], json({"od-a"}));
  EXPECT_EQ((*a100p)["gpus"], 8);
  EXPECT_NEAR((*h100p)["usd_per_gpu_hour"].get<double>(), h100, 1e-9);
  EXPECT_EQ((*h100p)["nodes"], json({"gpu-a", "gpu-b"}));
  EXPECT_EQ(prices["current_gpu"]["source"], "opencost (1 nodes)");
  // Every pod's GPUs (finetune 4, llm-pretrain 2 x 8, sweep 8, vllm 1, serve-a 1, serve-b 1 =
  // 31) priced today at its own model's OpenCost price, 730 h a month: serve-a and serve-b run
  // on H100s (their modelName), the other 29 on A100s (issue 38: not all at the --gpu model's).
  EXPECT_EQ(plan["totals"]["gpus_before"], 31);
  EXPECT_NEAR(plan["totals"]["usd_per_month_before"].get<double>(), (29 * kOdAUsdPerGpuHour + 2 * h100) * 730, 1e-6);

  // The network check: serve-a's load capped by its 1 Gbit/s link, serve-b's on 25 Gbit/s not.
  const json& network = plan["ancillary"]["network"];
  ASSERT_TRUE(network.is_object()) << plan["ancillary"].dump(1).substr(0, 2000);
  std::vector<std::string> bound;
  for (const json& load : network["loads"])
    if (load["network_bound"].get<bool>()) bound.push_back(load["pod"].get<std::string>());
  EXPECT_EQ(bound, std::vector<std::string>{"llm/serve-a"}) << network.dump(1);
  const json* la = Find(network["loads"], "pod", "llm/serve-a");
  const json* lb = Find(network["loads"], "pod", "llm/serve-b");
  ASSERT_TRUE(la != nullptr && lb != nullptr) << network.dump(1);
  EXPECT_EQ((*la)["link_bytes_per_s"], 125e6);
  EXPECT_EQ((*la)["load_s"], 120);
  EXPECT_EQ((*lb)["link_bytes_per_s"], 3.125e9);

  // The Markdown says where the figures came from.
  const CliRun md = Gpufit(Plan() + " --out " + (dir / "out").string(), dir);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  const std::string text = Slurp(dir / "out" / "plan.md");
  EXPECT_THAT(text, HasSubstr(fmt::format("- from serving metrics, requests: {} requests: vllm:request_success_total",
                                          CsvRows(AzureTrace()))));
  EXPECT_THAT(text, HasSubstr("cluster history: 1 reclaim(s) in 15.0 spot node-hours"));
  EXPECT_THAT(text, HasSubstr("Where the figures came from (spot rate: cluster history)"));
  EXPECT_THAT(text, HasSubstr("2.4 USD/GPU-hour from OpenCost"));
  EXPECT_THAT(text, HasSubstr("| llm/serve-a | gpu-a | 1 Gbit/s | 120 s | 14336 MiB |"));
  EXPECT_THAT(text, Not(HasSubstr("| llm/serve-b | gpu-b |")));
}

}  // namespace
