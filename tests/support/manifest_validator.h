// Runs tools/validate-manifests/validate.mjs (Node.js; installed by scripts/bootstrap) on
// folders of emitted Kubernetes objects: every *.yaml is checked against its apiVersion/kind's
// schema, unknown fields included, patches as the folder's README.md declares them.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace gpufit::testing {

struct ManifestValidation {
  int exit_code = -1;  // 0 all valid, 1 errors, 2 usage
  std::string output;  // one `FILE: /json/path: message` line per error, then a summary line
};

ManifestValidation ValidateManifests(const std::vector<std::filesystem::path>& dirs);

// The summary line of a run that found no error in `objects` objects.
std::string ValidatedLine(std::size_t objects);

// The number of *.yaml files in `dir` (what ValidateManifests should count).
std::size_t YamlFiles(const std::filesystem::path& dir);

}  // namespace gpufit::testing
