// `--config FILE`: flags from a TOML file (CLI11 reads it; this checks it first, so that a
// mistake names its line).
//
// The file: `key = value` lines, key a long flag without its dashes, value a TOML string
// ("..." or '...'), number, true/false or [array]; a `[COMMAND]` section per command
// (`[plan]`, `[mig.check]`); keys before any section are the program's own (verbose,
// quiet). `#` starts a comment line. Flags given on the command line win over the file's.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "gpufit/core/result.h"

namespace gpufit::cli {

// Checks `path` against `app`'s commands and options. Errors (kNotFound: no such file;
// kInvalidArgument otherwise) read "--config PATH:LINE: ...": a line that is neither a
// section nor key = value, a value that is not TOML, a section that is no command, a key the
// command does not take or one set twice (with the closest name when one is close).
Result<void> CheckConfigFile(const CLI::App& app, const std::string& path);

}  // namespace gpufit::cli
