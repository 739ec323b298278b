// What `gpufit --version` prints.
#pragma once

#include <string>

namespace gpufit::cli {

// "gpufit 0.1.0 (git 1a2b3c4)": the project version (CMakeLists.txt) and the short git commit
// the binary was built from ("unknown" when built outside a git checkout). The commit is read
// at each build (apps/gpufit/git_commit.cmake), so it follows HEAD.
std::string VersionText();

}  // namespace gpufit::cli
