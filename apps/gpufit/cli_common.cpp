#include "cli_common.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <iterator>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>

#include "gpufit/core/atomic_file.h"
#include "gpufit/core/output_lock.h"
#include "gpufit/report/html_report.h"
#include "progress.h"
#include "version.h"

namespace gpufit::cli {

namespace {

// A string a YAML 1.1 reader would take for something else: a number or a time in base 60
// ("11:00" is 660 to PyYAML), a boolean or null word, or anything empty or padded. Such
// strings are written double-quoted; yaml-cpp quotes only the YAML 1.2 ones.
bool AmbiguousInYaml(const std::string& v) {
  if (v.empty() || v.front() == ' ' || v.back() == ' ') return true;
  if (v.find_first_not_of("0123456789:.+-_eE") == std::string::npos) return true;
  static const char* const kWords[] = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~"};
  std::string lower;
  for (char c : v) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::find(std::begin(kWords), std::end(kWords), lower) != std::end(kWords);
}

// The JSON document as YAML (yaml-cpp's emitter), keys in the JSON's order.
void EmitYaml(YAML::Emitter& out, const nlohmann::ordered_json& j) {
  using T = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case T::object:
      out << YAML::BeginMap;
      for (const auto& [k, v] : j.items()) {
        out << YAML::Key;
        if (AmbiguousInYaml(k)) out << YAML::DoubleQuoted;
        out << k << YAML::Value;
        EmitYaml(out, v);
      }
      out << YAML::EndMap;
      break;
    case T::array:
      out << YAML::BeginSeq;
      for (const auto& v : j) EmitYaml(out, v);
      out << YAML::EndSeq;
      break;
    case T::string: {
      const std::string& v = j.get_ref<const std::string&>();
      if (AmbiguousInYaml(v)) out << YAML::DoubleQuoted;
      out << v;
      break;
    }
    case T::boolean: out << j.get<bool>(); break;
    case T::number_integer: out << j.get<std::int64_t>(); break;
    case T::number_unsigned: out << j.get<std::uint64_t>(); break;
    case T::number_float: out << j.get<double>(); break;
    default: out << YAML::Null;
  }
}

std::string JsonToYaml(const std::string& json) {
  YAML::Emitter out;
  EmitYaml(out, nlohmann::ordered_json::parse(json));
  return std::string(out.c_str()) + "\n";
}

}  // namespace

void AddReportOption(CLI::App* cmd, std::string& path) {
  cmd->add_option("--report", path,
                  "also write the HTML report to this file: one self-contained page (charts drawn with the "
                  "embedded Apache ECharts; nothing is fetched when it is viewed)")
      ->check(CLI::Validator(
          [](std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); }, "FILE.html",
          "non-empty"));
}

void SayReportWritten(const std::string& path) {
  if (path.empty() || Quiet()) return;  // -q: only errors and warnings on stderr
  std::error_code ec;
  const std::filesystem::path shown = std::filesystem::absolute(path, ec);
  std::fprintf(stderr, "gpufit: report written to %s\n", (ec ? path : shown.string()).c_str());
}

void AddOutputOptions(CLI::App* cmd, Output& o, const std::vector<std::string>& more) {
  std::vector<std::string> choices = {"text", "json", "yaml"};
  choices.insert(choices.end(), more.begin(), more.end());
  cmd->add_option("-f,--format", o.format,
                  fmt::format("what to print: {} (text is Markdown{})", fmt::join(choices, ", "),
                              std::find(more.begin(), more.end(), "html") != more.end() ? "; html the report" : ""))
      ->check(CLI::IsMember(choices));
  if (std::find(more.begin(), more.end(), "html") != more.end()) AddReportOption(cmd, o.report);
  cmd->add_option("-o,--out", o.out_dir, "also write the report files into this directory (atomically)")
      ->check(
          CLI::Validator([](std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); },
                         "DIR", "non-empty"));
}

Result<void> CheckOutput(const Output& o) {
  if (!o.report.empty()) {
    const std::filesystem::path report(o.report);
    std::error_code ec;
    if (std::filesystem::is_directory(report, ec))
      return InvalidArgument("--report {}: is a directory (give the file to write, e.g. report.html)", o.report);
    if (report.has_parent_path())
      if (Result<void> ok = CheckOutputDir(report.parent_path().string(), "--report"); !ok) return ok;
  }
  if (o.out_dir.empty()) return {};
  return CheckOutputDir(o.out_dir, "--out");
}


int Emit(const Output& o, const std::string& stem, const std::string& json, const std::string& markdown,
         const ExtraOutput& extra) {
  Phase("write");
  if (Result<void> ok = CheckOutput(o); !ok) return Fail(ok.error());
  std::vector<std::pair<std::filesystem::path, std::string>> files;
  if (!o.out_dir.empty()) {
    const auto dir = std::filesystem::path(o.out_dir);
    files = {{dir / (stem + ".json"), json}, {dir / (stem + ".md"), markdown}};
  }
  std::string html;
  if (!o.report.empty() || o.format == "html") {
    if (!extra.report) return Fail(Internal("{}: this command has no HTML report", stem));
    const ReportRequest& r = *extra.report;
    html = report::RenderHtmlReport(r.title,
                                    report::ReportData(r.command, r.title, r.source, VersionText(), json, r.series_json));
    if (!o.report.empty()) files.emplace_back(o.report, html);
  }
  files.insert(files.end(), extra.files.begin(), extra.files.end());
  for (const auto& [path, text] : files) {
    std::error_code ec;
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
    if (ec)
      return Fail(InvalidArgument("{}: cannot create the directory: {}", path.parent_path().string(), ec.message()));
  }
  if (!files.empty()) {
    // One run at a time per folder, from the listing of the previous run's files (removals)
    // to the end of the commit: two runs into one --out must not leave a mix.
    // The --report file alone is not a reason to lock its folder (often the working
    // directory, which would keep a .gpufit-lock): one file cannot mix, and beside --out it
    // is committed under --out's lock.
    std::vector<std::pair<std::filesystem::path, std::string>> folders;
    for (const auto& [path, text] : files) {
      if (!o.report.empty() && path == std::filesystem::path(o.report)) continue;
      const std::filesystem::path dir = path.parent_path();
      folders.emplace_back(
          dir, !o.out_dir.empty() && dir == std::filesystem::path(o.out_dir) ? "--out" : "--emit-manifests");
    }
    Result<OutputLock> lock = LockOutputFolders(folders, kOutputLockWaitS);
    if (!lock) return Fail(lock.error());
    std::vector<std::filesystem::path> removals = extra.removals;
    if (extra.removals_under_lock)
      for (std::filesystem::path& r : extra.removals_under_lock()) removals.push_back(std::move(r));
    if (Result<void> r = WriteFilesAtomically(files, removals); !r) return Fail(r.error());
  }
  if (o.format == "json")
    std::cout << json;
  else if (o.format == "yaml")
    std::cout << JsonToYaml(json);
  else if (o.format == "csv")
    std::cout << extra.csv;
  else if (o.format == "html")
    std::cout << html;
  else
    std::cout << markdown;
  SayReportWritten(o.report);
  return 0;
}

}  // namespace gpufit::cli
