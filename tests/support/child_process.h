// Child processes of the test servers (tests/support/*_server.cpp): started with their output
// in a log file, and that log read back for error messages.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace gpufit::testing {

// Starts argv (argv[0] looked up in PATH) with stdout and stderr to `log`; the pid, or -1
// when it cannot start.
int SpawnLogged(const std::vector<std::string>& argv, const std::filesystem::path& log);

// The whole file ("" when unreadable).
std::string ReadFileText(const std::filesystem::path& path);

// SIGTERM, then waits for the process (no-op for pid <= 0).
void TerminateAndWait(int pid);

}  // namespace gpufit::testing
