// gpufit inference: replica policies for inference services, replayed on their traces.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <utility>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"

namespace gpufit::cli {

void AddInferenceCommand(CLI::App& app, int& rc);

// The inference section of a plan for a services file: {json, markdown}; with a non-empty
// `manifests_dir`, also writes each service's HPA and KEDA ScaledObject there (atomically).
Result<std::pair<std::string, std::string>> InferenceSection(const std::string& services_path,
                                                             const std::string& manifests_dir,
                                                             const GpuCatalog& catalog);

}  // namespace gpufit::cli
