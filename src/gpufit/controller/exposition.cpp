#include "gpufit/controller/exposition.h"

#include <fmt/format.h>

#include <array>

namespace gpufit::controller {
namespace {

void Family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (const char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string VerdictLabel(std::string_view verdict) {
  std::string out(verdict);
  for (char& c : out)
    if (c == ' ') c = '_';
  return out;
}

std::string MetricsText(const PlanFacts* plan, const DriftReport* drift, const RunRecord& runs) {
  constexpr std::array<std::string_view, 4> kVerdicts = {"held", "did_not_hold", "provisional", "not_tested"};
  std::string out;
  Family(out, "gpufit_workload_memory_cap_mib", "gauge", "Recommended GPU memory cap of the workload, MiB.");
  if (plan)
    for (const WorkloadFacts& w : plan->workloads)
      out += fmt::format("gpufit_workload_memory_cap_mib{{workload=\"{}\",strategy=\"{}\"}} {}\n",
                         EscapeLabelValue(w.workload), w.strategy, w.cap_mib);
  Family(out, "gpufit_workload_fitted_peak_mib", "gauge", "GPU memory peak the plan was fitted on, MiB.");
  if (plan)
    for (const WorkloadFacts& w : plan->workloads)
      out += fmt::format("gpufit_workload_fitted_peak_mib{{workload=\"{}\"}} {}\n", EscapeLabelValue(w.workload),
                         w.fitted_peak_mib);
  Family(out, "gpufit_workload_verdict", "gauge",
         "1 for the backtest verdict of the workload's strategy, 0 for the others.");
  if (plan)
    for (const WorkloadFacts& w : plan->workloads)
      for (const std::string_view v : kVerdicts)
        out += fmt::format("gpufit_workload_verdict{{workload=\"{}\",strategy=\"{}\",verdict=\"{}\"}} {}\n",
                           EscapeLabelValue(w.workload), w.strategy, v, VerdictLabel(w.verdict) == v ? 1 : 0);
  Family(out, "gpufit_plan_gpus", "gauge", "GPUs today (before) and in the plan (after).");
  if (plan)
    out += fmt::format("gpufit_plan_gpus{{when=\"before\"}} {}\ngpufit_plan_gpus{{when=\"after\"}} {}\n",
                       plan->gpus_before, plan->gpus_after);
  Family(out, "gpufit_plan_usd_per_month", "gauge", "On-demand GPU cost, USD per 730-hour month, today and planned.");
  if (plan)
    out +=
        fmt::format("gpufit_plan_usd_per_month{{when=\"before\"}} {}\ngpufit_plan_usd_per_month{{when=\"after\"}} {}\n",
                    plan->usd_per_month_before, plan->usd_per_month_after);
  Family(out, "gpufit_plan_usd_per_month_saved", "gauge", "USD per month the plan saves (before - after).");
  if (plan) out += fmt::format("gpufit_plan_usd_per_month_saved {}\n", plan->usd_per_month_saved);
  Family(out, "gpufit_plan_workloads", "gauge", "Workloads in the last plan.");
  if (plan) out += fmt::format("gpufit_plan_workloads {}\n", plan->workloads.size());

  Family(out, "gpufit_drift_pods_over_envelope", "gauge",
         "Pods whose recent GPU memory peak is above their workload's planned cap.");
  if (drift) out += fmt::format("gpufit_drift_pods_over_envelope {}\n", drift->over_envelope.size());
  Family(out, "gpufit_drift_pod_over_envelope_mib", "gauge", "Recent GPU memory peak minus the planned cap, MiB.");
  if (drift)
    for (const PodOverEnvelope& p : drift->over_envelope)
      out +=
          fmt::format("gpufit_drift_pod_over_envelope_mib{{pod=\"{}\",workload=\"{}\"}} {}\n", EscapeLabelValue(p.pod),
                      EscapeLabelValue(p.workload), p.peak_mib - static_cast<double>(p.cap_mib));
  Family(out, "gpufit_drift_new_workloads", "gauge", "Workloads running now that the last plan does not have.");
  if (drift) out += fmt::format("gpufit_drift_new_workloads {}\n", drift->new_workloads.size());
  Family(out, "gpufit_drift_new_workload", "gauge", "1 per workload the last plan does not have.");
  if (drift)
    for (const std::string& w : drift->new_workloads)
      out += fmt::format("gpufit_drift_new_workload{{workload=\"{}\"}} 1\n", EscapeLabelValue(w));
  Family(out, "gpufit_drift_peak_ratio", "gauge", "Recent GPU memory peak over the peak the plan was fitted on.");
  if (drift)
    for (const PeakDrift& p : drift->peaks)
      out += fmt::format("gpufit_drift_peak_ratio{{workload=\"{}\"}} {}\n", EscapeLabelValue(p.workload), p.ratio);
  Family(out, "gpufit_drift_workloads_peak_drifted", "gauge",
         "Workloads whose recent peak passed the fitted peak by more than the tolerance.");
  if (drift) out += fmt::format("gpufit_drift_workloads_peak_drifted {}\n", drift->drifted());

  const bool ran = runs.successes + runs.failures > 0;
  Family(out, "gpufit_last_run_success", "gauge", "1 when the last run made a plan, 0 when it failed.");
  if (ran) out += fmt::format("gpufit_last_run_success {}\n", runs.success ? 1 : 0);
  Family(out, "gpufit_last_run_timestamp_seconds", "gauge", "End of the last run, Unix seconds.");
  if (ran) out += fmt::format("gpufit_last_run_timestamp_seconds {:.3f}\n", runs.finished_unix_s);
  Family(out, "gpufit_last_run_duration_seconds", "gauge", "Length of the last run, seconds.");
  if (ran) out += fmt::format("gpufit_last_run_duration_seconds {:.3f}\n", runs.duration_s);
  Family(out, "gpufit_last_success_timestamp_seconds", "gauge", "End of the last successful run, Unix seconds.");
  if (ran) out += fmt::format("gpufit_last_success_timestamp_seconds {:.3f}\n", runs.last_success_unix_s);
  Family(out, "gpufit_runs_total", "counter", "Runs since the controller started, by outcome.");
  out += fmt::format("gpufit_runs_total{{outcome=\"success\"}} {}\ngpufit_runs_total{{outcome=\"failure\"}} {}\n",
                     runs.successes, runs.failures);
  return out;
}

}  // namespace gpufit::controller
