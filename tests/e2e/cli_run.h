// Helpers of the end-to-end tests: run the built `gpufit` binary as a user would.
// The binary and the traces are found through tests/support/test_paths.h.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "test_paths.h"

namespace gpufit::e2e {

namespace fs = std::filesystem;

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

inline std::string Slurp(const fs::path& p) {
  std::stringstream ss;
  ss << std::ifstream(p).rdbuf();
  return ss.str();
}

// A fresh scratch folder, gpufit-e2e-<pid>-<name> under the system temp directory.
inline fs::path Scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("gpufit-e2e-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Runs `gpufit ARGS` with stdout and stderr captured in DIR.
inline CliRun Gpufit(const std::string& args, const fs::path& dir) {
  const std::string cmd = std::string(gpufit::test_paths::GpufitBin()) + " " + args + " > " +
                          (dir / "stdout").string() + " 2> " + (dir / "stderr").string();
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(dir / "stdout"), Slurp(dir / "stderr")};
}

// The GenTD26 trace folder: $GPUFIT_DATA/gentd26, else beside the checkout.
inline std::string GenTd26() { return gpufit::test_paths::DataDir() + "/gentd26"; }

}  // namespace gpufit::e2e
