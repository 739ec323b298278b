#include "gpufit/plan/inference_plan.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "gpufit/core/rng.h"
#include "gpufit/core/test_support.h"

namespace gpufit {
namespace {

// A generic trace: 10 minutes at 1 request/s, 10 at 6/s, 10 at 1/s, starting at
// 1700000000 = 2023-11-14 22:13:20 UTC. Service 2 s, 2 requests per replica.
InferenceStudy SmallStudy(const testing::TempDir& dir) {
  Rng rng(3);
  std::ostringstream csv;
  csv << "timestamp_s\n";
  double t = 1700000000;
  for (const double rate : {1.0, 6.0, 1.0}) {
    const double end = t + 600;
    for (t += rng.Exponential(rate); t < end; t += rng.Exponential(rate)) csv << std::fixed << t << "\n";
    t = end;
  }
  dir.Write("trace.csv", csv.str());
  const auto specs = ReadInferenceServices(dir.Write("services.yaml", R"(services:
  - name: api
    namespace: prod
    deployment: api-server
    requests: {format: generic, path: trace.csv}
    service_time: {seconds: 2}
    concurrency: 2
    cold_start: {seconds: 20}
    slo: {metric: wait, seconds: 0.5}
    window_s: 60
)"));
  EXPECT_TRUE(specs) << specs.error().message;
  auto service = PrepareService(specs->front());
  EXPECT_TRUE(service) << service.error().message;
  return RunInferenceStudy(*std::move(service));
}

long metric_target_milli(const YAML::Node& hpa) {
  const std::string v = hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"].as<std::string>();
  return std::stol(v.substr(0, v.size() - 1));  // "982m"
}

TEST(InferencePlanTest, ManifestsAreValidKubernetesObjectsThatApplyTheSchedule) {
  testing::TempDir dir;
  const InferenceStudy s = SmallStudy(dir);
  const std::vector<ScheduleRun> runs = ScheduleRuns(s);
  ASSERT_FALSE(runs.empty());
  int lowest = runs.front().replicas, highest = 0;
  for (const ScheduleRun& r : runs) {
    lowest = std::min(lowest, r.replicas);
    highest = std::max(highest, r.replicas);
  }
  EXPECT_GT(highest, lowest);  // the busy ten minutes need more

  const AutoscalerOptions keda_options{.kind = AutoscalerKind::kKeda,
                                       .keda_prometheus = "http://prom.example:9090",
                                       .keda_query = "sum(rate(reqs{ns=\"{namespace}\",app=\"{deployment}\"}[2m]))"};
  const auto hpa_file = AutoscalerManifest(s, AutoscalerOptions{});
  const auto keda_file = AutoscalerManifest(s, keda_options);
  EXPECT_EQ(hpa_file.first, "api-hpa.yaml");
  EXPECT_EQ(keda_file.first, "api-keda-scaledobject.yaml");
  const YAML::Node hpa = YAML::Load(hpa_file.second);
  EXPECT_EQ(hpa["apiVersion"].as<std::string>(), "autoscaling/v2");
  EXPECT_EQ(hpa["kind"].as<std::string>(), "HorizontalPodAutoscaler");
  EXPECT_EQ(hpa["metadata"]["name"].as<std::string>(), "api-server");
  EXPECT_EQ(hpa["metadata"]["namespace"].as<std::string>(), "prod");
  EXPECT_EQ(hpa["spec"]["scaleTargetRef"]["kind"].as<std::string>(), "Deployment");
  EXPECT_EQ(hpa["spec"]["scaleTargetRef"]["name"].as<std::string>(), "api-server");
  // The HPA as the tuned hpa-like row replayed it: minimum 1, room for the most it used.
  const PolicyOutcome* tuned = nullptr;
  for (const PolicyOutcome& p : s.policies) {
    if (p.policy.rfind("hpa-like tuned", 0) == 0) tuned = &p;
  }
  ASSERT_NE(tuned, nullptr);
  EXPECT_EQ(hpa["spec"]["minReplicas"].as<int>(), 1);
  EXPECT_GE(hpa["spec"]["maxReplicas"].as<int>(), std::max(highest, tuned->replay.max_replicas));
  EXPECT_EQ(metric_target_milli(hpa), static_cast<long>(std::ceil(tuned->target_rps_per_replica * 1000)));
  const YAML::Node metric = hpa["spec"]["metrics"][0];
  EXPECT_EQ(metric["type"].as<std::string>(), "Pods");
  EXPECT_EQ(metric["pods"]["metric"]["name"].as<std::string>(), "requests_per_second");
  EXPECT_EQ(metric["pods"]["target"]["type"].as<std::string>(), "AverageValue");
  EXPECT_EQ(hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"].as<int>(), 300);

  const YAML::Node keda = YAML::Load(keda_file.second);
  EXPECT_EQ(keda["apiVersion"].as<std::string>(), "keda.sh/v1alpha1");
  EXPECT_EQ(keda["kind"].as<std::string>(), "ScaledObject");
  EXPECT_EQ(keda["metadata"]["name"].as<std::string>(), "api-server");
  EXPECT_EQ(keda["spec"]["scaleTargetRef"]["name"].as<std::string>(), "api-server");
  EXPECT_EQ(keda["spec"]["minReplicaCount"].as<int>(), lowest);
  EXPECT_GE(keda["spec"]["maxReplicaCount"].as<int>(), highest);
  // One cron trigger per run above the minimum, with its count; then the prometheus floor.
  std::vector<const ScheduleRun*> above;
  for (const ScheduleRun& r : runs) {
    if (r.replicas > lowest) above.push_back(&r);
  }
  const YAML::Node triggers = keda["spec"]["triggers"];
  ASSERT_EQ(triggers.size(), above.size() + 1);
  for (std::size_t i = 0; i < above.size(); ++i) {
    EXPECT_EQ(triggers[i]["type"].as<std::string>(), "cron");
    EXPECT_EQ(triggers[i]["metadata"]["timezone"].as<std::string>(), "Etc/UTC");
    EXPECT_EQ(triggers[i]["metadata"]["desiredReplicas"].as<std::string>(), std::to_string(above[i]->replicas));
  }
  // By hand: the trace starts at 22:13:20 UTC; the first run above the minimum starts at
  // 22:13:20 + from_s, rounded down to the minute.
  const auto minute = static_cast<int>((1700000000 + static_cast<long>(above[0]->from_s)) / 60 % 1440);
  EXPECT_EQ(triggers[0]["metadata"]["start"].as<std::string>(),
            std::to_string(minute % 60) + " " + std::to_string(minute / 60) + " * * *");
  // The reactive floor queries the server and PromQL of the options, for this Deployment.
  const YAML::Node prometheus = triggers[above.size()];
  EXPECT_EQ(prometheus["type"].as<std::string>(), "prometheus");
  EXPECT_EQ(prometheus["metadata"]["serverAddress"].as<std::string>(), "http://prom.example:9090");
  EXPECT_EQ(prometheus["metadata"]["query"].as<std::string>(), "sum(rate(reqs{ns=\"prod\",app=\"api-server\"}[2m]))");
  // KEDA's trigger metadata is a map of strings: numbers must be quoted.
  EXPECT_NE(keda_file.second.find("desiredReplicas: \""), std::string::npos);
  EXPECT_NE(keda_file.second.find("threshold: \""), std::string::npos);

  const nlohmann::json j = nlohmann::json::parse(InferencePlanToJson({s}, AutoscalerOptions{}));
  const nlohmann::json& service = j["services"][0];
  EXPECT_EQ(service["policies"].size(), 6u);  // five policies and the fresh draw
  EXPECT_EQ(service["recommendation"]["min_replicas"], lowest);
  EXPECT_GE(service["recommendation"]["max_replicas"].get<int>(), highest);
  // One autoscaler per service: the HPA by default, only the ScaledObject with keda.
  EXPECT_EQ(service["manifests"].size(), 1u);
  EXPECT_TRUE(service["manifests"].contains("api-hpa.yaml"));
  const nlohmann::json k = nlohmann::json::parse(InferencePlanToJson({s}, keda_options));
  EXPECT_EQ(k["services"][0]["manifests"].size(), 1u);
  EXPECT_TRUE(k["services"][0]["manifests"].contains("api-keda-scaledobject.yaml"));
  const std::string md = InferencePlanToMarkdown({s});
  EXPECT_NE(md.find("| gpufit |"), std::string::npos);
  EXPECT_NE(md.find("| clairvoyant |"), std::string::npos);
}

// A slow service (100 s a request, one per replica) scales on a target of about 0.01
// requests/s per replica: the manifests carry it in micro-units, not rounded up to 1m.
TEST(InferencePlanTest, SmallTargetsKeepTheirDigits) {
  testing::TempDir dir;
  Rng rng(5);
  std::ostringstream csv;
  csv << "timestamp_s\n";
  for (double t = rng.Exponential(0.05); t < 3600; t += rng.Exponential(0.05)) csv << t << "\n";
  dir.Write("slow.csv", csv.str());
  const auto specs = ReadInferenceServices(dir.Write("s.yaml", R"(services:
  - name: slow
    requests: {format: generic, path: slow.csv}
    service_time: {seconds: 100}
    cold_start: {seconds: 20}
    slo: {metric: wait, seconds: 30}
    window_s: 600
)"));
  ASSERT_TRUE(specs) << specs.error().message;
  auto service = PrepareService(specs->front());
  ASSERT_TRUE(service) << service.error().message;
  const InferenceStudy s = RunInferenceStudy(*std::move(service));
  const PolicyOutcome* tuned = nullptr;
  for (const PolicyOutcome& p : s.policies) {
    if (p.policy.rfind("hpa-like tuned", 0) == 0) tuned = &p;
  }
  ASSERT_NE(tuned, nullptr);
  ASSERT_LT(tuned->target_rps_per_replica, 0.1);
  const auto micro = static_cast<long>(std::ceil(tuned->target_rps_per_replica * 1e6));
  const YAML::Node hpa = YAML::Load(AutoscalerManifest(s, {}).second);
  EXPECT_EQ(hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"].as<std::string>(), std::to_string(micro) + "u");
  const YAML::Node keda = YAML::Load(
      AutoscalerManifest(
          s, {.kind = AutoscalerKind::kKeda, .keda_prometheus = "https://p:9090", .keda_query = kDefaultKedaQuery})
          .second);
  const YAML::Node triggers = keda["spec"]["triggers"];
  EXPECT_DOUBLE_EQ(std::stod(triggers[triggers.size() - 1]["metadata"]["threshold"].as<std::string>()),
                   static_cast<double>(micro) / 1e6);
}

TEST(AutoscalerOptions, KedaNeedsAServerAndHpaTakesNone) {
  const struct {
    const char* name;
    AutoscalerKind kind;
    std::string server, query;
    const char* error;  // nullptr: accepted
  } cases[] = {
      {"hpa by default", AutoscalerKind::kHpa, "", kDefaultKedaQuery, nullptr},
      {"keda with a server", AutoscalerKind::kKeda, "https://prom:9090", kDefaultKedaQuery, nullptr},
      {"keda without a server", AutoscalerKind::kKeda, "", kDefaultKedaQuery,
       "--autoscaler keda needs --keda-prometheus"},
      {"keda with a bare host", AutoscalerKind::kKeda, "prom:9090", kDefaultKedaQuery, "got 'prom:9090'"},
      {"hpa with a keda server", AutoscalerKind::kHpa, "http://prom:9090", kDefaultKedaQuery,
       "applies to --autoscaler keda only"},
      {"empty query", AutoscalerKind::kKeda, "http://prom:9090", "", "--keda-query must not be empty"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const Result<void> r = CheckAutoscalerOptions({.kind = c.kind, .keda_prometheus = c.server, .keda_query = c.query});
    if (c.error == nullptr) {
      EXPECT_TRUE(r.has_value());
    } else {
      ASSERT_FALSE(r.has_value());
      EXPECT_EQ(r.error().code, Code::kInvalidArgument);
      EXPECT_NE(r.error().message.find(c.error), std::string::npos) << r.error().message;
    }
  }
}

TEST(InferencePlanTest, AKedaQueryOnGpuUtilIsWarnedAgainst) {
  // DCGM_FI_DEV_GPU_UTIL is the share of time any kernel runs: one request in flight reads
  // ~100%, so it cannot tell 1 from 10 concurrent requests.
  const AutoscalerOptions on_util{.kind = AutoscalerKind::kKeda,
                                  .keda_prometheus = "http://prom:9090",
                                  .keda_query = "avg(DCGM_FI_DEV_GPU_UTIL{namespace=\"{namespace}\"})"};
  const nlohmann::json j = nlohmann::json::parse(InferencePlanToJson({}, on_util));
  ASSERT_TRUE(j.contains("warnings"));
  ASSERT_EQ(j["warnings"].size(), 1u);
  const std::string w = j["warnings"][0];
  EXPECT_NE(w.find("--keda-query reads DCGM_FI_DEV_GPU_UTIL"), std::string::npos) << w;
  EXPECT_NE(w.find("share of time any kernel runs"), std::string::npos) << w;
  EXPECT_NE(w.find("~100% with one request in flight"), std::string::npos) << w;
  EXPECT_NE(w.find("cannot tell 1 from 10 concurrent requests"), std::string::npos) << w;
  EXPECT_NE(w.find("DCGM_FI_PROF_SM_ACTIVE"), std::string::npos) << w;
  // The default query (the request rate) and the HPA (requests_per_second) draw none.
  const AutoscalerOptions on_rate{.kind = AutoscalerKind::kKeda, .keda_prometheus = "http://prom:9090"};
  EXPECT_FALSE(nlohmann::json::parse(InferencePlanToJson({}, on_rate)).contains("warnings"));
  EXPECT_FALSE(nlohmann::json::parse(InferencePlanToJson({}, AutoscalerOptions{})).contains("warnings"));
}

TEST(InferencePlanTest, TheGpuUtilWarningIsInTheMarkdownToo) {
  const AutoscalerOptions on_util{
      .kind = AutoscalerKind::kKeda, .keda_prometheus = "http://prom:9090", .keda_query = "max(DCGM_FI_DEV_GPU_UTIL)"};
  EXPECT_EQ(AutoscalerWarnings(on_util).size(), 1u);
  const std::string md = InferencePlanToMarkdown({}, on_util);
  EXPECT_NE(md.find("- warning: --keda-query reads DCGM_FI_DEV_GPU_UTIL"), std::string::npos) << md;
  EXPECT_TRUE(AutoscalerWarnings({}).empty());
}

}  // namespace
}  // namespace gpufit
