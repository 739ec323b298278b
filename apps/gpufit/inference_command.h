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
#include "gpufit/pipeline/inference_section.h"
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

// The inference section of a plan (pipeline/inference_section.h).
using pipeline::InferenceSection;
using pipeline::InferenceSectionOutput;

// The (file name, text) pairs to write into the manifest folder `dir`, with
// `.gpufit-manifests`, the list of what this run writes, and as removals the files the
// previous run into the folder listed that this one no longer writes (an HPA replaced by a
// ScaledObject, say); nothing it did not write. Reads only; Emit commits it with the report.
ExtraOutput ManifestOutput(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace gpufit::cli
