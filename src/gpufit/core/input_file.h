// Checking an input path before a reader opens it, so that each way it can be wrong gets its
// own message: missing, a directory, not a regular file (a FIFO, a device), unreadable.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

#include "gpufit/core/result.h"

namespace gpufit {

// OK when `path` is a regular file this process may read. Errors name the path: kNotFound
// "P: no such file"; kInvalidArgument "P: is a directory, not a file" and "P: not a regular
// file"; kNotFound "P: cannot read it: Permission denied".
inline Result<void> CheckInputFile(const std::string& path) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st)) return NotFound("{}: no such file", path);
  if (std::filesystem::is_directory(st)) return InvalidArgument("{}: is a directory, not a file", path);
  if (!std::filesystem::is_regular_file(st)) return InvalidArgument("{}: not a regular file", path);
  if (access(path.c_str(), R_OK) != 0) return NotFound("{}: cannot read it: {}", path, std::strerror(errno));
  return {};
}

}  // namespace gpufit
