#include "gpufit/plan/inference_plan.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>

namespace gpufit {
namespace {

int MinReplicas(const std::vector<ScheduleRun>& runs) {
  int m = runs.empty() ? 0 : runs.front().replicas;
  for (const ScheduleRun& r : runs) m = std::min(m, r.replicas);
  return m;
}

// "M H * * *" of a Unix time (UTC), rounded down (or up) to the minute.
std::string DailyCron(double unix_s, bool round_up) {
  auto minute = static_cast<std::int64_t>(round_up ? std::ceil(unix_s / 60) : std::floor(unix_s / 60));
  const std::int64_t of_day = ((minute % 1440) + 1440) % 1440;
  return fmt::format("{} {} * * *", of_day % 60, of_day / 60);
}

// The most replicas the autoscalers may ask for: static peak's count, or more where gpufit's
// schedule goes above it (static peak may spend the whole miss allowance at the peak).
int MaxReplicas(const InferenceStudy& s, const std::vector<ScheduleRun>& runs) {
  int m = s.Policy("static peak").schedule.replicas.front();
  for (const ScheduleRun& r : runs) m = std::max(m, r.replicas);
  return std::max(m, 1);
}

const PolicyOutcome* TunedHpa(const InferenceStudy& s) {
  for (const PolicyOutcome& p : s.policies) {
    if (p.policy.rfind("hpa-like tuned", 0) == 0) return &p;
  }
  return nullptr;
}

// The tuned HPA's requests per second per replica, rounded up in the unit both manifests
// carry: milli when at least 0.1, micro when at least 0.0001, else nano (Kubernetes
// quantities take the suffixes m, u and n), so at least three significant digits survive.
struct RateTarget {
  double per_s = 0;
  std::string quantity;  // e.g. "982m"
};
RateTarget TargetRps(const InferenceStudy& s) {
  const PolicyOutcome* p = TunedHpa(s);
  const double x = p ? p->target_rps_per_replica : 0;
  const auto [scale, suffix] = x >= 0.1 ? std::pair{1e3, "m"} : x >= 1e-4 ? std::pair{1e6, "u"} : std::pair{1e9, "n"};
  const double units = std::ceil(x * scale - 1e-9);
  return {.per_s = units / scale, .quantity = fmt::format("{}{}", static_cast<std::int64_t>(units), suffix)};
}

// Cron triggers repeat daily: they describe a trace of at most a day.
bool CronFits(const InferenceStudy& s) { return s.service.demand.trace.Duration() <= 86400; }

}  // namespace

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

std::vector<std::pair<std::string, std::string>> InferenceManifests(const InferenceStudy& study) {
  const InferenceServiceSpec& spec = study.service.spec;
  const std::vector<ScheduleRun> runs = ScheduleRuns(study);
  const int lowest = MinReplicas(runs);
  const int highest = MaxReplicas(study, runs);
  const RateTarget target = TargetRps(study);

  YAML::Emitter hpa;
  hpa << YAML::BeginMap << YAML::Key << "apiVersion" << YAML::Value << "autoscaling/v2" << YAML::Key << "kind"
      << YAML::Value << "HorizontalPodAutoscaler";
  hpa << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value
      << YAML::DoubleQuoted << spec.deployment << YAML::Key << "namespace" << YAML::Value << YAML::DoubleQuoted
      << spec.kube_namespace << YAML::EndMap;
  hpa << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  hpa << YAML::Key << "scaleTargetRef" << YAML::Value << YAML::BeginMap << YAML::Key << "apiVersion" << YAML::Value
      << "apps/v1" << YAML::Key << "kind" << YAML::Value << "Deployment" << YAML::Key << "name" << YAML::Value
      << YAML::DoubleQuoted << spec.deployment << YAML::EndMap;
  // The HPA as replayed in the tuned hpa-like row: its minimum and the most it reached.
  const PolicyOutcome* tuned = TunedHpa(study);
  const int hpa_min = spec.hpa.min_replicas;
  const int hpa_max = std::max({hpa_min, highest, tuned ? tuned->replay.max_replicas : 0});
  hpa << YAML::Key << "minReplicas" << YAML::Value << hpa_min;
  hpa << YAML::Key << "maxReplicas" << YAML::Value << hpa_max;
  hpa << YAML::Key << "metrics" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key << "type" << YAML::Value
      << "Pods" << YAML::Key << "pods" << YAML::Value << YAML::BeginMap << YAML::Key << "metric" << YAML::Value
      << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "requests_per_second" << YAML::EndMap << YAML::Key
      << "target" << YAML::Value << YAML::BeginMap << YAML::Key << "type" << YAML::Value << "AverageValue" << YAML::Key
      << "averageValue" << YAML::Value << target.quantity << YAML::EndMap << YAML::EndMap << YAML::EndMap
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

  YAML::Emitter keda;
  keda << YAML::BeginMap << YAML::Key << "apiVersion" << YAML::Value << "keda.sh/v1alpha1" << YAML::Key << "kind"
       << YAML::Value << "ScaledObject";
  keda << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value
       << YAML::DoubleQuoted << spec.deployment << YAML::Key << "namespace" << YAML::Value << YAML::DoubleQuoted
       << spec.kube_namespace << YAML::EndMap;
  keda << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  keda << YAML::Key << "scaleTargetRef" << YAML::Value << YAML::BeginMap << YAML::Key << "name" << YAML::Value
       << YAML::DoubleQuoted << spec.deployment << YAML::EndMap;
  keda << YAML::Key << "minReplicaCount" << YAML::Value << lowest;
  keda << YAML::Key << "maxReplicaCount" << YAML::Value << std::max({1, lowest, highest});
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
  keda << YAML::BeginMap << YAML::Key << "type" << YAML::Value << "prometheus" << YAML::Key << "metadata" << YAML::Value
       << YAML::BeginMap << YAML::Key << "serverAddress" << YAML::Value << "http://prometheus.monitoring.svc:9090"
       << YAML::Key << "query" << YAML::Value
       << fmt::format("sum(rate(http_requests_total{{namespace=\"{}\",deployment=\"{}\"}}[1m]))", spec.kube_namespace,
                      spec.deployment)
       << YAML::Key << "threshold" << YAML::Value << YAML::DoubleQuoted << fmt::format("{}", target.per_s)
       << YAML::EndMap << YAML::EndMap;
  keda << YAML::EndSeq << YAML::EndMap << YAML::EndMap;

  return {{spec.name + "-hpa.yaml", std::string(hpa.c_str()) + "\n"},
          {spec.name + "-keda-scaledobject.yaml", std::string(keda.c_str()) + "\n"}};
}

std::string InferencePlanToJson(const std::vector<InferenceStudy>& studies) {
  nlohmann::json services = nlohmann::json::array();
  for (const InferenceStudy& s : studies) {
    const PreparedService& p = s.service;
    const double clairvoyant = s.Policy("clairvoyant").replay.gpu_hours;
    const double peak = s.Policy("static peak").replay.gpu_hours;
    nlohmann::json rows = nlohmann::json::array();
    const auto row = [&](const PolicyOutcome& o) {
      const ReplayResult& r = o.replay;
      nlohmann::json j = {
          {"policy", o.policy},
          {"gpu_hours", r.gpu_hours},
          {"cost_usd", r.gpu_hours * p.gpu.on_demand_per_gpu_hour.value},
          {"vs_clairvoyant", clairvoyant > 0 ? nlohmann::json(r.gpu_hours / clairvoyant) : nlohmann::json()},
          {"vs_static_peak", peak > 0 ? r.gpu_hours / peak : 0},
          {"slo_attainment", r.slo_attainment},
          {"max_replicas", r.max_replicas}};
      if (o.policy != "clairvoyant") {
        j["p50_latency_s"] = r.p50_latency_s;
        j["p95_latency_s"] = r.p95_latency_s;
        j["p99_latency_s"] = r.p99_latency_s;
        j["p50_ttft_s"] = r.p50_ttft_s;
        j["p95_ttft_s"] = r.p95_ttft_s;
        j["p99_ttft_s"] = r.p99_ttft_s;
        j["mean_wait_s"] = r.mean_wait_s;
        j["cold_starts"] = r.cold_starts;
        j["unserved"] = r.unserved;
      }
      return j;
    };
    for (const PolicyOutcome& o : s.policies) rows.push_back(row(o));
    if (s.gpufit_holdout.replay.requests > 0) rows.push_back(row(s.gpufit_holdout));
    nlohmann::json schedule = nlohmann::json::array();
    const std::vector<ScheduleRun> runs = ScheduleRuns(s);
    for (const ScheduleRun& r : runs)
      schedule.push_back({{"from_s", r.from_s}, {"to_s", r.to_s}, {"replicas", r.replicas}});
    nlohmann::json manifests = nlohmann::json::object();
    for (const auto& [file, yaml] : InferenceManifests(s)) manifests[file] = yaml;
    nlohmann::json service = {
        {"name", p.spec.name},
        {"namespace", p.spec.kube_namespace},
        {"deployment", p.spec.deployment},
        {"gpu", p.gpu.id},
        {"requests", p.demand.trace.requests.size()},
        {"duration_s", p.demand.trace.Duration()},
        {"window_s", p.spec.window_s},
        {"window_mean_to_peak", p.window_mean_to_peak},
        {"service_model", {{"basis", p.service_basis}, {"concurrency", p.concurrency}}},
        {"cold_start", {{"seconds", p.cold_start_s}, {"basis", p.cold_start_basis}}},
        {"slo",
         {{"metric", SloMetricName(p.spec.slo.metric)}, {"seconds", p.spec.slo.seconds}, {"target", p.spec.slo.target}}},
        {"recommendation",
         {{"schedule", schedule},
          {"min_replicas", MinReplicas(runs)},
          {"max_replicas", MaxReplicas(s, runs)},
          {"scale_to_zero", MinReplicas(runs) == 0},
          {"keep_alive_s", p.cold_start_s},
          {"keda_cron_triggers", CronFits(s)},
          {"constant_as_static_peak", s.Policy("gpufit").fell_back_to_static},
          {"hpa_target_requests_per_second_per_replica", TargetRps(s).per_s}}},
        {"policies", rows},
        {"manifests", manifests}};
    if (p.llm) {
      service["service_model"]["prefill_tokens_per_s"] = p.llm->prefill_tokens_per_s;
      service["service_model"]["tpot_s"] = p.llm->tpot_s;
    }
    services.push_back(service);
  }
  return nlohmann::json{{"services", services}}.dump(2) + "\n";
}

std::string InferencePlanToMarkdown(const std::vector<InferenceStudy>& studies) {
  std::string md = "# Inference replicas\n";
  for (const InferenceStudy& s : studies) {
    const PreparedService& p = s.service;
    const double clairvoyant = s.Policy("clairvoyant").replay.gpu_hours;
    const double peak = s.Policy("static peak").replay.gpu_hours;
    const std::vector<ScheduleRun> runs = ScheduleRuns(s);
    md += fmt::format("\n## {} ({}/{})\n\n", p.spec.name, p.spec.kube_namespace, p.spec.deployment);
    md +=
        fmt::format("- {} requests over {:.2f} h; per-{:g}-s window mean/peak {:.3f}\n", p.demand.trace.requests.size(),
                    p.demand.trace.Duration() / 3600, p.spec.window_s, p.window_mean_to_peak);
    md += fmt::format("- service: {}; concurrency per replica {}\n", p.service_basis, p.concurrency);
    if (p.llm) {
      md +=
          fmt::format("- prefill {:.0f} tokens/s, TPOT {:.1f} ms\n", p.llm->prefill_tokens_per_s, 1000 * p.llm->tpot_s);
    }
    md += fmt::format("- cold start {:.1f} s: {}\n", p.cold_start_s, p.cold_start_basis);
    md += fmt::format("- SLO: {} <= {} s for {:.1f}% of requests; GPU {} at {:.4f} USD/GPU-hour\n",
                      SloMetricName(p.spec.slo.metric), p.spec.slo.seconds, 100 * p.spec.slo.target, p.gpu.id,
                      p.gpu.on_demand_per_gpu_hour.value);
    md += fmt::format(
        "- recommendation: {} to {} replicas, a schedule of {} {}; {}; HPA target {:.4g} requests/s per "
        "replica{}\n\n",
        MinReplicas(runs), MaxReplicas(s, runs), runs.size(), runs.size() == 1 ? "step" : "steps",
        MinReplicas(runs) == 0 ? "scales to zero when idle" : "keeps a replica warm", TargetRps(s).per_s,
        CronFits(s) ? "" : "; the trace spans more than a day, so the KEDA object has no cron triggers");
    md +=
        "| policy | GPU-hours | cost USD | x clairvoyant | % of static peak | SLO met | p50 latency s | p99 latency s "
        "| p99 TTFT s | cold starts | max replicas |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
    const auto row = [&](const PolicyOutcome& o) {
      const ReplayResult& r = o.replay;
      const bool bound = o.policy == "clairvoyant";
      md += fmt::format("| {} | {:.2f} | {:.2f} | {} | {:.1f}% | {:.2f}% | {} | {} | {} | {} | {} |\n", o.policy,
                        r.gpu_hours, r.gpu_hours * p.gpu.on_demand_per_gpu_hour.value,
                        clairvoyant > 0 ? fmt::format("{:.3f}", r.gpu_hours / clairvoyant) : "-",
                        peak > 0 ? 100 * r.gpu_hours / peak : 0, 100 * r.slo_attainment,
                        bound ? "-" : fmt::format("{:.2f}", r.p50_latency_s),
                        bound ? "-" : fmt::format("{:.2f}", r.p99_latency_s),
                        bound || !p.llm ? "-" : fmt::format("{:.2f}", r.p99_ttft_s),
                        bound ? "-" : std::to_string(r.cold_starts), r.max_replicas);
    };
    for (const PolicyOutcome& o : s.policies) row(o);
    if (s.gpufit_holdout.replay.requests > 0) row(s.gpufit_holdout);
    if (s.Policy("gpufit").fell_back_to_static) {
      md += "\ngpufit's windowed schedule cost more than static peak's constant count; it recommends that count.\n";
    }
  }
  return md;
}

}  // namespace gpufit
