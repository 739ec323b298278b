// `gpufit apply`: puts the folder `gpufit plan --emit-manifests` wrote on the live cluster, with
// the guardrails, waves, soak and revert of gpufit/apply/apply_run.h; `--revert RUN` undoes a
// run. Exit codes: 0 a dry run, applied, or nothing to do now (a guardrail says why); 2 bad
// input, a plan that is not this cluster's or did not hold, or a change the API server refused
// (its wave reverted); 3 a breach in the soak (the wave reverted); 4 stopped by the kill switch
// or a maintenance window between changes (what was applied stays).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "gpufit/apply/apply_run.h"
#include "kube_source.h"

namespace gpufit::cli {

void AddApplyCommand(CLI::App& app, int& rc);

// What one `gpufit apply` is given (also `gpufit controller --apply` after each run).
struct ApplyRequest {
  std::string plan{}, manifests{};  // plan.json and the folder plan --emit-manifests wrote
  std::string revert{};             // or the run to undo
  std::string prometheus{};         // the soak's GPU memory source ("" for none)
  KubeApiFlags kube{};
  apply::ApplyOptions options{};
  std::function<void(const std::string&)> log{};  // progress lines
};

// Reads the plan and the folder (errors before any cluster is reached), connects, and applies
// (apply/apply_run.h) or reverts.
Result<apply::ApplyResult> ApplyFolder(const ApplyRequest& request);

// 0, 3 (a breach reverted a wave) or 4 (stopped by the kill switch, a window or a signal).
int ApplyExitCode(const apply::ApplyResult& result);

// Whether SIGTERM or SIGINT asked an ApplyFolder run to stop (the caller blocks both signals:
// the run takes them between changes and polls, as the kill switch).
bool ApplyStoppedBySignal();

}  // namespace gpufit::cli
