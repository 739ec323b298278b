#include "serving_section.h"

namespace gpufit::cli {

void AddServingOptions(CLI::App* cmd, ServingFlags& f) {
  cmd->add_option("--serving-query", f.queries,
                  "with --prometheus: NAME=PROMQL, a service whose engine gpufit does not know, PROMQL giving its "
                  "requests per second (NAME: deployment or namespace/deployment; repeatable; docs/inference.md)");
  cmd->add_option(
      "--serving-latency", f.latencies,
      "with --serving-query: NAME=PROMQL giving that service's mean seconds per request (its service time)");
  cmd->add_option("--serving-slo", f.slo,
                  "SLO of the services found in serving metrics: METRIC:SECONDS[:TARGET], METRIC ttft (LLMs; others "
                  "take the bound on their wait), latency or wait")
      ->capture_default_str()
      ->each([&f](const std::string&) { f.slo_given = true; });
  cmd->add_flag("--no-serving", f.off, "with --prometheus: do not look for serving metrics");
}

}  // namespace gpufit::cli
