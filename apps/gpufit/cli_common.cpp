#include "cli_common.h"

#include <filesystem>
#include <iostream>

#include "gpufit/core/atomic_file.h"
#include "progress.h"

namespace gpufit::cli {

void AddOutputOptions(CLI::App* cmd, Output& o) {
  cmd->add_option("-f,--format", o.format, "what to print: text (Markdown) or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("-o,--out", o.out_dir, "also write the report files into this directory (atomically)")
      ->check(
          CLI::Validator([](std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); },
                         "DIR", "non-empty"));
}

Result<void> CheckOutput(const Output& o) {
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
  files.insert(files.end(), extra.files.begin(), extra.files.end());
  for (const auto& [path, text] : files) {
    std::error_code ec;
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
    if (ec)
      return Fail(InvalidArgument("{}: cannot create the directory: {}", path.parent_path().string(), ec.message()));
  }
  if (!files.empty() || !extra.removals.empty())
    if (Result<void> r = WriteFilesAtomically(files, extra.removals); !r) return Fail(r.error());
  std::cout << (o.format == "json" ? json : markdown);
  return 0;
}

}  // namespace gpufit::cli
