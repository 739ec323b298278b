#include "cli_common.h"

#include <filesystem>
#include <iostream>

#include "gpufit/core/atomic_file.h"

namespace gpufit::cli {

void AddOutputOptions(CLI::App* cmd, Output& o) {
  cmd->add_option("--format", o.format, "what to print: text (Markdown) or json")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--out", o.out_dir, "also write the report files into this directory (atomically)")
      ->check(
          CLI::Validator([](std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); },
                         "DIR", "non-empty"));
}

int Emit(const Output& o, const std::string& stem, const std::string& json, const std::string& markdown) {
  if (!o.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.out_dir, ec);
    if (ec) return Fail(InvalidArgument("--out {}: cannot create the directory: {}", o.out_dir, ec.message()));
    const auto dir = std::filesystem::path(o.out_dir);
    if (Result<void> r = WriteFilesAtomically({{dir / (stem + ".json"), json}, {dir / (stem + ".md"), markdown}}); !r) {
      return Fail(r.error());
    }
  }
  std::cout << (o.format == "json" ? json : markdown);
  return 0;
}

}  // namespace gpufit::cli
