// `gpufit training`: spot study, maintenance drain plan and defragmentation for training
// jobs (the per-job recommendation is in `gpufit plan --training-jobs`).
#pragma once

#include <CLI/CLI.hpp>

namespace gpufit::cli {

// Registers the command; its callbacks store the exit code in `rc`.
void AddTrainingCommand(CLI::App& app, int& rc);

}  // namespace gpufit::cli
