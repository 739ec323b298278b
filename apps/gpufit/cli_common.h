// Helpers shared by the gpufit commands.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/core/text.h"
#include "progress.h"

namespace gpufit::cli {

// How help and messages name the program: "gpufit", or "kubectl gpufit" when it runs as the
// kubectl plugin (argv[0]'s file name is kubectl-gpufit). Set once by main.
const std::string& ProgramName();
void SetProgramNameFromArgv0(const char* argv0);

// Prints "gpufit: error: MESSAGE" on stderr and returns the exit code for the error.
inline int Fail(const Error& e) {
  EraseProgressLine();  // the error starts its own line on a terminal
  std::fprintf(stderr, "%s: error: %s\n", ProgramName().c_str(), e.message.c_str());
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

// --format (-f, -o) and --out DIR, shared by the commands that write a report; --report
// FILE.html on the commands that have an HTML report (AddReportOption).
struct Output {
  std::string format = "text";  // text (Markdown; -f md), json, yaml, csv, html or table
  std::string out_dir;
  std::string report;         // --report: the HTML report's path ("" = none)
  bool format_given = false;  // -f or -o named the format (else: the table on a terminal, if any)
  bool has_table = false;     // the command's JSON is a plan (report/terminal_table.h)
  bool wide = false;          // -o wide: the table with every pod and its reason
  std::string command;        // "plan", "demo": the command whose next steps the table names
};
// -f,--format text|md|json|yaml (plus `more`: "csv" where the command has a per-pod CSV,
// "html" where it has an HTML report, which also adds --report FILE.html, "table" where its
// JSON is a plan, which also adds "wide"); -o FORMAT, kubectl's spelling of the same (a value
// that is no format is the old -o DIR: a folder for --out, with a warning); --out DIR.
// kubectl's -o on `cmd`: a value among `choices` is the format (passed to `take`, as -f's); any
// other value is the old -o DIR (kept for one release): it sets `out_dir` with a warning naming
// --out. A format word that `cmd` lacks is an error, so `-o wide` never creates a folder.
void AddShortOutputOption(CLI::App* cmd, const std::vector<std::string>& choices,
                          std::function<void(const std::string&)> take, std::string& out_dir);
void AddOutputOptions(CLI::App* cmd, Output& o, const std::vector<std::string>& more = {});
// --report FILE.html into `path` (AddOutputOptions adds it with "html"; simulate, whose
// --format is its own, adds it alone).
void AddReportOption(CLI::App* cmd, std::string& path);
// "gpufit: report written to ABSOLUTE_PATH" on stderr, unless `path` is empty or -q.
void SayReportWritten(const std::string& path);

// Checks that --out and --report (when given) can take the report, before a command computes or writes
// anything (see CheckOutputDir).
Result<void> CheckOutput(const Output& o);

// What the HTML report of a command draws (src/gpufit/report/html_report.h): the command's
// name and a title; the result is the command's JSON, `series` optional JSON text.
struct ReportRequest {
  std::string command, title, source;
  std::string series_json{};
};

// Files a command writes besides its report (manifests), and files of an earlier run it
// replaces: committed together with the report. `report`: where the command has an HTML
// report (--report, --format html); `csv`: its table for --format csv.
struct ExtraOutput {
  std::vector<std::pair<std::filesystem::path, std::string>> files;
  std::vector<std::filesystem::path> removals;
  // More removals, decided while the output folders are locked (the previous run's listing
  // must be read under the lock, or a run finishing meanwhile leaves files behind).
  std::function<std::vector<std::filesystem::path>()> removals_under_lock{};
  std::optional<ReportRequest> report{};
  std::string csv{};
};

// Prints the rendering --format asks for (text: the Markdown; json; yaml: the JSON as YAML;
// csv: extra.csv; html: the report; table: report/terminal_table.h, colour on a terminal
// unless NO_COLOR is set, reasons with -v or -o wide; no format given, a command with a table
// and stdout a terminal: the table too) and writes the JSON and Markdown into --out as STEM.json
// and STEM.md, the report into --report, with `extra`, as one commit (WriteFilesAtomically:
// the files appear together or not at all). Folders are created as needed and locked while
// the commit is made (LockOutputFolders: a second run into one folder waits up to
// kOutputLockWaitS, then fails naming the first's PID). Returns the exit code.
int Emit(const Output& o, const std::string& stem, const std::string& json, const std::string& markdown,
         const ExtraOutput& extra = {});

}  // namespace gpufit::cli
