#include "gpufit/plan/autoscalers.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "gpufit/model/telemetry.h"

namespace gpufit {
namespace {

// "M H * * *" of a Unix time (UTC), rounded down (or up) to the minute.
std::string DailyCron(double unix_s, bool round_up) {
  auto minute = static_cast<std::int64_t>(round_up ? std::ceil(unix_s / 60) : std::floor(unix_s / 60));
  const std::int64_t of_day = ((minute % 1440) + 1440) % 1440;
  return fmt::format("{} {} * * *", of_day % 60, of_day / 60);
}

const PolicyOutcome* TunedHpa(const InferenceStudy& s) {
  for (const PolicyOutcome& p : s.policies) {
    if (p.policy.rfind("hpa-like tuned", 0) == 0) return &p;
  }
  return nullptr;
}

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

void Metadata(YAML::Emitter& out, const InferenceServiceSpec& spec) {
  out << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value
      << YAML::DoubleQuoted << spec.deployment << YAML::Key << "namespace" << YAML::Value << YAML::DoubleQuoted
      << spec.kube_namespace << YAML::EndMap;
}

std::string Hpa(const InferenceStudy& study) {
  const InferenceServiceSpec& spec = study.service.spec;
  const std::vector<ScheduleRun> runs = ScheduleRuns(study);
  YAML::Emitter hpa;
  hpa << YAML::BeginMap << YAML::Key << "apiVersion" << YAML::Value << "autoscaling/v2" << YAML::Key << "kind"
      << YAML::Value << "HorizontalPodAutoscaler";
  Metadata(hpa, spec);
  hpa << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  hpa << YAML::Key << "scaleTargetRef" << YAML::Value << YAML::BeginMap << YAML::Key << "apiVersion" << YAML::Value
      << "apps/v1" << YAML::Key << "kind" << YAML::Value << spec.workload_kind << YAML::Key << "name" << YAML::Value
      << YAML::DoubleQuoted << spec.deployment << YAML::EndMap;
  // The HPA as replayed in the tuned hpa-like row: its minimum and the most it reached.
  const PolicyOutcome* tuned = TunedHpa(study);
  const int hpa_min = spec.hpa.min_replicas;
  const int hpa_max = std::max({hpa_min, MaxReplicas(study, runs), tuned ? tuned->replay.max_replicas : 0});
  hpa << YAML::Key << "minReplicas" << YAML::Value << hpa_min;
  hpa << YAML::Key << "maxReplicas" << YAML::Value << hpa_max;
  hpa << YAML::Key << "metrics" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "type" << YAML::Value
      << "Pods" << YAML::Key << "pods" << YAML::Value << YAML::BeginMap << YAML::Key << "metric" << YAML::Value
      << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "requests_per_second" << YAML::EndMap << YAML::Key
      << "target" << YAML::Value << YAML::BeginMap << YAML::Key << "type" << YAML::Value << "AverageValue" << YAML::Key
      << "averageValue" << YAML::Value << TargetRps(study).quantity << YAML::EndMap << YAML::EndMap << YAML::EndMap
      << YAML::EndSeq;
  hpa << YAML::Key << "behavior" << YAML::Value << YAML::BeginMap;
  hpa << YAML::Key << "scaleUp" << YAML::Value << YAML::BeginMap << YAML::Key << "stabilizationWindowSeconds"
      << YAML::Value << 0 << YAML::Key << "selectPolicy" << YAML::Value << "Max" << YAML::Key << "policies"
      << YAML::Value << YAML::BeginSeq;
  hpa << YAML::Flow << YAML::BeginMap << YAML::Key << "type" << YAML::Value << "Percent" << YAML::Key << "value"
      << YAML::Value << 100 << YAML::Key << "periodSeconds" << YAML::Value << 15 << YAML::EndMap;
  hpa << YAML::Flow << YAML::BeginMap << YAML::Key << "type" << YAML::Value << "Pods" << YAML::Key << "value"
      << YAML::Value << 4 << YAML::Key << "periodSeconds" << YAML::Value << 15 << YAML::EndMap;
  hpa << YAML::EndSeq << YAML::EndMap;
  hpa << YAML::Key << "scaleDown" << YAML::Value << YAML::BeginMap << YAML::Key << "stabilizationWindowSeconds"
      << YAML::Value << static_cast<int>(spec.hpa.stabilization_s) << YAML::EndMap;
  hpa << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  return std::string(hpa.c_str()) + "\n";
}

std::string Keda(const InferenceStudy& study, const AutoscalerOptions& options) {
  const InferenceServiceSpec& spec = study.service.spec;
  const std::vector<ScheduleRun> runs = ScheduleRuns(study);
  const int lowest = MinReplicas(runs);
  YAML::Emitter keda;
  keda << YAML::BeginMap << YAML::Key << "apiVersion" << YAML::Value << "keda.sh/v1alpha1" << YAML::Key << "kind"
       << YAML::Value << "ScaledObject";
  Metadata(keda, spec);
  keda << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  keda << YAML::Key << "scaleTargetRef" << YAML::Value << YAML::BeginMap;
  if (spec.workload_kind != "Deployment")  // KEDA's default target is a Deployment
    keda << YAML::Key << "apiVersion" << YAML::Value << "apps/v1" << YAML::Key << "kind" << YAML::Value
         << spec.workload_kind;
  keda << YAML::Key << "name" << YAML::Value << YAML::DoubleQuoted << spec.deployment << YAML::EndMap;
  keda << YAML::Key << "minReplicaCount" << YAML::Value << lowest;
  keda << YAML::Key << "maxReplicaCount" << YAML::Value << std::max(lowest, MaxReplicas(study, runs));
  keda << YAML::Key << "cooldownPeriod" << YAML::Value << static_cast<int>(spec.hpa.stabilization_s);
  keda << YAML::Key << "triggers" << YAML::Value << YAML::BeginSeq;
  const double origin = study.service.demand.trace.origin_s;
  for (const ScheduleRun& r : runs) {
    if (r.replicas <= lowest || !CronFits(study)) continue;
    keda << YAML::BeginMap << YAML::Key << "type" << YAML::Value << "cron" << YAML::Key << "metadata" << YAML::Value
         << YAML::BeginMap << YAML::Key << "timezone" << YAML::Value << "Etc/UTC" << YAML::Key << "start" << YAML::Value
         << DailyCron(origin + r.from_s, false) << YAML::Key << "end" << YAML::Value << DailyCron(origin + r.to_s, true)
         << YAML::Key << "desiredReplicas" << YAML::Value << YAML::DoubleQuoted << std::to_string(r.replicas)
         << YAML::EndMap << YAML::EndMap;
  }
  const std::string query =
      ReplaceAll(ReplaceAll(options.keda_query, "{namespace}", spec.kube_namespace), "{deployment}", spec.deployment);
  keda << YAML::BeginMap << YAML::Key << "type" << YAML::Value << "prometheus" << YAML::Key << "metadata" << YAML::Value
       << YAML::BeginMap << YAML::Key << "serverAddress" << YAML::Value << YAML::DoubleQuoted << options.keda_prometheus
       << YAML::Key << "query" << YAML::Value << YAML::DoubleQuoted << query << YAML::Key << "threshold" << YAML::Value
       << YAML::DoubleQuoted << fmt::format("{}", TargetRps(study).per_s) << YAML::EndMap << YAML::EndMap;
  keda << YAML::EndSeq << YAML::EndMap << YAML::EndMap;
  return std::string(keda.c_str()) + "\n";
}

}  // namespace

std::vector<std::string> AutoscalerWarnings(const AutoscalerOptions& options) {
  std::vector<std::string> out;
  if (options.kind == AutoscalerKind::kKeda && options.keda_query.find(kDcgmGpuUtil) != std::string::npos)
    out.push_back(fmt::format(
        "--keda-query reads {0}: it is the share of time any kernel runs on the GPU, so it reads ~100% with one "
        "request in flight and cannot tell 1 from 10 concurrent requests; it cannot drive an autoscaler. Scale on "
        "the request rate (the default query), the queue depth (e.g. vLLM's vllm:num_requests_waiting) or "
        "DCGM_FI_PROF_SM_ACTIVE",
        kDcgmGpuUtil));
  return out;
}

Result<void> CheckAutoscalerOptions(const AutoscalerOptions& o) {
  const bool url = o.keda_prometheus.rfind("http://", 0) == 0 || o.keda_prometheus.rfind("https://", 0) == 0;
  if (o.kind == AutoscalerKind::kKeda && !url)
    return InvalidArgument(
        "--autoscaler keda needs --keda-prometheus URL (http:// or https://, the Prometheus KEDA queries), got '{}'",
        o.keda_prometheus);
  if (o.kind == AutoscalerKind::kHpa && !o.keda_prometheus.empty())
    return InvalidArgument("--keda-prometheus applies to --autoscaler keda only (the autoscaler is hpa)");
  if (o.keda_query.empty()) return InvalidArgument("--keda-query must not be empty");
  return {};
}

std::vector<ScheduleRun> ScheduleRuns(const InferenceStudy& study) {
  const ReplicaSchedule& s = study.Policy("gpufit").schedule;
  const double end = study.service.demand.trace.Duration();
  std::vector<ScheduleRun> runs;
  for (std::size_t i = 0; i < s.replicas.size(); ++i) {
    const double from = static_cast<double>(i) * s.window_s;
    if (from > end) break;
    const double to = std::min(end, from + s.window_s);
    if (!runs.empty() && runs.back().replicas == s.replicas[i]) {
      runs.back().to_s = to;
    } else {
      runs.push_back({.from_s = from, .to_s = to, .replicas = s.replicas[i]});
    }
  }
  return runs;
}

int MinReplicas(const std::vector<ScheduleRun>& runs) {
  int m = runs.empty() ? 0 : runs.front().replicas;
  for (const ScheduleRun& r : runs) m = std::min(m, r.replicas);
  return m;
}

int MaxReplicas(const InferenceStudy& s, const std::vector<ScheduleRun>& runs) {
  int m = s.Policy("static peak").schedule.replicas.front();
  for (const ScheduleRun& r : runs) m = std::max(m, r.replicas);
  return std::max(m, 1);
}

RateTarget TargetRps(const InferenceStudy& s) {
  const PolicyOutcome* p = TunedHpa(s);
  const double x = p ? p->target_rps_per_replica : 0;
  const auto [scale, suffix] = x >= 0.1 ? std::pair{1e3, "m"} : x >= 1e-4 ? std::pair{1e6, "u"} : std::pair{1e9, "n"};
  const double units = std::ceil(x * scale - 1e-9);
  return {.per_s = units / scale, .quantity = fmt::format("{}{}", static_cast<std::int64_t>(units), suffix)};
}

bool CronFits(const InferenceStudy& s) { return s.service.demand.trace.Duration() <= 86400; }

std::pair<std::string, std::string> AutoscalerManifest(const InferenceStudy& study, const AutoscalerOptions& options) {
  const std::string& name = study.service.spec.name;
  if (options.kind == AutoscalerKind::kKeda) return {name + "-keda-scaledobject.yaml", Keda(study, options)};
  return {name + "-hpa.yaml", Hpa(study)};
}

}  // namespace gpufit
