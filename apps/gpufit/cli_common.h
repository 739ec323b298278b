// Helpers shared by the gpufit commands.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/core/text.h"
#include "progress.h"

namespace gpufit::cli {

// Prints "gpufit: error: MESSAGE" on stderr and returns the exit code for the error.
inline int Fail(const Error& e) {
  EraseProgressLine();  // the error starts its own line on a terminal
  std::fprintf(stderr, "gpufit: error: %s\n", e.message.c_str());
  return ExitCodeFor(e.code);
}

// The GPU catalog of --catalog PATH, or the embedded data/gpu_catalog.yaml when empty.
inline Result<GpuCatalog> LoadCatalog(const std::string& path) {
  if (path.empty()) return GpuCatalog::Embedded();
  return GpuCatalog::Load(path);
}

// The check of a seed flag: a whole number 0 .. 18446744073709551615 in decimal (CLI11 alone
// reads "-1" into an unsigned 64-bit seed as 18446744073709551615).
inline CLI::Validator SeedCheck() {
  return CLI::Validator(
      [](std::string& v) -> std::string {
        constexpr std::string_view kMax = "18446744073709551615";
        if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > kMax.size() ||
            (v.size() == kMax.size() && v > kMax))
          return "must be a whole number from 0 to " + std::string(kMax) + " (a 64-bit seed), got " +
                 QuoteForMessage(v);
        return {};
      },
      "UINT64");
}

// --format text|json and --out DIR, shared by the commands that write a report.
struct Output {
  std::string format = "text";
  std::string out_dir;
};
void AddOutputOptions(CLI::App* cmd, Output& o);

// Checks that --out (when given) can take the report, before a command computes or writes
// anything (see CheckOutputDir).
Result<void> CheckOutput(const Output& o);

// Files a command writes besides its report (manifests), and files of an earlier run it
// replaces: committed together with the report.
struct ExtraOutput {
  std::vector<std::pair<std::filesystem::path, std::string>> files;
  std::vector<std::filesystem::path> removals;
};

// Prints one of the two renderings and writes both into --out as STEM.json and STEM.md,
// with `extra`, as one commit (WriteFilesAtomically: the files appear together or not at
// all). Folders are created as needed. Returns the exit code.
int Emit(const Output& o, const std::string& stem, const std::string& json, const std::string& markdown,
         const ExtraOutput& extra = {});

}  // namespace gpufit::cli
