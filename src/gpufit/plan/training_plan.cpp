#include "gpufit/plan/training_plan.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "gpufit/core/rfc3339.h"
#include "gpufit/core/text.h"

namespace gpufit {

Result<CapacityLabels> ParseCapacityLabels(const std::string& name) {
  if (name == "karpenter") return CapacityLabels::kKarpenter;
  if (name == "eks") return CapacityLabels::kEks;
  if (name == "gke") return CapacityLabels::kGke;
  if (name == "aks") return CapacityLabels::kAks;
  return InvalidArgument("capacity labels must be karpenter, eks, gke or aks, got '{}'", name);
}

SchedulingConstraints ConstraintsFor(CapacityType capacity, CapacityLabels labels) {
  const bool spot = capacity == CapacityType::kSpot;
  SchedulingConstraints c;
  switch (labels) {
    case CapacityLabels::kKarpenter:
      c.node_selector["karpenter.sh/capacity-type"] = spot ? "spot" : "on-demand";
      break;
    case CapacityLabels::kEks:
      c.node_selector["eks.amazonaws.com/capacityType"] = spot ? "SPOT" : "ON_DEMAND";
      break;
    case CapacityLabels::kGke:
      if (spot) {
        c.node_selector["cloud.google.com/gke-spot"] = "true";
        c.tolerations.push_back({"cloud.google.com/gke-spot", "Equal", "true", "NoSchedule"});
      } else {
        c.required_affinity.push_back({"cloud.google.com/gke-spot", "DoesNotExist", {}});
      }
      break;
    case CapacityLabels::kAks:
      if (spot) {
        c.node_selector["kubernetes.azure.com/scalesetpriority"] = "spot";
        c.tolerations.push_back({"kubernetes.azure.com/scalesetpriority", "Equal", "spot", "NoSchedule"});
      } else {
        c.required_affinity.push_back({"kubernetes.azure.com/scalesetpriority", "NotIn", {"spot"}});
      }
      break;
  }
  return c;
}

Result<TrainingPlan> BuildTrainingPlan(TrainingWorkload workload, const GpuCatalog& catalog, CapacityLabels labels,
                                       const std::string& source, const SpotDecisionOptions& options) {
  TrainingPlan plan{.source = source,
                    .labels = labels,
                    .workload = std::move(workload),
                    .jobs = {},
                    .on_demand_cost = Usd{},
                    .recommended_cost = Usd{}};
  for (std::size_t j = 0; j < plan.workload.jobs.size(); ++j) {
    const TrainingJob& job = plan.workload.jobs[j];
    GpuPrices prices;
    if (const auto it = plan.workload.prices.find(job.gpu_model); it != plan.workload.prices.end()) {
      prices = it->second;
    } else {
      const Result<GpuModel> m = catalog.Find(job.gpu_model);
      if (!m) {
        return NotFound("{}: job {}: no price for GPU model '{}': use a catalog id or add it under prices:", source,
                        job.name, job.gpu_model);
      }
      prices =
          GpuPrices{.on_demand_per_gpu_hour = m->on_demand_per_gpu_hour, .spot_per_gpu_hour = m->spot_per_gpu_hour};
    }
    TrainingRecommendation r{.job = j,
                             .decision = DecideSpot(job, plan.workload.interruptions, prices, options),
                             .prices = prices,
                             .interval = Seconds{0},
                             .annotations = {},
                             .env = {},
                             .scheduling = {}};
    const bool on_spot = r.decision.choice != SpotChoice::kOnDemand;
    r.interval = on_spot ? r.decision.spot.interval : r.decision.on_demand.interval;
    const std::string seconds = fmt::format("{:.0f}", std::max(1.0, std::round(r.interval.count())));
    if (job.checkpointing != Checkpointing::kNone) {
      r.annotations[kCheckpointIntervalAnnotation] = seconds;
      r.env[kCheckpointIntervalEnv] = seconds;
    }
    if (r.decision.latest_switch) {
      r.annotations[kSwitchAtAnnotation] = fmt::format("{:.0f}", (*r.decision.latest_switch - job.submit).count());
    }
    r.scheduling = ConstraintsFor(on_spot ? CapacityType::kSpot : CapacityType::kOnDemand, labels);
    plan.on_demand_cost.value += r.decision.on_demand.expected_cost.value;
    plan.recommended_cost.value += (on_spot ? r.decision.spot : r.decision.on_demand).expected_cost.value;
    plan.jobs.push_back(std::move(r));
  }
  return plan;
}

namespace {

const char* LabelsName(CapacityLabels l) {
  switch (l) {
    case CapacityLabels::kKarpenter:
      return "karpenter";
    case CapacityLabels::kEks:
      return "eks";
    case CapacityLabels::kGke:
      return "gke";
    case CapacityLabels::kAks:
      return "aks";
  }
  return "?";
}

nlohmann::json OutlookJson(const RunOutlook& o) {
  const auto finite_or_null = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  return {{"checkpoint_interval_s", o.interval.count()},
          {"young_interval_s", o.young_interval.count()},
          {"uses_notice", o.uses_notice},
          {"mtbf_h", finite_or_null(o.mtbf.count() / 3600)},
          {"expected_run_h", finite_or_null(o.expected_wall.count() / 3600)},
          {"expected_interruptions", finite_or_null(o.expected_interruptions)},
          {"checkpoint_gpu_hours", o.checkpoint_gpu_hours},
          {"expected_lost_gpu_hours", finite_or_null(o.expected_lost_gpu_hours)},
          {"expected_cost_usd", finite_or_null(o.expected_cost.value)}};
}

// Where job j's figures came from: the cluster (with the evidence per figure) or the file.
nlohmann::json OriginJson(const TrainingWorkload& w, std::size_t j) {
  if (j >= w.origins.size() || !w.origins[j]) return {{"found_in", "workload file"}};
  const JobOrigin& o = *w.origins[j];
  return {{"found_in", "cluster"},
          {"namespace", o.namespace_name},
          {"owner", o.owner},
          {"pods", o.pods},
          {"nodes", o.nodes},
          {"capacity", o.capacity},
          {"started", o.started_s ? nlohmann::json(FormatRfc3339(*o.started_s)) : nlohmann::json(nullptr)},
          {"runtime_so_far_h", o.runtime_so_far_h},
          {"sources", o.sources}};
}

}  // namespace

std::string TrainingPlanToJson(const TrainingPlan& plan) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const TrainingRecommendation& r : plan.jobs) {
    const TrainingJob& job = plan.workload.jobs[r.job];
    nlohmann::json tolerations = nlohmann::json::array();
    for (const Toleration& t : r.scheduling.tolerations) {
      tolerations.push_back({{"key", t.key}, {"operator", t.op}, {"value", t.value}, {"effect", t.effect}});
    }
    nlohmann::json requirements = nlohmann::json::array();
    for (const NodeRequirement& q : r.scheduling.required_affinity) {
      nlohmann::json e{{"key", q.key}, {"operator", q.op}};
      if (!q.values.empty()) e["values"] = q.values;
      requirements.push_back(e);
    }
    nlohmann::json pod_spec{{"nodeSelector", r.scheduling.node_selector}};
    if (!tolerations.empty()) pod_spec["tolerations"] = tolerations;
    if (!requirements.empty()) {
      pod_spec["affinity"] = {{"nodeAffinity",
                               {{"requiredDuringSchedulingIgnoredDuringExecution",
                                 {{"nodeSelectorTerms", {{{"matchExpressions", requirements}}}}}}}}};
    }
    nlohmann::json env = nlohmann::json::array();
    for (const auto& [k, v] : r.env) env.push_back({{"name", k}, {"value", v}});
    jobs.push_back(
        {{"job", job.name},
         {"gpus", job.gpu_count},
         {"pods", job.pods},
         {"gang", job.gang},
         {"gpu_model", job.gpu_model},
         {"checkpointing", CheckpointingName(job.checkpointing)},
         {"recommendation", SpotChoiceName(r.decision.choice)},
         {"reason", r.decision.reason},
         {"checkpoint_interval_s", r.interval.count()},
         {"expected_saving_usd", r.decision.expected_saving.value},
         {"deadline_miss_risk_bound", r.decision.miss_risk},
         {"spot", OutlookJson(r.decision.spot)},
         {"on_demand", OutlookJson(r.decision.on_demand)},
         {"prices_usd_per_gpu_hour",
          {{"on_demand", r.prices.on_demand_per_gpu_hour.value}, {"spot", r.prices.spot_per_gpu_hour.value}}},
         {"metadata", {{"annotations", r.annotations}}},
         {"env", env},
         {"podSpec", pod_spec}});
    if (!plan.workload.origins.empty()) {
      jobs.back()["work_h"] = job.work.count() / 3600;
      jobs.back()["checkpoint_write_s"] = job.checkpoint_write.count();
      jobs.back()["restore_s"] = job.restore.count();
      jobs.back()["checkpoint_size_gib"] = static_cast<double>(job.checkpoint_size.value) / 1024;
      jobs.back()["origin"] = OriginJson(plan.workload, r.job);
    }
  }
  const InterruptionModel& m = plan.workload.interruptions;
  nlohmann::json j{{"source", plan.source},
                   {"capacity_labels", LabelsName(plan.labels)},
                   {"interruptions",
                    {{"spot_per_hour", m.spot.interruptions_per_hour},
                     {"spot_notice_s", m.spot.notice.count()},
                     {"spot_basis", m.spot.basis},
                     {"gpu_mtbf_h", m.gpu_mtbf_hours}}},
                   {"totals",
                    {{"expected_on_demand_cost_usd", plan.on_demand_cost.value},
                     {"expected_recommended_cost_usd", plan.recommended_cost.value},
                     {"expected_saving_usd", plan.on_demand_cost.value - plan.recommended_cost.value}}},
                   {"jobs", jobs}};
  if (const std::optional<SpotRateOrigin>& o = plan.workload.spot_origin) {
    j["interruptions"]["spot_source"] = o->kind;
    j["interruptions"]["observed_reclaims"] = o->events;
    j["interruptions"]["observed_spot_node_hours"] = o->node_hours;
    j["interruptions"]["counted_by"] = o->counted_by;
  }
  return j.dump(2) + "\n";
}

std::string TrainingPlanToMarkdown(const TrainingPlan& plan) {
  const InterruptionModel& m = plan.workload.interruptions;
  std::string md = fmt::format(
      "# Training on spot: {}\n\nSpot reclaims: {:.3g} per node-hour ({}), notice {:.0f} s; hardware MTBF {:.0f} h per "
      "GPU. Labels: {}.\n\nExpected cost: {:.2f} USD as recommended vs {:.2f} USD all on-demand ({:.1f}% of it).\n\n"
      "| job | GPUs | checkpointing | recommendation | interval | expected run | expected lost GPU-h | expected cost | "
      "saving | deadline risk |\n|---|---|---|---|---|---|---|---|---|---|\n",
      plan.source, m.spot.interruptions_per_hour, m.spot.basis, m.spot.notice.count(), m.gpu_mtbf_hours,
      LabelsName(plan.labels), plan.recommended_cost.value, plan.on_demand_cost.value,
      plan.on_demand_cost.value > 0 ? 100 * plan.recommended_cost.value / plan.on_demand_cost.value : 0.0);
  for (const TrainingRecommendation& r : plan.jobs) {
    const TrainingJob& job = plan.workload.jobs[r.job];
    const RunOutlook& o = r.decision.choice == SpotChoice::kOnDemand ? r.decision.on_demand : r.decision.spot;
    md +=
        fmt::format("| {} | {} | {} | {} | {:.1f} min | {:.2f} h | {:.2f} | {:.2f} USD | {:.2f} USD | {:.2g} |\n",
                    MarkdownText(job.name),
                    job.pods > 1 ? fmt::format("{} pods x {}", job.pods, job.gpu_count) : std::to_string(job.gpu_count),
                    CheckpointingName(job.checkpointing), SpotChoiceName(r.decision.choice), r.interval.count() / 60,
                    o.expected_wall.count() / 3600, o.expected_lost_gpu_hours, o.expected_cost.value,
                    r.decision.expected_saving.value, r.decision.miss_risk);
  }
  if (!plan.workload.origins.empty()) {
    md += "\nWhere the figures came from";
    if (plan.workload.spot_origin) md += " (spot rate: " + plan.workload.spot_origin->kind + ")";
    md +=
        ":\n\n| job | found in | nodes (capacity) | started | runtime so far | remaining work | checkpoint write / "
        "restore | sources |\n|---|---|---|---|---|---|---|---|\n";
    for (const TrainingRecommendation& r : plan.jobs) {
      const TrainingJob& job = plan.workload.jobs[r.job];
      const std::optional<JobOrigin>& o = plan.workload.origins[r.job];
      if (!o) {
        md += fmt::format("| {} | workload file | | | | {:.2f} h | {:.0f} s / {:.0f} s | the file |\n",
                          MarkdownText(job.name), job.work.count() / 3600, job.checkpoint_write.count(),
                          job.restore.count());
        continue;
      }
      std::string sources;
      for (const auto& [field, from] : o->sources)
        sources += (sources.empty() ? "" : "; ") + field + ": " + MarkdownText(from);
      std::string nodes;
      for (const std::string& n : o->nodes) nodes += (nodes.empty() ? "" : ", ") + MarkdownText(n);
      md += fmt::format("| {} | {}/{} ({}) | {} ({}) | {} | {:.2f} h | {:.2f} h | {:.0f} s / {:.0f} s | {} |\n",
                        MarkdownText(job.name), MarkdownText(o->namespace_name), MarkdownText(o->owner),
                        fmt::format("{} pods", o->pods.size()), nodes, o->capacity,
                        o->started_s ? FormatRfc3339(*o->started_s) : "unknown", o->runtime_so_far_h,
                        job.work.count() / 3600, job.checkpoint_write.count(), job.restore.count(), sources);
    }
  }
  md += "\nEach job reads its interval from the annotation `" + std::string(kCheckpointIntervalAnnotation) +
        "` or the environment variable `" + kCheckpointIntervalEnv + "`; the JSON has the podSpec fields.\n";
  return md;
}

}  // namespace gpufit
