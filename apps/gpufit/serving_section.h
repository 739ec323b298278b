// The flags of `gpufit plan --prometheus` that find services in the server's serving metrics
// (the section itself: pipeline/inference_section.h).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/pipeline/inference_section.h"

namespace gpufit::cli {

// --serving-query, --serving-latency, --serving-slo and --no-serving (pipeline/inference_section.h).
using ServingFlags = pipeline::ServingMetricsOptions;
void AddServingOptions(CLI::App* cmd, ServingFlags& flags);

}  // namespace gpufit::cli
