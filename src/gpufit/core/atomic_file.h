// Writing output files atomically: readers see the old files or the whole new ones, never
// half of one.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "gpufit/core/result.h"

namespace gpufit {

// Writes each file's contents to a temporary file beside it and flushes it to disk; only
// when every temporary is complete does it rename them over their targets (rename(2) is
// atomic within one file system). If any temporary cannot be written, all are removed and
// no target is touched. Errors name the path: kInvalidArgument when the directory does
// not accept files (missing, not a directory, no permission, read-only), kInternal for
// other failures (disk full, a failed rename).
Result<void> WriteFilesAtomically(const std::vector<std::pair<std::filesystem::path, std::string>>& files);

}  // namespace gpufit
