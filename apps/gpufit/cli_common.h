// Helpers shared by the gpufit commands.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"

namespace gpufit::cli {

// Prints "gpufit: error: MESSAGE" on stderr and returns the exit code for the error.
inline int Fail(const Error& e) {
  std::fprintf(stderr, "gpufit: error: %s\n", e.message.c_str());
  return ExitCodeFor(e.code);
}

// The GPU catalog of --catalog PATH, or the embedded data/gpu_catalog.yaml when empty.
inline Result<GpuCatalog> LoadCatalog(const std::string& path) {
  if (path.empty()) return GpuCatalog::Embedded();
  return GpuCatalog::Load(path);
}

// --format text|json and --out DIR, shared by the commands that write a report.
struct Output {
  std::string format = "text";
  std::string out_dir;
};
void AddOutputOptions(CLI::App* cmd, Output& o);

// Prints one of the two renderings and writes both into --out as STEM.json and STEM.md,
// all or nothing per file. Returns the exit code.
int Emit(const Output& o, const std::string& stem, const std::string& json, const std::string& markdown);

}  // namespace gpufit::cli
