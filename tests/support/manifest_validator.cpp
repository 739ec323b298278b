#include "manifest_validator.h"

#include <sys/wait.h>

#include <cstdio>

#include "test_paths.h"

namespace gpufit::testing {

ManifestValidation ValidateManifests(const std::vector<std::filesystem::path>& dirs) {
  std::string cmd = std::string(gpufit::test_paths::Node()) + " " +
                    gpufit::test_paths::SourcePath("tools/validate-manifests/validate.mjs");
  for (const std::filesystem::path& d : dirs) cmd += " '" + d.string() + "'";
  cmd += " 2>&1";
  ManifestValidation run;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return run;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) run.output.append(buf, n);
  const int status = ::pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

std::string ValidatedLine(std::size_t objects) { return "validated " + std::to_string(objects) + " objects\n"; }

std::size_t YamlFiles(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) n += e.path().extension() == ".yaml";
  return n;
}

}  // namespace gpufit::testing
