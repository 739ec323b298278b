// gpufit's command line as a whole (main.cpp adds the commands): the options every command
// takes, the parse and its usage errors ("did you mean"), and deprecated flag names.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace gpufit::cli {

// The options of the program itself, accepted before or after any command.
struct GlobalFlags {
  int verbosity = 0;   // -v, -vv: the -v log (progress.h)
  bool quiet = false;  // -q: no progress line, no informational notes on stderr
  std::string config;  // --config FILE (TOML), checked by CheckConfigFile before the parse
};

// Adds --version, --config FILE, -v/--verbose (repeatable) and -q/--quiet to `app`. Call
// before adding any command: commands inherit CLI11's fallthrough, so an option a command
// lacks is looked up in its parents (`gpufit plan -v --config f.toml ...` works).
void AddGlobalOptions(CLI::App& app, GlobalFlags& g);

// `gpufit completion bash|zsh|fish`: prints the completion script of `app`'s tree
// (completion.h). Add it after the other commands.
void AddCompletionCommand(CLI::App& app, int& rc);

// Parses argv, which runs the command (each command runs from its callback); returns the exit
// code: `rc` as the command left it; 0 for --help and --version; 2 for a usage error (one
// line: an unknown option with the closest one the command takes, an unknown command with
// the closest one, a bad --config file or a bad value it gave with its line, CLI11's own
// message otherwise, with the closest choice where a value is not one of them); 1 when out of
// memory. -vv logs the options the command was given (a repeated flag by its count: -vv is 2).
int ParseCommandLine(CLI::App& app, GlobalFlags& g, int argc, char** argv, const int& rc);

// A deprecated name of `current` on `cmd`: it takes the same values, warns "gpufit: warning:
// OLD is deprecated, use NEW" on stderr, and passes each value to `current` (whose checks
// apply). Hidden from help, completion and suggestions. `current` takes a value (not a flag).
CLI::Option* AddDeprecatedAlias(CLI::App* cmd, const std::string& old_name, CLI::Option* current);

// The options of `cmd` a user is shown: its own with a name, then the program's (--version,
// --config, -v, -q; its --help left out), hidden ones (deprecated aliases) left out.
// (Fallthrough lets a command also take its parent commands' options; those are not offered.)
std::vector<const CLI::Option*> WithGlobalOptions(const CLI::App& cmd);

// The names of WithGlobalOptions(cmd): "--telemetry", "-o", ...
std::vector<std::string> AcceptedOptions(const CLI::App& cmd);

// The closest of `names` to `given` (Levenshtein distance at most max(2, a third of its
// length), ties to the first), else the shortest name that `given` begins (at least 4
// characters), else "".
std::string ClosestName(const std::string& given, const std::vector<std::string>& names);

// "plan", "mig check": the command path of `cmd` below the program ("" for the program).
std::string CommandPath(const CLI::App& cmd);

// Sorts the options of `cmd` (plan, demo, backtest) into the help's groups Input, Target,
// Safety, Output and Advanced (by long name; a name the table lacks goes to Advanced,
// hidden options stay hidden) and ends its help with `examples` (an EXAMPLES block).
void GroupPlanHelp(CLI::App* cmd, const char* examples);

// The EXAMPLES blocks of plan, demo and backtest.
inline constexpr const char* kPlanExamples =
    "EXAMPLES:\n"
    "  gpufit plan                      the first run: kubeconfig, Prometheus and each pod's GPU discovered\n"
    "  gpufit plan --namespace ml --since 2d --out plan/ --report plan/report.html\n"
    "  gpufit plan --prometheus http://localhost:9090 --gpu h100-80gb -o wide\n"
    "  gpufit plan --telemetry gpu.csv --gpu h100-80gb -o json > plan.json\n"
    "  gpufit plan --telemetry gpu.csv --gpu h100-80gb --pods pods.json --emit-manifests out/ --report plan.html";
inline constexpr const char* kDemoExamples =
    "EXAMPLES:\n"
    "  gpufit demo                      the table on a terminal, the report in gpufit-demo.html\n"
    "  gpufit demo -o wide              every pod with its reason\n"
    "  gpufit demo -o json > demo.json";
inline constexpr const char* kBacktestExamples =
    "EXAMPLES:\n"
    "  gpufit backtest --telemetry gpu.csv --gpu h100-80gb\n"
    "  gpufit backtest --prometheus http://prometheus.monitoring:9090 --since 14d --gpu h100-80gb -o json";

}  // namespace gpufit::cli
