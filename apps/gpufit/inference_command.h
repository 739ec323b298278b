// gpufit inference: replica policies for inference services, replayed on their traces.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"

namespace gpufit::cli {

void AddInferenceCommand(CLI::App& app, int& rc);

// The inference section of a plan for a services file: its JSON, its Markdown, and each
// service's HPA and KEDA ScaledObject as (file name, YAML).
struct InferenceSectionOutput {
  std::string json, markdown;
  std::vector<std::pair<std::string, std::string>> manifests;
};
Result<InferenceSectionOutput> InferenceSection(const std::string& services_path, const GpuCatalog& catalog);

// Writes (file name, text) pairs into `dir` (created if missing), all or nothing.
Result<void> WriteManifestFiles(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace gpufit::cli
