#include "cli_common.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "cli_app.h"
#include "gpufit/core/atomic_file.h"
#include "gpufit/core/output_lock.h"
#include "gpufit/report/html_report.h"
#include "gpufit/report/terminal_table.h"
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

// The formats -o takes as kubectl's -o (and gpufit's -f): a value of these that the command
// lacks is an error, not a folder.
constexpr const char* kFormatWords[] = {"text", "md", "json", "yaml", "csv", "html", "table", "wide"};

// The table's width: the terminal's when it is narrower than 120 columns, else 120.
std::size_t TableWidth() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 60 && ws.ws_col < 120) return ws.ws_col;
  return 120;
}

// The commands to run after the plan, for the table's last lines.
std::vector<std::string> NextCommands(const Output& o, const ExtraOutput& extra) {
  const std::string& program = ProgramName();
  std::vector<std::string> next;
  if (!o.report.empty()) {
    std::error_code ec;
    const std::filesystem::path shown = std::filesystem::absolute(o.report, ec);
    next.push_back("next: open the report " + (ec ? o.report : shown.string()));
  } else {
    next.push_back("next: add --report plan.html for the report with charts, or -o wide for every pod's reason");
  }
  std::string manifests;
  for (const auto& [path, text] : extra.files)
    if (path.filename() == "README.md") manifests = path.parent_path().string();
  if (!manifests.empty())
    next.push_back("next: review " + manifests + "/README.md, then kubectl apply --server-side -f " + manifests);
  else if (o.command == "plan")
    next.push_back("next: add --emit-manifests DIR for the Kubernetes objects that apply the plan");
  if (o.command == "plan")
    next.push_back("next: " + program + " backtest with the same --telemetry/--prometheus: does the plan hold later?");
  return next;
}

}  // namespace

const std::string& ProgramName() {
  static std::string name = "gpufit";
  return name;
}

void SetProgramNameFromArgv0(const char* argv0) {
  if (argv0 != nullptr && std::filesystem::path(argv0).filename() == "kubectl-gpufit")
    const_cast<std::string&>(ProgramName()) = "kubectl gpufit";
}

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

void AddShortOutputOption(CLI::App* cmd, const std::vector<std::string>& choices,
                          std::function<void(const std::string&)> take, std::string& out_dir) {
  cmd->add_option_function<std::string>(
         "-o",
         [cmd, take = std::move(take), choices, &out_dir](const std::string& v) {
           if (std::find(choices.begin(), choices.end(), v) != choices.end()) return take(v);
           if (std::find(std::begin(kFormatWords), std::end(kFormatWords), v) != std::end(kFormatWords))
             throw CLI::ValidationError("-o", fmt::format("{} is not a format of {} {} ({})", v, ProgramName(),
                                                          CommandPath(*cmd), fmt::join(choices, ", ")));
           if (v.empty()) throw CLI::ValidationError("-o", "must not be empty");
           std::fprintf(stderr,
                        "%s: warning: -o DIR is deprecated: -o is the format now, as kubectl's (%s); use --out %s\n",
                        ProgramName().c_str(), fmt::format("{}", fmt::join(choices, "|")).c_str(), v.c_str());
           out_dir = v;
         },
         "the format, as kubectl's -o: the same as -f (a folder here is the old -o DIR, deprecated: use --out)")
      ->type_name("FORMAT:{" + fmt::format("{}", fmt::join(choices, ",")) + "}");
}

void AddOutputOptions(CLI::App* cmd, Output& o, const std::vector<std::string>& more) {
  std::vector<std::string> choices = {"text", "md", "json", "yaml"};
  for (const std::string& m : more) {
    choices.push_back(m);
    if (m == "table") choices.push_back("wide");
  }
  o.has_table = std::find(more.begin(), more.end(), "table") != more.end();
  // md is text; wide is the table with every pod and its reason.
  const auto take = [&o](const std::string& v) {
    o.format_given = true;
    o.format = v == "md" ? "text" : v == "wide" ? "table" : v;
    o.wide = v == "wide";
  };
  const std::string choice_list = fmt::format("{}", fmt::join(choices, ", "));
  cmd->add_option_function<std::string>(
         "-f,--format", take,
         fmt::format("what to print: {} (text and md: Markdown{}{}; default: {})", choice_list,
                     std::find(more.begin(), more.end(), "html") != more.end() ? "; html: the report" : "",
                     o.has_table ? "; table: one row per pod, 120 columns; wide: with reasons" : "",
                     o.has_table ? "the table on a terminal, else Markdown" : "Markdown"))
      ->check(CLI::IsMember(choices));
  AddShortOutputOption(cmd, choices, take, o.out_dir);
  if (std::find(more.begin(), more.end(), "html") != more.end()) AddReportOption(cmd, o.report);
  cmd->add_option("--out", o.out_dir, "also write the report files into this directory (atomically)")
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
  const bool terminal = ::isatty(STDOUT_FILENO) != 0;
  // No format given on a terminal: the table, unless the JSON is no plan of pods (a plan of
  // training or inference alone).
  if (o.format == "table" || (o.has_table && !o.format_given && o.format == "text" && terminal &&
                              nlohmann::json::parse(json, nullptr, false).contains("pods"))) {
    const char* no_colour = std::getenv("NO_COLOR");
    Result<std::string> table =
        report::RenderTerminalTable(json, {.width = terminal ? TableWidth() : 120,
                                           .colour = terminal && (no_colour == nullptr || *no_colour == '\0'),
                                           .reasons = o.wide || Verbose(),
                                           .max_rows = o.wide ? std::size_t{0} : std::size_t{25},
                                           .next = NextCommands(o, extra)});
    if (!table) return Fail(table.error());
    std::cout << *table;
  } else if (o.format == "json")
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
