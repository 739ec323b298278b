// `gpufit apply`: puts the folder `gpufit plan --emit-manifests` wrote on the live cluster, with
// the guardrails, waves, soak and revert of gpufit/apply/apply_run.h; `--revert RUN` undoes a
// run. Exit codes: 0 a dry run, applied, or nothing to do now (a guardrail says why); 2 bad
// input, a plan that is not this cluster's or did not hold, or a change the API server refused
// (its wave reverted); 3 a breach in the soak (the wave reverted); 4 stopped by the kill switch
// or a maintenance window between changes (what was applied stays).
#pragma once

#include <CLI/CLI.hpp>

namespace gpufit::cli {

void AddApplyCommand(CLI::App& app, int& rc);

}  // namespace gpufit::cli
