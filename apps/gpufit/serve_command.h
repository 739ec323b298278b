// `gpufit serve`: the placement engine as a Kubernetes scheduler extender (docs/serve.md).
#pragma once

#include <CLI/CLI.hpp>

namespace gpufit::cli {

// Registers `serve`; its callback stores the exit code in `rc`.
void AddServeCommand(CLI::App& app, int& rc);

}  // namespace gpufit::cli
