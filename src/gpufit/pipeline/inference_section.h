// The inference section of a plan: the services file's services (inference/inference_study.h)
// and those a Prometheus server's serving metrics show (ingest/prometheus/serving.h,
// inference/serving_services.h), with the file as the override.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/inference/inference_study.h"
#include "gpufit/pipeline/cluster_reads.h"
#include "gpufit/plan/autoscalers.h"

namespace gpufit::pipeline {

// The section: its JSON, its Markdown, and each service's one autoscaler as (file name, YAML).
struct InferenceSectionOutput {
  std::string json, markdown;
  std::vector<std::pair<std::string, std::string>> manifests;
};

// The section of a services file. Errors: those of the services file and CheckAutoscalerOptions.
Result<InferenceSectionOutput> InferenceSection(const std::string& services_path, const GpuCatalog& catalog,
                                                const AutoscalerOptions& autoscaler);
// The same with services found elsewhere (serving metrics) after the file's (`services_path`
// may be empty): a service the file names, by name or by namespace and deployment, wins over a
// found one (said in `notes`). `notes` (services skipped, and why) go under the section's
// Markdown and into its JSON as "notes".
Result<InferenceSectionOutput> InferenceSection(const std::string& services_path, std::vector<PreparedService> found,
                                                std::vector<std::string> notes, const GpuCatalog& catalog,
                                                const AutoscalerOptions& autoscaler);

// How services are found in serving metrics (the flags --serving-query, --serving-latency,
// --serving-slo, --no-serving; docs/inference.md).
struct ServingMetricsOptions {
  std::vector<std::string> queries;    // NAME=PROMQL (requests per second)
  std::vector<std::string> latencies;  // NAME=PROMQL (seconds per request)
  std::string slo = "ttft:2:0.99";     // METRIC:SECONDS[:TARGET]
  bool slo_given = false;              // slo was given
  bool off = false;                    // do not look (an error with the three above)
};

// The plan's inference section: the services file's services (`services_path`, may be empty)
// and, when `telemetry` is a Prometheus server already resolved (its server and range set),
// those its serving metrics show, priced and sized on `gpu`. nullopt when there are none of
// either. Errors: bad options (kInvalidArgument naming the flag: a --serving-query NAME that
// is not a DNS-1123 deployment or namespace/deployment, or given twice; a --serving-query
// naming a workload an engine's metrics already found; --no-serving with a --serving-* flag),
// those of the services file, of the queries and of the section.
Result<std::optional<InferenceSectionOutput>> PlanInferenceSection(const std::string& services_path,
                                                                   const TelemetryOrigin& telemetry,
                                                                   const ServingMetricsOptions& flags,
                                                                   const std::string& gpu, const GpuCatalog& catalog,
                                                                   const AutoscalerOptions& autoscaler);

}  // namespace gpufit::pipeline
