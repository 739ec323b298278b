#include "cli_common.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <nlohmann/json.hpp>

#include "gpufit/core/atomic_file.h"
#include "progress.h"
#include "gpufit/report/html_report.h"
#include "version.h"

namespace gpufit::cli {

namespace {

// The JSON document as YAML (yaml-cpp), keys in the JSON's order.
YAML::Node ToYaml(const nlohmann::ordered_json& j) {
  YAML::Node n;
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::object:
      n = YAML::Node(YAML::NodeType::Map);
      for (const auto& [k, v] : j.items()) n[k] = ToYaml(v);
      break;
    case nlohmann::ordered_json::value_t::array:
      n = YAML::Node(YAML::NodeType::Sequence);
      for (const auto& v : j) n.push_back(ToYaml(v));
      break;
    case nlohmann::ordered_json::value_t::string: n = j.get<std::string>(); break;
    case nlohmann::ordered_json::value_t::boolean: n = j.get<bool>(); break;
    case nlohmann::ordered_json::value_t::number_integer: n = j.get<std::int64_t>(); break;
    case nlohmann::ordered_json::value_t::number_unsigned: n = j.get<std::uint64_t>(); break;
    case nlohmann::ordered_json::value_t::number_float: n = j.get<double>(); break;
    default: n = YAML::Node(YAML::NodeType::Null);
  }
  return n;
}

std::string JsonToYaml(const std::string& json) {
  YAML::Emitter out;
  out << ToYaml(nlohmann::ordered_json::parse(json));
  return std::string(out.c_str()) + "\n";
}

}  // namespace

void AddOutputOptions(CLI::App* cmd, Output& o, const std::vector<std::string>& more) {
  std::vector<std::string> choices = {"text", "json", "yaml"};
  choices.insert(choices.end(), more.begin(), more.end());
  cmd->add_option("-f,--format", o.format,
                  fmt::format("what to print: {} (text is Markdown{})", fmt::join(choices, ", "),
                              std::find(more.begin(), more.end(), "html") != more.end() ? "; html the report" : ""))
      ->check(CLI::IsMember(choices));
  if (std::find(more.begin(), more.end(), "html") != more.end())
    cmd->add_option("--report", o.report,
                    "also write the HTML report to this file: one self-contained page (charts drawn with the "
                    "embedded Apache ECharts; nothing is fetched when it is viewed)")
        ->check(CLI::Validator(
            [](std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); }, "FILE.html",
            "non-empty"));
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
  if (!files.empty() || !extra.removals.empty())
    if (Result<void> r = WriteFilesAtomically(files, extra.removals); !r) return Fail(r.error());
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
  if (!o.report.empty()) {
    std::error_code ec;
    const std::filesystem::path shown = std::filesystem::absolute(o.report, ec);
    std::fprintf(stderr, "gpufit: report written to %s\n", (ec ? o.report : shown.string()).c_str());
  }
  return 0;
}

}  // namespace gpufit::cli
