// `gpufit simulate`: replay a cluster trace through placement policies and compare them.
#pragma once

#include <CLI/CLI.hpp>

namespace gpufit::cli {

// Registers the command; its callback stores the exit code in `rc`.
void AddSimulateCommand(CLI::App& app, int& rc);

}  // namespace gpufit::cli
