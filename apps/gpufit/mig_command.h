// `gpufit mig check` and `gpufit mig free`: MIG layouts on one GPU.
#pragma once

#include <CLI/CLI.hpp>

namespace gpufit::cli {

// Registers `mig` with its subcommands; their callbacks store the exit code in `rc`.
void AddMigCommand(CLI::App& app, int& rc);

}  // namespace gpufit::cli
