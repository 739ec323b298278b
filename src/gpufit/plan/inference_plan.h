// The inference section of a plan: per service the recommended replica schedule, the one
// autoscaler that applies it (plan/autoscalers.h), and the table of every policy replayed on
// the trace.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gpufit/inference/inference_study.h"
#include "gpufit/plan/autoscalers.h"

namespace gpufit {

// The JSON section; each service's `manifests` holds its one autoscaler (AutoscalerManifest).
// Precondition: CheckAutoscalerOptions(autoscaler) passed.
std::string InferencePlanToJson(const std::vector<InferenceStudy>& studies, const AutoscalerOptions& autoscaler);
// Both list AutoscalerWarnings(autoscaler): JSON `warnings` (absent when none), Markdown
// "- warning: ..." lines under the title.
std::string InferencePlanToMarkdown(const std::vector<InferenceStudy>& studies,
                                    const AutoscalerOptions& autoscaler = {});

}  // namespace gpufit
