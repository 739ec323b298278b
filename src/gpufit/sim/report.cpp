#include "gpufit/sim/report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace gpufit {
namespace {
const char* ModeName(SimMode m) { return m == SimMode::kSaturation ? "saturation" : "replay"; }
}  // namespace

std::string ComparisonText(const std::vector<PolicySummary>& summaries, const ReportContext& c) {
  const SimInput& in = *c.input;
  std::string out =
      fmt::format("{} mode{}: {} nodes, {} GPUs, {} trace pods, {} seed(s)\n", ModeName(c.options->mode),
                  c.options->mode == SimMode::kSaturation
                      ? fmt::format(" (arrivals up to {:.0f}% of GPU capacity)", 100 * c.options->inflation)
                      : std::string(),
                  in.nodes.size(), in.initial.total_gpus(), in.pods.size(), c.seeds.size());
  out += fmt::format("{:<16} {:>16} {:>20} {:>18} {:>16}\n", "policy", "GPU alloc %", "unallocated GPUs",
                     "frag rate @90 %", "failed pods");
  for (const PolicySummary& s : summaries) {
    const std::string frag = s.frag_rate_at_90 ? fmt::format("{:>10.2f} ±{:>5.2f}", 100 * s.frag_rate_at_90->mean,
                                                             100 * s.frag_rate_at_90->sd)
                                               : fmt::format("{:>18}", "n/a");
    out += fmt::format("{:<16} {:>9.2f} ±{:>5.2f} {:>12.1f} ±{:>6.1f} {} {:>9.1f} ±{:>5.1f}\n", s.policy,
                       100 * s.alloc_ratio.mean, 100 * s.alloc_ratio.sd, s.unallocated_gpus.mean, s.unallocated_gpus.sd,
                       frag, s.failed_pods.mean, s.failed_pods.sd);
  }
  out += "(mean ± sample standard deviation over seeds; n/a: arrivals never reached 90% of the GPUs)\n";
  if (!in.never_fit.empty())
    out += fmt::format("{} trace pods fit no node even in an empty cluster, e.g. {}\n", in.never_fit.size(),
                       in.never_fit.front());
  return out;
}

std::string ComparisonJson(const std::vector<PolicySummary>& summaries, const ReportContext& c) {
  using nlohmann::json;
  const SimInput& in = *c.input;
  json root = {{"schema_version", 1},
               {"mode", ModeName(c.options->mode)},
               {"inflation", c.options->mode == SimMode::kSaturation ? json(c.options->inflation) : json(nullptr)},
               {"nodes_file", c.nodes_file},
               {"pods_file", c.pods_file},
               {"nodes", in.nodes.size()},
               {"gpus", in.initial.total_gpus()},
               {"trace_pods", in.pods.size()},
               {"typical_pod_shapes", in.target->size()},
               {"pods_never_fit", in.never_fit.size()},
               {"seeds", c.seeds}};
  json policies = json::array();
  for (const PolicySummary& s : summaries) {
    json runs = json::array();
    for (const RunResult* r : s.runs) {
      json run = {{"seed", r->seed},
                  {"pods_submitted", r->pods_submitted},
                  {"alloc_ratio", r->alloc_ratio},
                  {"unallocated_gpus", r->unallocated_gpus},
                  {"frag_rate_at_90", r->frag_rate_at_90 ? json(*r->frag_rate_at_90) : json(nullptr)},
                  {"failed_pods", r->failed_pods},
                  {"cpu_alloc_ratio", r->cpu_alloc_ratio},
                  {"cpu_stranded_milli", r->cpu_stranded.value},
                  {"memory_stranded_mib", r->memory_stranded.value}};
      run["unallocated_gpus_at_first_failure"] =
          r->unallocated_gpus_at_first_failure ? json(*r->unallocated_gpus_at_first_failure) : json(nullptr);
      runs.push_back(std::move(run));
    }
    policies.push_back({{"policy", s.policy},
                        {"alloc_ratio_mean", s.alloc_ratio.mean},
                        {"alloc_ratio_sd", s.alloc_ratio.sd},
                        {"unallocated_gpus_mean", s.unallocated_gpus.mean},
                        {"unallocated_gpus_sd", s.unallocated_gpus.sd},
                        {"frag_rate_at_90_mean", s.frag_rate_at_90 ? json(s.frag_rate_at_90->mean) : json(nullptr)},
                        {"frag_rate_at_90_sd", s.frag_rate_at_90 ? json(s.frag_rate_at_90->sd) : json(nullptr)},
                        {"failed_pods_mean", s.failed_pods.mean},
                        {"failed_pods_sd", s.failed_pods.sd},
                        {"runs", std::move(runs)}});
  }
  root["policies"] = std::move(policies);
  return root.dump(2) + "\n";
}

std::string StepsCsv(const RunResult& run) {
  std::string out =
      "step,time_s,arrived_pods,arrived_gpu_pct,alloc_ratio,frag_milli,frag_rate,running_pods,pending_pods,"
      "failed_pods\n";
  std::size_t k = 0;
  for (const StepMetrics& s : run.steps) {
    fmt::format_to(std::back_inserter(out), "{},{},{},{:.4f},{:.6f},{:.1f},{:.6f},{},{},{}\n", ++k,
                   s.time_s ? fmt::format("{}", *s.time_s) : std::string(), s.arrived_pods, s.arrived_gpu_pct,
                   s.alloc_ratio, s.frag_milli, s.frag_rate, s.running_pods, s.pending_pods, s.failed_pods);
  }
  return out;
}

}  // namespace gpufit
