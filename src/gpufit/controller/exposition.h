// The controller's /metrics: the last plan, its drift and the runs, in the Prometheus text
// exposition format 0.0.4 (https://prometheus.io/docs/instrumenting/exposition_formats/), each
// family with its HELP and TYPE lines. Names, all gauges unless said:
//
//   gpufit_workload_memory_cap_mib{workload,strategy}          recommended GPU memory cap, MiB
//   gpufit_workload_fitted_peak_mib{workload}                   the peak the plan was fitted on, MiB
//   gpufit_workload_verdict{workload,strategy,verdict}          1 for the verdict of the workload's
//                                                               strategy, 0 for the other three
//                                                               (held, did_not_hold, provisional, not_tested)
//   gpufit_plan_gpus{when="before"|"after"}                     GPUs today and planned
//   gpufit_plan_usd_per_month{when="before"|"after"}            on-demand cost, USD per 730-hour month
//   gpufit_plan_usd_per_month_saved                             before - after
//   gpufit_plan_workloads                                       workloads in the plan
//   gpufit_drift_pods_over_envelope                             pods above their workload's cap (drift.h)
//   gpufit_drift_pod_over_envelope_mib{pod,workload}            recent peak - cap, per such pod
//   gpufit_drift_new_workloads                                  workloads not in the last plan
//   gpufit_drift_new_workload{workload}                         1 per such workload
//   gpufit_drift_peak_ratio{workload}                           recent peak / fitted peak
//   gpufit_drift_workloads_peak_drifted                         workloads above the tolerance
//   gpufit_last_run_success                                     1 when the last run made a plan
//   gpufit_last_run_timestamp_seconds                           its end, Unix seconds
//   gpufit_last_run_duration_seconds                            its length
//   gpufit_last_success_timestamp_seconds                       the last successful run's end (0: none)
//   gpufit_runs_total{outcome="success"|"failure"}              counter of runs
//
// Label values are escaped as the format requires (backslash, double quote, line feed).
// Before the first plan, the plan and drift families are written with HELP and TYPE only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gpufit/controller/drift.h"
#include "gpufit/controller/plan_facts.h"

namespace gpufit::controller {

struct RunRecord {
  bool success = false;
  double finished_unix_s = 0, duration_s = 0;
  double last_success_unix_s = 0;  // 0: no run succeeded yet
  std::uint64_t successes = 0, failures = 0;
  std::string error;  // the failed run's error ("" on success)
};

// `value` with \ as \\, " as \" and a line feed as \n.
std::string EscapeLabelValue(std::string_view value);

// The verdict as a label value: "did not hold" -> "did_not_hold", "not tested" -> "not_tested".
std::string VerdictLabel(std::string_view verdict);

// The exposition text. `plan` and `drift` null: before the first plan.
std::string MetricsText(const PlanFacts* plan, const DriftReport* drift, const RunRecord& runs);

}  // namespace gpufit::controller
