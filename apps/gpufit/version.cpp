#include "version.h"

#include "gpufit_git_commit.h"  // generated in the build tree: GPUFIT_GIT_COMMIT

namespace gpufit::cli {

std::string VersionText() { return "gpufit " GPUFIT_VERSION " (git " GPUFIT_GIT_COMMIT ")"; }

}  // namespace gpufit::cli
