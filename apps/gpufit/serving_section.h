// `gpufit plan --prometheus`: the inference section for every service found in the server's
// serving metrics (ingest/prometheus/serving.h, inference/serving_services.h), with the
// services file (--inference) as the override.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "inference_command.h"
#include "telemetry_source.h"

namespace gpufit::cli {

struct ServingFlags {
  std::vector<std::string> queries;    // --serving-query NAME=PROMQL (requests per second)
  std::vector<std::string> latencies;  // --serving-latency NAME=PROMQL (seconds per request)
  std::string slo = "ttft:2:0.99";     // --serving-slo METRIC:SECONDS[:TARGET]
  bool slo_given = false;              // --serving-slo was given
  bool off = false;                    // --no-serving (an error with the three above)
};
void AddServingOptions(CLI::App* cmd, ServingFlags& flags);

// The plan's inference section: the services file's services (`services_path`, may be empty)
// and, when `telemetry` is a Prometheus server already resolved (LoadTelemetry ran), those its
// serving metrics show, priced and sized on `gpu`. nullopt when there are none of either.
// Errors: bad flags (kInvalidArgument naming the flag: a --serving-query NAME that is not a
// DNS-1123 deployment or namespace/deployment, or given twice; a --serving-query naming a
// workload an engine's metrics already found; --no-serving with a --serving-* flag), those of
// the services file, of the queries and of the section.
Result<std::optional<InferenceSectionOutput>> PlanInferenceSection(const std::string& services_path,
                                                                   const TelemetrySource& telemetry,
                                                                   const ServingFlags& flags, const std::string& gpu,
                                                                   const GpuCatalog& catalog,
                                                                   const AutoscalerOptions& autoscaler);

}  // namespace gpufit::cli
