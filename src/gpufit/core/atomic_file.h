// Writing output files atomically: readers see the old file or the whole new one,
// never half of it.
#pragma once

#include <filesystem>
#include <string_view>

#include "gpufit/core/result.h"

namespace gpufit {

// Writes `contents` to a temporary file beside `path`, flushes it to disk, then renames
// it over `path` (rename(2) is atomic within one file system). On any failure the
// temporary file is removed, `path` is untouched, and the error (kInternal) names it.
Result<void> WriteFileAtomically(const std::filesystem::path& path, std::string_view contents);

}  // namespace gpufit
