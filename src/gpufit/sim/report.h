// The outputs of `gpufit simulate`: a comparison table (text), the same as JSON
// (docs/simulate.md documents the fields), and one CSV of per-event metrics per run for
// plots. Ratios are fractions 0..1 in JSON and CSV, percentages in the text table.
#pragma once

#include <string>
#include <vector>

#include "gpufit/sim/batch.h"

namespace gpufit {

struct ReportContext {
  std::string nodes_file;
  std::string pods_file;
  const SimInput* input = nullptr;
  const SimOptions* options = nullptr;
  std::vector<std::uint64_t> seeds;
};

std::string ComparisonText(const std::vector<PolicySummary>& summaries, const ReportContext& context);
std::string ComparisonJson(const std::vector<PolicySummary>& summaries, const ReportContext& context);

// Header: step,time_s,arrived_pods,arrived_gpu_pct,alloc_ratio,frag_milli,frag_rate,
// running_pods,pending_pods,failed_pods. time_s is empty in saturation mode (no clock).
std::string StepsCsv(const RunResult& run);

}  // namespace gpufit
