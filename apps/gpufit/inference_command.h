// gpufit inference: replica policies for inference services, replayed on their traces.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

#include "cli_common.h"
#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/inference/inference_study.h"
#include "gpufit/plan/autoscalers.h"

namespace gpufit::cli {

void AddInferenceCommand(CLI::App& app, int& rc);

// --autoscaler hpa|keda, --keda-prometheus URL, --keda-query PROMQL (shared by `inference`
// and `plan --inference`).
struct AutoscalerFlags {
  std::string kind = "hpa";
  AutoscalerOptions options;
  AutoscalerOptions Options() const;  // options with kind from `kind`
};
void AddAutoscalerOptions(CLI::App* cmd, AutoscalerFlags& flags);

// The inference section of a plan for a services file: its JSON, its Markdown, and each
// service's one autoscaler as (file name, YAML). Errors: those of the services file and
// CheckAutoscalerOptions.
struct InferenceSectionOutput {
  std::string json, markdown;
  std::vector<std::pair<std::string, std::string>> manifests;
};
Result<InferenceSectionOutput> InferenceSection(const std::string& services_path, const GpuCatalog& catalog,
                                                const AutoscalerOptions& autoscaler);
// The same with services found elsewhere (serving metrics, apps/gpufit/serving_section.h) after
// the file's (`services_path` may be empty): a service the file names, by name or by namespace
// and deployment, wins over a found one (said in `notes`). `notes` (services skipped, and why)
// go under the section's Markdown and into its JSON as "notes".
Result<InferenceSectionOutput> InferenceSection(const std::string& services_path, std::vector<PreparedService> found,
                                                std::vector<std::string> notes, const GpuCatalog& catalog,
                                                const AutoscalerOptions& autoscaler);

// The (file name, text) pairs to write into the manifest folder `dir`, with
// `.gpufit-manifests`, the list of what this run writes, and as removals the files the
// previous run into the folder listed that this one no longer writes (an HPA replaced by a
// ScaledObject, say); nothing it did not write. Reads only; Emit commits it with the report.
ExtraOutput ManifestOutput(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace gpufit::cli
