// `gpufit plan --prometheus` against real metrics servers (Prometheus, VictoriaMetrics) loaded
// with a GenTD26 slice, compared with the plan from the same samples in a CSV file, and the
// manifests it emits.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>

#include "cli_run.h"
#include "dcgm_fixture.h"
#include "manifest_validator.h"
#include "metrics_server.h"
#include "prometheus_server.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using gpufit::e2e::CliRun;
using gpufit::e2e::GenTd26;
using gpufit::e2e::Gpufit;
using gpufit::e2e::Scratch;
using gpufit::e2e::Slurp;
using gpufit::testing::ValidatedLine;
using gpufit::testing::ValidateManifests;
using gpufit::testing::YamlFiles;

// Every object in `dir` passes its schema (tools/validate-manifests), patches as its README
// declares them, and each file counts once.
void ExpectValidManifests(const fs::path& dir) {
  const gpufit::testing::ManifestValidation v = ValidateManifests({dir});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_EQ(v.output, ValidatedLine(YamlFiles(dir)));
}

// kubectl get pods -A -o json for the fixture's pods genai/sd-<i>: sd-0..9 belong to the
// Deployment sd-web (through ReplicaSet sd-web-6c9f, with an istio-proxy sidecar),
// sd-10..19 to the StatefulSet sd-batch, the rest to the Job sd-eval.
std::string PodsJson(int pods) {
  nlohmann::json items = nlohmann::json::array();
  for (int i = 0; i < pods; ++i) {
    nlohmann::json owner = {{"apiVersion", "apps/v1"}, {"controller", true}, {"uid", fmt::format("o{}", i / 10)}};
    nlohmann::json labels = {{"app", "sd"}};
    nlohmann::json containers = {{{"name", "sd"},
                                  {"image", "registry.example/sd:1"},
                                  {"resources",
                                   {{"requests", {{"cpu", "4"}, {"memory", "32Gi"}, {"nvidia.com/gpu", "1"}}},
                                    {"limits", {{"nvidia.com/gpu", "1"}}}}}}};
    if (i < 10) {
      owner["kind"] = "ReplicaSet";
      owner["name"] = "sd-web-6c9f";
      labels["pod-template-hash"] = "6c9f";
      containers.push_back({{"name", "istio-proxy"},
                            {"image", "istio/proxyv2:1.22"},
                            {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}}}}});
    } else if (i < 20) {
      owner["kind"] = "StatefulSet";
      owner["name"] = "sd-batch";
    } else {
      owner["apiVersion"] = "batch/v1";
      owner["kind"] = "Job";
      owner["name"] = "sd-eval";
    }
    items.push_back({{"apiVersion", "v1"},
                     {"kind", "Pod"},
                     {"metadata",
                      {{"name", fmt::format("sd-{}", i)},
                       {"namespace", "genai"},
                       {"uid", fmt::format("uid-{}", i)},
                       {"labels", labels},
                       {"ownerReferences", {owner}}}},
                     {"spec", {{"nodeName", fmt::format("gpu-node-{}", i / 4)}, {"containers", containers}}},
                     {"status", {{"phase", "Running"}}}});
  }
  return nlohmann::json({{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}).dump(1);
}

// kubectl get nodes -o json: eight H100 nodes of four GPUs and one CPU node.
std::string NodesJson() {
  nlohmann::json items = nlohmann::json::array();
  for (int n = 0; n < 8; ++n) {
    items.push_back({{"apiVersion", "v1"},
                     {"kind", "Node"},
                     {"metadata",
                      {{"name", fmt::format("gpu-node-{}", n)},
                       {"labels",
                        {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                         {"nvidia.com/gpu.count", "4"},
                         {"nvidia.com/gpu.memory", "81559"},
                         {"karpenter.sh/capacity-type", "on-demand"}}}}},
                     {"status",
                      {{"capacity", {{"cpu", "96"}, {"memory", "1056758636Ki"}, {"nvidia.com/gpu", "4"}}},
                       {"allocatable", {{"cpu", "95500m"}, {"memory", "1046758636Ki"}, {"nvidia.com/gpu", "4"}}}}}});
  }
  items.push_back({{"apiVersion", "v1"},
                   {"kind", "Node"},
                   {"metadata", {{"name", "cpu-node-0"}}},
                   {"status", {{"capacity", {{"cpu", "16"}, {"memory", "64Gi"}}}}}});
  return nlohmann::json({{"apiVersion", "v1"}, {"kind", "List"}, {"items", items}}).dump(1);
}

// The fixture (30 GenTD26 pods over 6 hours), its CSV, and one metrics server of each kind
// loaded with it (tests/support/metrics_server.h), each started at its first use in a test
// process and stopped when the suite ends.
class ServerPlan {
 protected:
  // Sets server_ to the server called `name` (nullptr, with a failure, when it cannot start).
  static void Use(const std::string& name) {
    server_ = nullptr;
    if (fixture_ == nullptr) {
      if (dir_ == nullptr) dir_ = new fs::path(Scratch("server"));
      auto fixture = gpufit::testing::MakeDcgmFixture(GenTd26(), 30, 6);
      ASSERT_TRUE(fixture) << fixture.error().message;
      fixture_ = new gpufit::testing::DcgmFixture(*fixture);
      std::ofstream(*dir_ / "fixture.csv") << fixture_->long_csv;
      servers_ = new std::map<std::string, std::unique_ptr<gpufit::testing::MetricsServer>>();
    }
    auto& server = (*servers_)[name];
    if (server == nullptr) {
      const fs::path dir = *dir_ / name;
      fs::create_directories(dir);
      auto started = gpufit::testing::StartMetricsServer(name, fixture_->openmetrics, dir.string());
      ASSERT_TRUE(started) << started.error().message;
      server = std::move(*started);
    }
    server_ = server.get();
  }
  static void StopAll() {
    delete servers_;
    servers_ = nullptr;
    server_ = nullptr;
    if (dir_ != nullptr) fs::remove_all(*dir_);
    delete dir_;
    dir_ = nullptr;
    delete fixture_;
    fixture_ = nullptr;
  }
  static std::string Range() {
    return fmt::format("--prometheus {} --since {} --until {} --step 60s", server_->url(),
                       static_cast<long long>(fixture_->since_s) - 60, static_cast<long long>(fixture_->until_s));
  }
  static fs::path* dir_;
  static gpufit::testing::DcgmFixture* fixture_;
  static std::map<std::string, std::unique_ptr<gpufit::testing::MetricsServer>>* servers_;
  static gpufit::testing::MetricsServer* server_;  // the one the current test reads
};
fs::path* ServerPlan::dir_ = nullptr;
gpufit::testing::DcgmFixture* ServerPlan::fixture_ = nullptr;
std::map<std::string, std::unique_ptr<gpufit::testing::MetricsServer>>* ServerPlan::servers_ = nullptr;
gpufit::testing::MetricsServer* ServerPlan::server_ = nullptr;

// Tests of what gpufit writes from the answers (manifests): one server is enough.
class PrometheusPlan : public ::testing::Test, protected ServerPlan {
 protected:
  static void TearDownTestSuite() { StopAll(); }
  void SetUp() override {
    if (!fs::exists(GenTd26())) GTEST_SKIP() << "no " << GenTd26();
    Use("prometheus");
    ASSERT_NE(server_, nullptr);
  }
};

// Tests of how gpufit reads a server, run against each (Prometheus and VictoriaMetrics):
// the same plan as the CSV, lifetimes and ends, chunking at the point limit, analyze and
// replay. Where the servers' answers differ, gpufit's queries must make them agree
// (docs/integrations.md, "Servers").
class PlanFromEachServer : public ::testing::TestWithParam<std::string>, protected ServerPlan {
 protected:
  static void TearDownTestSuite() { StopAll(); }
  void SetUp() override {
    if (!fs::exists(GenTd26())) GTEST_SKIP() << "no " << GenTd26();
    Use(GetParam());
    ASSERT_NE(server_, nullptr);
  }
};
INSTANTIATE_TEST_SUITE_P(Servers, PlanFromEachServer, ::testing::ValuesIn(gpufit::testing::MetricsServerNames()),
                         [](const ::testing::TestParamInfo<std::string>& server) {
                           std::string name = server.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST_P(PlanFromEachServer, ReproducesTheCsvPlanExactly) {
  const fs::path dir = Scratch("equal");
  const CliRun from_prometheus = Gpufit("plan " + Range() + " --gpu h100-80gb --format json", dir);
  ASSERT_EQ(from_prometheus.exit_code, 0) << from_prometheus.err;
  const CliRun from_csv =
      Gpufit("plan --telemetry " + (*dir_ / "fixture.csv").string() + " --gpu h100-80gb --format json", dir);
  ASSERT_EQ(from_csv.exit_code, 0) << from_csv.err;
  nlohmann::json a = nlohmann::json::parse(from_prometheus.out), b = nlohmann::json::parse(from_csv.out);
  EXPECT_THAT(a["source"].get<std::string>(), HasSubstr(server_->url()));
  a.erase("source");
  b.erase("source");
  EXPECT_EQ(a["pods"].size(), 30u);
  EXPECT_FALSE(a.contains("inference"));  // no serving metrics on this server: no section, no error
  EXPECT_EQ(a["totals"], b["totals"]);
  EXPECT_EQ(a["groups"], b["groups"]);
  // Finished pods (tests/support/dcgm_fixture.h): Prometheus holds their stale samples after
  // each end, the CSV (the truth) does not. Each end is the pod's last CSV sample; deleted
  // pods (i % 6 == 1) had 5 stale samples when 10 fit in the slice, completed Job pods
  // (i % 6 == 3) 30, or to the slice's end.
  {
    std::map<std::string, double> last_s;
    std::istringstream csv(fixture_->long_csv);
    std::string line;
    std::getline(csv, line);
    while (std::getline(csv, line)) {
      const std::string pod = line.substr(line.find(',') + 1, line.find(',', line.find(',') + 1) - line.find(',') - 1);
      last_s[pod] = std::max(last_s[pod], std::stod(line.substr(0, line.find(','))));
    }
    const std::size_t n = static_cast<std::size_t>((fixture_->until_s - fixture_->since_s) / 60) + 1;
    std::map<std::string, std::tuple<double, std::string, std::size_t>> expected;
    std::size_t total = 0;
    for (int i = 0; i < 30; ++i) {
      const std::string pod = fmt::format("genai/sd-{}", i);
      const auto last = static_cast<std::size_t>((last_s.at(pod) - fixture_->since_s) / 60);
      std::size_t stale = 0;
      if (i % 6 == 1) stale = last + 10 <= n - 1 ? 5 : 0;
      if (i % 6 == 3) stale = std::min(n - 1, last + 30) - last;
      if (stale == 0) continue;
      expected[pod] = {last_s.at(pod),
                       i % 6 == 1 ? "kube_pod_created (the pod object's last sample)" : "kube_pod_completion_time",
                       stale};
      total += stale;
    }
    ASSERT_EQ(a["telemetry"]["ended"].size(), expected.size());
    EXPECT_GE(expected.size(), 8u);
    for (const auto& e : a["telemetry"]["ended"]) {
      const auto& [end_s, source, stale] = expected.at(e["pod"].get<std::string>());
      SCOPED_TRACE(e.dump());
      EXPECT_EQ(e["end_s"].get<double>(), end_s);
      EXPECT_EQ(e["source"], source);
      EXPECT_EQ(e["dropped_samples"], stale);
    }
    EXPECT_EQ(a["telemetry"]["samples_dropped_after_end"], total);
    EXPECT_EQ(b["telemetry"]["ended"].size(), 0u);
    // The CSV has no end rows, so the pods whose samples stop early are warned about there;
    // Prometheus gives their ends (kube-state-metrics), so none is.
    EXPECT_EQ(a["warnings"]["pods_stopped_without_end"].size(), 0u);
    EXPECT_GE(b["warnings"]["pods_stopped_without_end"].size(), 8u);
    for (auto* plan : {&a, &b}) {
      (*plan)["warnings"].erase("pods_stopped_without_end");
      (*plan)["telemetry"].erase("ended");
      (*plan)["telemetry"].erase("samples_dropped_after_end");
    }
  }
  // The GPU used by a process outside any pod: 81,559 MiB less its 6,144 MiB peak for pods;
  // a group goes there only if its need (peak + margin) fits, the largest that does.
  {
    ASSERT_EQ(a["reserved_gpus"].size(), 1u);
    const auto& r = a["reserved_gpus"][0];
    EXPECT_EQ(r["gpu"], "GPU-00000065-0000-4000-8000-000000000065");
    EXPECT_EQ(r["host"], "gpu-node-25");
    EXPECT_EQ(r["outside_pods_peak_mib"], 6144);
    EXPECT_EQ(r["capacity_for_pods_mib"].get<double>(), 81559.0 - 6144);
    // Its group margin: margin + (pods - 1) x per_pod (optimize/memory_envelope.h).
    const double margin = a["memory_envelope"]["margin_mib"].get<double>();
    const double per_pod = a["memory_envelope"]["per_pod_margin_mib"].get<double>();
    const auto group_margin = [&](std::size_t g) {
      return margin + static_cast<double>(a["groups"][g]["pods"].size() - 1) * per_pod;
    };
    double largest_fitting = -1;
    for (std::size_t g = 0; g < a["groups"].size(); ++g) {
      const double need = a["groups"][g]["peak_fb_used_mib"].get<double>() + group_margin(g);
      if (need <= 81559.0 - 6144) largest_fitting = std::max(largest_fitting, need);
    }
    if (largest_fitting < 0) {
      EXPECT_TRUE(r["group"].is_null());
    } else {
      ASSERT_FALSE(r["group"].is_null());
      const std::size_t g = r["group"].get<std::size_t>();
      EXPECT_EQ(a["groups"][g]["peak_fb_used_mib"].get<double>() + group_margin(g), largest_fitting);
    }
    EXPECT_EQ(b["reserved_gpus"].size(), 0u);
    a.erase("reserved_gpus");
    b.erase("reserved_gpus");
  }
  // The two GPUs no pod holds are reported by the Prometheus source, not planned; the
  // CSV has no such rows.
  ASSERT_EQ(a["telemetry"]["skipped"].size(), 2u);
  EXPECT_THAT(a["telemetry"]["skipped"][0].get<std::string>(), HasSubstr("DCGM series without a pod label"));
  EXPECT_EQ(b["telemetry"]["skipped"].size(), 0u);
  a["telemetry"].erase("skipped");
  b["telemetry"].erase("skipped");
  // How Prometheus was read (ingest/prometheus/split.h): 13 queries, each one series look-up
  // and one range request, none split at 360 points under the 256 MiB cap; files: null.
  EXPECT_EQ(a["telemetry"]["queries"]["requests"], 26);
  EXPECT_EQ(a["telemetry"]["queries"]["split_queries"], 0);
  EXPECT_EQ(a["telemetry"]["queries"]["step_s"], 60);
  EXPECT_TRUE(b["telemetry"]["queries"].is_null());
  EXPECT_THAT(from_prometheus.err, HasSubstr("gpufit: prometheus: 26 requests (13 queries, 0 split"));
  a["telemetry"].erase("queries");
  b["telemetry"].erase("queries");
  // The CSV carries no container series; Prometheus adds cAdvisor's (checked below).
  EXPECT_EQ(b["containers"].size(), 0u);
  const nlohmann::json containers = a["containers"], rightsizing = a["ancillary"]["containers"];
  a.erase("containers");
  b.erase("containers");
  // Container right-sizing needs cAdvisor's series: only the Prometheus plan has it.
  EXPECT_EQ(b["ancillary"]["containers"].size(), 0u);
  EXPECT_EQ(a["kept_on_current_gpu"].size(), 0u);  // throttling stays under 25%: no pod is starved
  a["ancillary"].erase("containers");
  b["ancillary"].erase("containers");
  a["ancillary"].erase("containers_usd_per_month_saving");
  b["ancillary"].erase("containers_usd_per_month_saving");
  EXPECT_TRUE(a["cpu_starvation_evaluated"].get<bool>() && a["ancillary"]["container_data"].get<bool>());
  EXPECT_FALSE(b["cpu_starvation_evaluated"].get<bool>() || b["ancillary"]["container_data"].get<bool>());
  for (auto* plan : {&a, &b}) {
    plan->erase("cpu_starvation_evaluated");
    (*plan)["ancillary"].erase("container_data");
  }
  // SM activity comes only from the profiling counter, which the CSV does not carry; nor does
  // it carry dcgm-exporter's modelName, so the CSV's pods are assumed on --gpu (the same H100).
  for (auto& pod : a["pods"]) {
    pod["profile"].erase("sm_active_pct");
    EXPECT_EQ(pod["current_gpu"]["source"], "modelName");
    pod["current_gpu"].erase("source");
  }
  for (auto& pod : b["pods"]) {
    pod["profile"].erase("sm_active_pct");
    EXPECT_EQ(pod["current_gpu"]["source"], "assumed: --gpu");
    pod["current_gpu"].erase("source");
  }
  // Both priced from the catalog, for different reasons (no OpenCost series; no server).
  EXPECT_THAT(a["prices"]["basis"].get<std::string>(), HasSubstr("no OpenCost series"));
  EXPECT_EQ(a["prices"]["current_gpu"]["source"], "catalog");
  a.erase("prices");
  b.erase("prices");
  // The summary adds up every section, the containers' saving included (only the Prometheus
  // plan has them): the co-location row is the same.
  EXPECT_EQ(a["summary"]["strategies"][0], b["summary"]["strategies"][0]);
  a.erase("summary");
  b.erase("summary");
  // What the server warned of (issue 40): nothing, from a whole store; a file plan has no field.
  EXPECT_EQ(a["prometheus_warnings"], nlohmann::json::array());
  EXPECT_FALSE(b.contains("prometheus_warnings"));
  a.erase("prometheus_warnings");
  EXPECT_EQ(a, b) << nlohmann::json::diff(b, a).dump();  // same pods, same GPUs, same totals: everything but the source

  // Containers: expected values from the fixture's rule applied to the CSV's duty cycles
  // (tests/support/dcgm_fixture.h): cores 0.5 + duty / 50 and throttled duty / 400 from the
  // second sample of a pod on (a rate needs two), working set 4096 + MiB / 8.
  std::map<std::string, std::vector<double>> duty, memory;
  std::istringstream csv(fixture_->long_csv);
  std::string line;
  std::getline(csv, line);
  while (std::getline(csv, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    if (f[2] == "DCGM_FI_PROF_GR_ENGINE_ACTIVE")  // a MIG instance's duty cycle, a ratio
      duty[f[1]].push_back(100 * std::stod(f[3]));
    else
      (f[2] == "DCGM_FI_DEV_GPU_UTIL" ? duty : memory)[f[1]].push_back(std::stod(f[3]));
  }
  ASSERT_EQ(containers.size(), 30u);
  for (const auto& c : containers) {
    const std::string pod = c["pod"];
    SCOPED_TRACE(pod);
    EXPECT_EQ(c["container"], "sd");
    EXPECT_EQ(c["image"], "sd:1");
    const std::vector<double>& d = duty.at(pod);
    const double peak_duty = *std::max_element(d.begin() + 1, d.end());
    EXPECT_EQ(c["cpu_samples"], d.size() - 1);
    EXPECT_NEAR(c["cpu_cores"]["peak"].get<double>(), 0.5 + peak_duty / 50, 1e-4);
    EXPECT_NEAR(c["cpu_throttled_ratio"]["peak"].get<double>(), peak_duty / 400, 1e-4);
    const std::vector<double>& m = memory.at(pod);
    EXPECT_NEAR(c["memory_working_set_mib"]["peak"].get<double>(), 4096 + *std::max_element(m.begin(), m.end()) / 8,
                1e-3);
    EXPECT_EQ(c["requests"]["cpu_millicores"], 4000);
    EXPECT_EQ(c["requests"]["memory_mib"], 32768);
    EXPECT_EQ(c["limits"]["memory_mib"], 49152);
    EXPECT_TRUE(c["limits"]["cpu_millicores"].is_null());
  }
  // Right-sizing (KRR's defaults): CPU request = p95 of usage, no CPU limit; memory request =
  // limit = peak working set + 15% on 24 h or more; priced on an assumed H100 node (no --nodes).
  ASSERT_EQ(rightsizing.size(), 30u);
  for (const auto& r : rightsizing) {
    const std::string pod = r["pod"];
    SCOPED_TRACE(pod);
    std::vector<double> cores;
    const std::vector<double>& d = duty.at(pod);
    for (std::size_t k = 1; k < d.size(); ++k) cores.push_back(0.5 + d[k] / 50);
    std::sort(cores.begin(), cores.end());
    const double p95 = cores[static_cast<std::size_t>(std::ceil(0.95 * static_cast<double>(cores.size()))) - 1];
    EXPECT_NEAR(r["cpu_cores_percentile"].get<double>(), p95, 1e-4);
    EXPECT_NEAR(r["recommended"]["cpu_request_m"].get<double>(), std::ceil(p95 * 1000 - 1e-3), 1.0);
    EXPECT_TRUE(r["recommended"]["cpu_limit_m"].is_null());
    const std::vector<double>& m = memory.at(pod);
    const double peak = 4096 + *std::max_element(m.begin(), m.end()) / 8;
    // The peak + 15% would lower memory, but 6 h is less than the 24 h needed to shrink it:
    // the request and limit stay at 32768 / 49152 MiB.
    EXPECT_LT(std::ceil(peak * 1.15), 32768);
    EXPECT_EQ(r["recommended"]["memory_request_mib"], 32768);
    EXPECT_EQ(r["recommended"]["memory_limit_mib"], 49152);
    EXPECT_TRUE(r["memory_held"].get<bool>());
    EXPECT_EQ(r["kind"], "application");
    EXPECT_TRUE(r["gpu_node"].get<bool>());
  }
}

TEST_P(PlanFromEachServer, AWiderWindowGivesTheSamePlan) {
  // 6 days before the data: 9,000 steps, under the 11,000 that would widen the step (a longer
  // window is read at a coarser step: prometheus_split_test); the grid is cut to the samples,
  // so the collision allowance (a share of the samples) is the same.
  const fs::path dir = Scratch("wide");
  const std::string wide = fmt::format("--prometheus {} --since {} --until {} --step 60s", server_->url(),
                                       static_cast<long long>(fixture_->since_s) - 6 * 86400 - 60,
                                       static_cast<long long>(fixture_->until_s));
  const CliRun a = Gpufit("plan " + Range() + " --gpu h100-80gb --format json", dir);
  const CliRun b = Gpufit("plan " + wide + " --gpu h100-80gb --format json", dir);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  nlohmann::json ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  EXPECT_EQ(jb["telemetry"]["samples"], 360);
  ja.erase("source");
  jb.erase("source");
  EXPECT_EQ(ja, jb);
}

TEST_P(PlanFromEachServer, AnalyzeAndReplayReadTheSameServer) {
  const fs::path dir = Scratch("analyze");
  const CliRun r = Gpufit("analyze " + Range() + " --format json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["pods"].size(), 30u);
  EXPECT_EQ(j["skipped"].size(), 2u);  // the idle GPUs
  EXPECT_THAT(j["source"].get<std::string>(), HasSubstr("(2025-12-31T23:59:00Z to 2026-01-01T05:59:00Z, step 60 s)"));
  for (const auto& p : j["pods"]) {
    const std::string pod = p["pod"];
    const bool has_sm = std::stoi(pod.substr(pod.find('-') + 1)) % 3 == 0;  // the fixture's rule
    EXPECT_EQ(p["sm_active_pct"].is_null(), !has_sm) << pod;
    if (has_sm) {
      EXPECT_NEAR(p["sm_active_pct"]["peak"].get<double>(), 0.8 * p["gpu_util_pct"]["peak"].get<double>(), 1e-3);
    }
  }
  // A plan from the server re-checks against the server.
  const CliRun plan = Gpufit("plan " + Range() + " --gpu h100-80gb --out " + (dir / "out").string(), dir);
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  // dcgm-exporter's modelName names the current GPU: no assumption is stated.
  EXPECT_THAT(plan.out, ::testing::Not(HasSubstr("are assumed to run on")));
  const CliRun replay = Gpufit("replay " + Range() + " --plan " + (dir / "out" / "plan.json").string(), dir);
  EXPECT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_THAT(replay.out, HasSubstr("0 memory overflows"));
}

// Every emitted file is one object with apiVersion, kind and metadata.name; the labels and
// resource names are the documented ones.
void ExpectManifestFolder(const fs::path& out, std::set<std::string>& kinds) {
  ASSERT_TRUE(fs::exists(out / "README.md"));
  for (const auto& entry : fs::directory_iterator(out)) {
    if (entry.path().extension() != ".yaml") continue;
    const YAML::Node n = YAML::LoadFile(entry.path().string());
    ASSERT_TRUE(n["apiVersion"].IsScalar()) << entry.path();
    ASSERT_TRUE(n["kind"].IsScalar()) << entry.path();
    ASSERT_TRUE(n["metadata"]["name"].IsScalar()) << entry.path();
    kinds.insert(n["kind"].as<std::string>());
    EXPECT_THAT(Slurp(out / "README.md"), HasSubstr(entry.path().filename().string()));
  }
}

TEST_F(PrometheusPlan, EmitsTimeSlicingManifestsForTheSharedGpus) {
  const fs::path dir = Scratch("manifests");
  std::ofstream(dir / "pods.json") << PodsJson(30);
  std::ofstream(dir / "nodes.json") << NodesJson();
  const fs::path out = dir / "manifests";
  const CliRun r = Gpufit("plan " + Range() + " --gpu h100-80gb --format json --pods " + (dir / "pods.json").string() +
                              " --nodes " + (dir / "nodes.json").string() + " --emit-manifests " + out.string(),
                          dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto plan = nlohmann::json::parse(r.out);
  std::set<std::string> kinds;
  ExpectManifestFolder(out, kinds);
  EXPECT_EQ(kinds, (std::set<std::string>{"ClusterPolicy", "ClusterQueue", "ConfigMap", "Deployment", "Job",
                                          "LocalQueue", "Node", "PriorityClass", "ResourceFlavor", "StatefulSet"}));

  // Time-slicing replicas = the largest group of the plan.
  std::size_t largest = 0, shared = 0;
  for (const auto& g : plan["groups"]) {
    largest = std::max(largest, g["pods"].size());
    shared += g["pods"].size() > 1;
  }
  const YAML::Node cm = YAML::LoadFile((out / "configmap-gpu-operator-gpufit-device-plugin-config.yaml").string());
  const YAML::Node config = YAML::Load(cm["data"]["gpufit-time-slicing"].as<std::string>());
  EXPECT_EQ(config["sharing"]["timeSlicing"]["resources"][0]["name"].as<std::string>(), "nvidia.com/gpu");
  EXPECT_EQ(config["sharing"]["timeSlicing"]["resources"][0]["replicas"].as<std::size_t>(), largest);
  // Nodes of four GPUs, enough for the shared ones, each labelled exactly so.
  std::size_t labelled = 0;
  for (int n = 0; n < 8; ++n) {
    const fs::path f = out / fmt::format("node-gpu-node-{}.yaml", n);
    if (!fs::exists(f)) continue;
    ++labelled;
    EXPECT_EQ(YAML::LoadFile(f.string())["metadata"]["labels"]["nvidia.com/device-plugin.config"].as<std::string>(),
              "gpufit-time-slicing");
  }
  EXPECT_EQ(labelled, (shared + 3) / 4);
  const YAML::Node web = YAML::LoadFile((out / "workload-genai-deployment-sd-web.yaml").string());
  EXPECT_EQ(web["apiVersion"].as<std::string>(), "apps/v1");
  EXPECT_EQ(web["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/device-plugin.config"].as<std::string>(),
            "gpufit-time-slicing");
  ExpectValidManifests(out);
}

// The validator is not a rubber stamp: one broken field in one emitted file fails the folder,
// naming the file and the field.
TEST_F(PrometheusPlan, BrokenManifestsFailValidationNamingFileAndField) {
  const fs::path dir = Scratch("broken");
  std::ofstream(dir / "pods.json") << PodsJson(30);
  std::ofstream(dir / "nodes.json") << NodesJson();
  const fs::path out = dir / "manifests";
  const CliRun r = Gpufit("plan " + Range() + " --gpu h100-80gb --pods " + (dir / "pods.json").string() + " --nodes " +
                              (dir / "nodes.json").string() + " --emit-manifests " + out.string(),
                          dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ExpectValidManifests(out);
  const struct {
    const char* name;
    std::string file, from, to, error;  // error: "/path: message"
  } cases[] = {
      {"a string where an integer is required", "priorityclass-gpufit-inference.yaml", "value: 100000",
       "value: \"high\"", "/value: must be integer"},
      {"a value outside the enum", "kueue-clusterqueue-gpufit-night.yaml", "stopPolicy: \"Hold\"",
       "stopPolicy: \"Paused\"", "/spec/stopPolicy: must be equal to one of the allowed values"},
      {"an unknown field in a workload patch", "workload-genai-deployment-sd-web.yaml",
       "nodeSelector:", "nodeSelectr:", "/spec/template/spec/nodeSelectr: unknown field \"nodeSelectr\""},
      {"an unknown field in the ClusterPolicy patch", "clusterpolicy-cluster-policy.yaml",
       "devicePlugin:", "devicePlugn:", "/spec/devicePlugn: unknown field \"devicePlugn\""},
      {"a patch read as a full object (no README)", "README.md", "| `workload-genai-deployment-sd-web.yaml`",
       "| `x.yaml`", "/spec: must have required property selector"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const fs::path copy = dir / "copy";
    fs::remove_all(copy);
    fs::copy(out, copy);
    std::string text = Slurp(copy / c.file);
    const std::size_t at = text.find(c.from);
    ASSERT_NE(at, std::string::npos) << text;
    text.replace(at, c.from.size(), c.to);
    std::ofstream(copy / c.file) << text;
    const gpufit::testing::ManifestValidation v = ValidateManifests({copy});
    EXPECT_EQ(v.exit_code, 1) << v.output;
    const std::string file = c.file == "README.md" ? "workload-genai-deployment-sd-web.yaml" : c.file;
    EXPECT_THAT(v.output, HasSubstr((copy / file).string() + ": " + c.error));
  }
}

TEST_F(PrometheusPlan, EmitsMigManifestsWithProfileResources) {
  const fs::path dir = Scratch("mig");
  std::ofstream(dir / "pods.json") << PodsJson(30);
  std::ofstream(dir / "nodes.json") << NodesJson();
  const fs::path out = dir / "manifests";
  const CliRun r = Gpufit("plan " + Range() + " --gpu h100-80gb --sharing mig --pods " + (dir / "pods.json").string() +
                              " --nodes " + (dir / "nodes.json").string() + " --emit-manifests " + out.string(),
                          dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> kinds;
  ExpectManifestFolder(out, kinds);
  const std::set<std::string> h100_profiles = {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"};
  for (const char* name : {"workload-genai-deployment-sd-web.yaml", "workload-genai-statefulset-sd-batch.yaml"}) {
    const YAML::Node w = YAML::LoadFile((out / name).string());
    const YAML::Node limits = w["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"];
    EXPECT_TRUE(limits["nvidia.com/gpu"].IsNull()) << name;
    int mig = 0;
    for (const auto& kv : limits) {
      const std::string key = kv.first.as<std::string>();
      if (key == "nvidia.com/gpu") continue;
      ASSERT_EQ(key.rfind("nvidia.com/mig-", 0), 0u) << key;
      EXPECT_TRUE(h100_profiles.count(key.substr(15))) << key;
      ++mig;
    }
    EXPECT_EQ(mig, 1) << name;
  }
  const YAML::Node node = YAML::LoadFile((out / "node-gpu-node-0.yaml").string());
  EXPECT_EQ(node["metadata"]["labels"]["nvidia.com/mig.config"].as<std::string>(), "gpufit-gpu-node-0");
  const YAML::Node cm = YAML::LoadFile((out / "configmap-gpu-operator-gpufit-mig-parted-config.yaml").string());
  const YAML::Node parted = YAML::Load(cm["data"]["config.yaml"].as<std::string>());
  EXPECT_EQ(parted["version"].as<std::string>(), "v1");
  EXPECT_TRUE(parted["mig-configs"]["gpufit-gpu-node-0"].IsSequence());
  ExpectValidManifests(out);
}

// The back ends that cap memory, end to end: the caps read from the emitted patches (each
// as its system documents it) equal the envelope computed here from plan.json's own peaks,
// max over a workload's replicas of ceil(max(peak x 1.1, peak + margin)), and the caps of
// every planned GPU add up to at most its capacity. On H200s: the fixture's pods peak near
// 45 GiB, so on 80 GB GPUs their caps leave every pod a GPU of its own.
std::optional<double> EmittedCap(const std::string& backend, const YAML::Node& patch) {
  const YAML::Node tpl = patch["spec"]["template"];
  if (backend == "kai") {
    if (!tpl["metadata"]["annotations"]["gpu-memory"]) return std::nullopt;
    return std::stod(tpl["metadata"]["annotations"]["gpu-memory"].as<std::string>());
  }
  for (const YAML::Node& c : tpl["spec"]["containers"]) {
    if (backend == "hami" && c["resources"]["limits"]["nvidia.com/gpumem"])
      return std::stod(c["resources"]["limits"]["nvidia.com/gpumem"].as<std::string>());
    for (const YAML::Node& e : c["env"])
      if (backend == "dra-mps" && e["name"].as<std::string>() == "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT") {
        const std::string v = e["value"].as<std::string>();  // 0=<MiB>M
        return std::stod(v.substr(2, v.size() - 3));
      }
  }
  return std::nullopt;
}

TEST_F(PrometheusPlan, CappedBackEndsWriteThePlannedCapsAndTheyFitEveryGpu) {
  for (const std::string backend : {"hami", "kai", "dra-mps"}) {
    SCOPED_TRACE(backend);
    const fs::path dir = Scratch("caps-" + backend);
    std::ofstream(dir / "pods.json") << PodsJson(30);
    std::ofstream(dir / "nodes.json") << NodesJson();
    const fs::path out = dir / "manifests";
    const CliRun r = Gpufit("plan " + Range() + " --gpu h200-141gb --format json --sharing " + backend + " --pods " +
                                (dir / "pods.json").string() + " --nodes " + (dir / "nodes.json").string() +
                                " --emit-manifests " + out.string(),
                            dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto plan = nlohmann::json::parse(r.out);
    const double margin = plan["memory_envelope"]["margin_mib"];
    const double capacity = plan["capacity_mib"];
    std::map<std::string, double> cap_of_workload, cap_of_pod;
    std::map<std::string, std::string> workload_of;
    for (const auto& p : plan["pods"]) {
      const double peak = p["profile"]["fb_used_mib"]["peak"];
      const double cap = std::ceil(std::max(peak * 1.1, peak + margin) - 1e-6);
      const std::string w = p["workload"];
      workload_of[p["pod"]] = w;
      cap_of_workload[w] = std::max(cap_of_workload[w], cap);
    }
    std::size_t shared = 0, checked = 0;
    for (const auto& g : plan["groups"]) {
      double sum = 0;
      for (std::size_t i = 0; i < g["pods"].size(); ++i) {
        const double cap = cap_of_workload.at(workload_of.at(g["pods"][i]));
        EXPECT_EQ(g["memory_caps_mib"][i].get<double>(), cap) << g["pods"][i];
        cap_of_pod[g["pods"][i]] = cap;
        sum += cap;
      }
      EXPECT_LE(sum, capacity);
      shared += g["pods"].size() > 1;
    }
    // Each workload patch: the workload's cap. Keys are kind/ns/name; files workload-ns-kind-name.
    for (const auto& [w, cap] : cap_of_workload) {
      const std::size_t a = w.find('/'), b = w.find('/', a + 1);
      const fs::path f =
          out / fmt::format("workload-{}-{}-{}.yaml", w.substr(a + 1, b - a - 1), w.substr(0, a), w.substr(b + 1));
      if (!fs::exists(f)) continue;
      const std::optional<double> emitted = EmittedCap(backend, YAML::LoadFile(f.string()));
      ASSERT_TRUE(emitted) << f;
      EXPECT_EQ(*emitted, cap) << f;
      ++checked;
    }
    EXPECT_GT(shared, 0U);
    if (backend != "dra-mps") {
      EXPECT_EQ(checked, cap_of_workload.size());  // every workload shares a GPU somewhere
    } else {
      // Each workload here has replicas on several planned GPUs: one pod template cannot name
      // one shared ResourceClaim, so nothing is patched and the README says so for each.
      EXPECT_EQ(checked, 0U);
      for (const char* w : {"Deployment genai/sd-web", "StatefulSet genai/sd-batch", "Job genai/sd-eval"})
        EXPECT_THAT(Slurp(out / "README.md"), HasSubstr(std::string(w) + " has replicas on several planned GPUs"));
    }
    EXPECT_THAT(Slurp(out / "README.md"), HasSubstr("run under their planned memory cap"));
    ExpectValidManifests(out);
    fs::remove_all(dir);
  }
}

TEST_F(PrometheusPlan, ARerunReplacesItsOwnFilesOnly) {
  const fs::path dir = Scratch("rerun");
  std::ofstream(dir / "pods.json") << PodsJson(30);
  std::ofstream(dir / "nodes.json") << NodesJson();
  const fs::path out = dir / "manifests";
  fs::create_directories(out);
  std::ofstream(out / "mine.yaml") << "kind: ConfigMap\n";
  const std::string cluster =
      " --gpu h100-80gb --pods " + (dir / "pods.json").string() + " --nodes " + (dir / "nodes.json").string();
  ASSERT_EQ(Gpufit("plan " + Range() + cluster + " --sharing mig --emit-manifests " + out.string(), dir).exit_code, 0);
  ASSERT_TRUE(fs::exists(out / "configmap-gpu-operator-gpufit-mig-parted-config.yaml"));
  const CliRun r = Gpufit("plan " + Range() + cluster + " --emit-manifests " + out.string(), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(out / "configmap-gpu-operator-gpufit-mig-parted-config.yaml"));  // the MIG run's
  EXPECT_TRUE(fs::exists(out / "configmap-gpu-operator-gpufit-device-plugin-config.yaml"));
  EXPECT_TRUE(fs::exists(out / "mine.yaml"));  // not gpufit's: kept
  // A failing run (a malformed pods file) changes nothing.
  std::ofstream(dir / "bad.json") << "{\"kind\": \"List\", \"items\": [";
  const CliRun bad = Gpufit("plan " + Range() + " --gpu h100-80gb --pods " + (dir / "bad.json").string() +
                                " --emit-manifests " + out.string(),
                            dir);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.err, HasSubstr("bad.json"));
  EXPECT_TRUE(fs::exists(out / "configmap-gpu-operator-gpufit-device-plugin-config.yaml"));
}

// --namespace and --selector narrow every query: genai's pods named sd-1* are sd-1 and
// sd-10 .. sd-19 (11 of the fixture's 30); the GPUs outside any pod (no namespace) are not read.
TEST_F(PrometheusPlan, NamespaceAndSelectorNarrowEveryQuery) {
  const fs::path dir = Scratch("scope");
  const CliRun r =
      Gpufit("plan " + Range() + " --namespace genai --selector 'pod=~\"sd-1.*\"' --gpu h100-80gb --format json", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["telemetry"]["pods"], 11);
  EXPECT_EQ(j["telemetry"]["skipped"].size(), 0u);
  EXPECT_EQ(j["telemetry"]["queries"]["scope"], R"(pod=~"sd-1.*",namespace="genai")");
}

TEST(PrometheusFaults, ServerDownIsAClearErrorAndNoOutput) {
  const fs::path dir = Scratch("down");
  const int port = gpufit::testing::FreeLoopbackPort();
  const CliRun r = Gpufit(fmt::format("plan --prometheus http://127.0.0.1:{} --gpu h100-80gb --prometheus-retries 1 "
                                      "--out {}",
                                      port, (dir / "out").string()),
                          dir);
  EXPECT_EQ(r.exit_code, 2);
  // The first request sizes the first query (/api/v1/series, ingest/prometheus/split.h).
  EXPECT_THAT(r.err, HasSubstr(fmt::format("http://127.0.0.1:{}/api/v1/series", port)));
  EXPECT_THAT(r.err, HasSubstr("cannot connect"));
  EXPECT_THAT(r.err, HasSubstr("after 2 attempts"));
  EXPECT_FALSE(fs::exists(dir / "out" / "plan.json"));
}

TEST(PrometheusFaults, BadFlagsNameTheFlag) {
  const fs::path dir = Scratch("flags");
  struct Case {
    std::string args, expected;
  };
  std::ofstream(dir / "token") << "abc\nEvil: yes\n";
  const std::vector<Case> cases = {
      {"plan --prometheus http://127.0.0.1:1 --gpu h100-80gb --since 2026-13-01T00:00:00Z", "--since"},
      {"plan --prometheus http://127.0.0.1:1 --gpu h100-80gb --since 2026-01-02T00:00:00Z --until 1767225600",
       "must be before --until"},
      {"plan --prometheus http://127.0.0.1:1 --gpu h100-80gb --step 5x", "--step"},
      {"plan --prometheus http://127.0.0.1:1 --gpu h100-80gb --selector 'team=ml'",
       "--selector: bad matcher 'team=ml': the value must be quoted"},
      {"plan --prometheus http://127.0.0.1:1 --gpu h100-80gb --namespace ML", "--namespace: 'ML' is not a namespace"},
      // Given but empty is an error, not "no scope"; __name__ would change the metric.
      {"plan --prometheus http://127.0.0.1:1 --gpu h100-80gb --selector ''", "--selector: no matcher"},
      {"plan --prometheus http://127.0.0.1:1 --gpu h100-80gb --namespace ''", "--namespace: '' is not a namespace"},
      {"plan --prometheus http://127.0.0.1:1 --gpu h100-80gb --selector '__name__=\"foo\"'",
       "__name__ would change the metric"},
      {"plan --telemetry x.csv --gpu h100-80gb --namespace ml", "--namespace: requires --prometheus"},
      // With neither a Prometheus nor a kubeconfig to find one, the scope would be ignored.
      {"plan --training-jobs x.yaml --selector 'team=\"ml\"'",
       "--selector requires --prometheus, or a kubeconfig to find the cluster's Prometheus"},
      {"plan --prometheus ftp://x --gpu h100-80gb", "http:// or https://"},
      {"plan --prometheus http://127.0.0.1:1 --gpu h100-80gb --bearer-token-file /nonexistent", "--bearer-token-file"},
      {"plan --telemetry x --prometheus http://127.0.0.1:1 --gpu h100-80gb", "excludes"},
      {"plan --training-jobs x.yaml --model-loads l.csv", "--model-loads needs GPU telemetry"},
      {"analyze --telemetry x.csv --since 1d", "requires --prometheus"},
      {"plan --prometheus http://127.0.0.1:1 --gpu h100-80gb --since 1767225600 --until 1767229200 --step 2h",
       "longer than the range"},
      {"plan --prometheus http://127.0.0.1:1 --gpu h100-80gb --bearer-token-file " + (dir / "token").string(),
       "not a bearer token"},
  };
  for (const Case& c : cases) {
    const CliRun r = Gpufit(c.args, dir);
    EXPECT_EQ(r.exit_code, 2) << c.args;
    EXPECT_THAT(r.err, HasSubstr(c.expected)) << c.args;
  }
}

}  // namespace
