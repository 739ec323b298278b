#include "gpufit/plan/inference_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "gpufit/core/text.h"

namespace gpufit {

std::string InferencePlanToJson(const std::vector<InferenceStudy>& studies, const AutoscalerOptions& autoscaler) {
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
    // Demand per schedule window (requests / window_s): what the schedule is drawn against.
    nlohmann::json rate = nlohmann::json::array();
    if (p.spec.window_s > 0) {
      std::vector<double> counts;
      for (const Request& q : p.demand.trace.requests) {
        const auto w = static_cast<std::size_t>(q.arrival_s / p.spec.window_s);
        if (w >= counts.size()) counts.resize(w + 1, 0);
        counts[w] += 1;
      }
      // The last window ends at the trace's end, not a whole window later.
      for (std::size_t w = 0; w < counts.size(); ++w) {
        const double span = std::min(p.spec.window_s, p.demand.trace.Duration() - static_cast<double>(w) * p.spec.window_s);
        rate.push_back(counts[w] / (span > 0 ? span : p.spec.window_s));
      }
    }
    nlohmann::json manifests = nlohmann::json::object();
    const auto [file, yaml] = AutoscalerManifest(s, autoscaler);
    manifests[file] = yaml;
    nlohmann::json service = {{"name", p.spec.name},
                              {"namespace", p.spec.kube_namespace},
                              {"deployment", p.spec.deployment},
                              {"gpu", p.gpu.id},
                              {"requests", p.demand.trace.requests.size()},
                              {"duration_s", p.demand.trace.Duration()},
                              {"window_s", p.spec.window_s},
                              {"window_mean_to_peak", p.window_mean_to_peak},
                              {"demand_requests_per_s", rate},
                              {"service_model", {{"basis", p.service_basis}, {"concurrency", p.concurrency}}},
                              {"cold_start", {{"seconds", p.cold_start_s}, {"basis", p.cold_start_basis}}},
                              {"slo",
                               {{"metric", SloMetricName(p.spec.slo.metric)},
                                {"seconds", p.spec.slo.seconds},
                                {"target", p.spec.slo.target}}},
                              {"recommendation",
                               {{"schedule", schedule},
                                {"min_replicas", MinReplicas(runs)},
                                {"max_replicas", MaxReplicas(s, runs)},
                                {"scale_to_zero", MinReplicas(runs) == 0},
                                {"keep_alive_s", ReplicaHoldSeconds(s.Input())},  // the hold: inference/policies.h
                                {"keda_cron_triggers", CronFits(s)},
                                {"constant_as_static_peak", s.Policy("gpufit").fell_back_to_static},
                                {"hpa_target_requests_per_second_per_replica", TargetRps(s).per_s}}},
                              {"policies", rows},
                              {"manifests", manifests}};
    if (!p.sources.empty()) {
      nlohmann::json sources = nlohmann::json::object();
      for (const auto& [figure, text] : p.sources) sources[figure] = text;
      service["sources"] = sources;
    }
    if (p.current_replicas) service["current_replicas"] = *p.current_replicas;
    if (p.llm) {
      service["service_model"]["prefill_tokens_per_s"] = p.llm->prefill_tokens_per_s;
      service["service_model"]["tpot_s"] = p.llm->tpot_s;
    }
    services.push_back(service);
  }
  nlohmann::json out{{"services", services}};
  if (const std::vector<std::string> warnings = AutoscalerWarnings(autoscaler); !warnings.empty())
    out["warnings"] = warnings;
  return out.dump(2) + "\n";
}

std::string InferencePlanToMarkdown(const std::vector<InferenceStudy>& studies, const AutoscalerOptions& autoscaler) {
  std::string md = "# Inference replicas\n";
  for (const std::string& w : AutoscalerWarnings(autoscaler)) md += "\n- warning: " + w + "\n";
  for (const InferenceStudy& s : studies) {
    const PreparedService& p = s.service;
    const double clairvoyant = s.Policy("clairvoyant").replay.gpu_hours;
    const double peak = s.Policy("static peak").replay.gpu_hours;
    const std::vector<ScheduleRun> runs = ScheduleRuns(s);
    md += fmt::format("\n## {} ({}/{})\n\n", MarkdownText(p.spec.name), MarkdownText(p.spec.kube_namespace),
                      MarkdownText(p.spec.deployment));
    md +=
        fmt::format("- {} requests over {:.2f} h; per-{:g}-s window mean/peak {:.3f}\n", p.demand.trace.requests.size(),
                    p.demand.trace.Duration() / 3600, p.spec.window_s, p.window_mean_to_peak);
    md += fmt::format("- service: {}; concurrency per replica {}\n", p.service_basis, p.concurrency);
    if (p.llm) {
      md +=
          fmt::format("- prefill {:.0f} tokens/s, TPOT {:.1f} ms\n", p.llm->prefill_tokens_per_s, 1000 * p.llm->tpot_s);
    }
    md += fmt::format("- cold start {:.1f} s: {}\n", p.cold_start_s, p.cold_start_basis);
    if (p.current_replicas)
      md += fmt::format("- replicas today: {} ({:.2f} GPU-hours over the trace)\n", *p.current_replicas,
                        *p.current_replicas * p.demand.trace.Duration() / 3600);
    for (const auto& [figure, text] : p.sources)  // the cold start's is on its own line above
      if (figure != "cold start") md += fmt::format("- from serving metrics, {}: {}\n", figure, text);
    md += fmt::format("- SLO: {} <= {} s for {:.1f}% of requests; GPU {} at {:.4f} USD/GPU-hour\n",
                      SloMetricName(p.spec.slo.metric), p.spec.slo.seconds, 100 * p.spec.slo.target, p.gpu.id,
                      p.gpu.on_demand_per_gpu_hour.value);
    md += fmt::format(
        "- recommendation: {} to {} replicas, a schedule of {} {}; {}; HPA target {:.4g} requests/s per "
        "replica{}\n\n",
        MinReplicas(runs), MaxReplicas(s, runs), runs.size(), runs.size() == 1 ? "step" : "steps",
        MinReplicas(runs) == 0 ? "scales to zero when idle" : "keeps a replica warm", TargetRps(s).per_s,
        CronFits(s)
            ? ""
            : "; the trace spans more than a day, so a KEDA ScaledObject (--autoscaler keda) has no cron triggers");
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
