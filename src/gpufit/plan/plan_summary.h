// The summary a plan leads with: the saving in US dollars per month and in percent, per
// strategy, the recommended actions in words, and the pods rolled up per workload and per
// namespace (team). Read from the finished plan document (plan.json with its sections:
// docs/plan-json.md), so that every figure is one the document already states.
//
// JSON (plan.json `summary`):
//   usd_per_month_before, usd_per_month_after  sums over the strategies priced per month
//                                              that state both (below)
//   usd_per_month_saved   the sum of every monthly strategy's saving (savings-only rows too)
//   saved_pct             usd_per_month_saved / usd_per_month_before x 100 (null when 0)
//   basis                 how the figures were made, in words
//   strategies[]          strategy, unit ("usd_per_month", or "usd_per_run" for training,
//                         whose figures are for one run of the listed jobs and are not in
//                         the monthly sums), usd_before, usd_after (null for a savings-only
//                         row), usd_saved, basis
//   actions[]             sentences, most saving first
//   rollups               by_namespace[], by_workload[]: key, pods (telemetry series: one per
//                         GPU a pod holds), gpus_before, gpus_shared (series placed on a
//                         shared GPU), peak_fb_used_mib, mean_duty_pct (weighted by running
//                         samples), gpu_hours_used, gpu_hours_allocated,
//                         usd_per_month_current, usd_per_month_right_sized (each pod alone on
//                         its right-sized GPU; the current GPU where none is recommended);
//                         largest current cost first; workload_of (pod -> its workload
//                         key); workload_basis (where the workload key came from)
// Monthly figures use a 730-hour month, as totals do (plan.h). Strategies:
//   co-location and right-sizing  totals.usd_per_month_before / _after
//   inference replicas            per service, the static-peak policy against gpufit's
//                                 schedule, cost_usd over the replayed trace scaled to 730 h
//   containers                    ancillary.containers[] usd_per_month_now / _recommended
//   duplicated agents, model cache (savings only) ancillary's usd_per_month_saving figures
//   training on spot              training.totals (per run)
#pragma once

#include <string>
#include <string_view>

namespace gpufit {

// The `summary` object above for the plan document `plan_json` (JSON text). Errors: text
// that is not a JSON object throws std::invalid_argument (the caller's logic error).
std::string PlanSummaryJson(std::string_view plan_json);

// The Markdown the summary leads with (a bold saving line and the numbered actions), and
// the rollup tables (## By namespace, ## By workload; the `top` largest of each).
std::string PlanSummaryLead(std::string_view summary_json);
std::string PlanRollupsMarkdown(std::string_view summary_json, std::size_t top = 15);

// The per-pod table of the plan (--format csv), RFC 4180 (quoted where a field holds a comma,
// quote or line break), one header line then one line per pods[] entry: pod, namespace,
// workload (the pods file's, else WorkloadFromPodName), current_gpu, recommended_gpu,
// required_mib, peak_fb_used_mib, p99_fb_used_mib, mean_gpu_util_pct, p95_gpu_util_pct,
// idle_share, gpu_hours_allocated, gpu_hours_used, group (empty when none),
// usd_per_month_current, usd_per_month_recommended (empty when none).
std::string PlanPodsCsv(std::string_view plan_json);

// The workload of a pod name when no pods file says ("ns/name", "[i]" and "@k" dropped):
// a Deployment's pod "<deployment>-<hash>-<suffix>" (hash of 1-10 and suffix of 5 lower-case
// letters or digits, ReplicaSet naming) gives "<deployment>", a StatefulSet's
// "<name>-<ordinal>" gives "<name>", anything else the name itself; with its namespace.
std::string WorkloadFromPodName(std::string_view pod);

}  // namespace gpufit
