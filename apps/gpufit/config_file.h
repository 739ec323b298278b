// `--config FILE`: flags from a TOML file (CLI11 reads it; this checks it first, so that a
// mistake names its line).
//
// The file: `key = value` lines, key a long flag without its dashes, value a TOML string
// ("..." or '...'), number, true/false or [array] (for a text flag, its comma-separated
// list; for a flag with a ',' delimiter, its values); a `[COMMAND]` section per command
// (`[plan]`, `[mig.check]`); keys before any section are the program's own (verbose,
// quiet). `#` starts a comment line. Flags given on the command line win over the file's.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "gpufit/core/result.h"

namespace gpufit::cli {

// One `key = value` line of a --config file.
struct ConfigLine {
  std::string key;    // "headroom"
  std::string value;  // as written, a string without its quotes: abc, 0.2, ["a", "b"]
  int line = 0;       // 1-based
};

// Checks `path` against `app`'s commands and options; returns its key = value lines. Errors
// (kNotFound: no such file; kInvalidArgument otherwise) read "--config PATH[:LINE]: ...": a
// directory, a line that is neither a section nor key = value, a value that is not TOML, a
// section that is no command, a key the command does not take or one set twice (with the
// closest name when one is close), an [array] for a flag that takes one value that is no text.
Result<std::vector<ConfigLine>> CheckConfigFile(const CLI::App& app, const std::string& path);

// The line of `lines` that an error of CLI11 about a flag's value (`message` names the flag:
// "Could not convert: --headroom = abc", "--format: jsn not in {...}") came from, or nullptr
// when the command line gave the value: a line of that key whose value `message` quotes, else,
// unless `on_command_line` (the flag is in argv), the first line of that key.
const ConfigLine* ConfigLineOf(const std::vector<ConfigLine>& lines, const std::string& message, bool on_command_line);

// The flag an error of CLI11 names: the first "--name" in `message` ("" when none).
std::string FlagOfMessage(const std::string& message);

// CLI11's TOML reader, with an [array] for a text flag without a delimiter (--profiles,
// mig plan --gpu, --policies: one text value, itself a comma-separated list) read as that
// list: its elements joined with ','. Flags with a ',' delimiter (--risks) take the elements
// as their values, as CLI11 does. `app` (the program) must outlive it.
std::shared_ptr<CLI::Config> TomlWithLists(const CLI::App& app);

}  // namespace gpufit::cli
