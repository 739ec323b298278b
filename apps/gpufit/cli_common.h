// Helpers shared by the gpufit commands.
#pragma once

#include <cstdio>

#include "gpufit/core/result.h"

namespace gpufit::cli {

// Prints "gpufit: error: MESSAGE" on stderr and returns the exit code for the error.
inline int Fail(const Error& e) {
  std::fprintf(stderr, "gpufit: error: %s\n", e.message.c_str());
  return ExitCodeFor(e.code);
}

}  // namespace gpufit::cli
