// Shell completion scripts generated from the CLI11 command tree (`gpufit completion SHELL`):
// the commands at each level and the flags of each command (its own and the program's:
// WithGlobalOptions in cli_app.h), hidden ones (deprecated aliases) left out. A flag's value
// completes as one of its choices where a CLI::IsMember check lists them, as an id of the
// embedded GPU catalog for --gpu and --current-gpu (of the MIG catalog under `mig`), else as a
// file name; a command's argument as one of its choices (`completion`: bash, zsh, fish).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace gpufit::cli {

// The completion script of `app` for `shell`: "bash" (defines _gpufit, registered with
// `complete -F`), "zsh" (a #compdef function) or "fish" (`complete -c gpufit` lines).
// Precondition: shell is one of the three.
std::string CompletionScript(const CLI::App& app, const std::string& shell);

}  // namespace gpufit::cli
