// The console side of a run, on stderr: the -v log (spdlog), the phases of a command with
// their wall times, and the progress line shown on a terminal for work over 2 s.
//
// One run of the program has one console: the functions below share process-wide state (the
// CLI is a thin shell; the libraries never call these). Thread-safe.
#pragma once

#include <string>

namespace gpufit::cli {

struct ConsoleOptions {
  int verbosity = 0;   // -v count: 1 logs each Prometheus request and the phase times, 2 also debug lines
  bool quiet = false;  // -q: no progress line
};

// Sets up the log and the progress line for this run; call before the command runs.
void ConfigureConsole(const ConsoleOptions& o);

// Whether -v was given (callers skip building log text otherwise).
bool Verbose();

// Whether -q was given: informational notes on stderr are left out.
bool Quiet();

// One line of the -v log on stderr ("gpufit: [12:00:01.234] TEXT"); nothing without -v.
void LogVerbose(const std::string& text);

// The command `name` ("plan", "mig check") starts: the progress line names it until the first
// Phase; its time is logged as the total at EndPhases.
void StartCommand(const std::string& name);

// The running command entered phase `name` ("read", "plan", "backtest", "sections",
// "write"; first the command's name): the previous phase ends, its time logged at -v. When
// stderr is a terminal and -q is off, a line "gpufit: NAME ... 4 s" appears once the command
// has run 2 s, and is redrawn in place every 0.25 s until EndPhases.
void Phase(const std::string& name);

// Erases the progress line now, so that the next line on stderr (an error) starts on a clean
// line; it is redrawn on the next tick.
void EraseProgressLine();

// A -vv line of the log (debug level); nothing without -vv.
void LogDebug(const std::string& text);

// Ends the last phase (logging its time) and erases the progress line. Does nothing when no
// phase started; called once the command returned.
void EndPhases();

}  // namespace gpufit::cli
