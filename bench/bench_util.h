// Helpers shared by the benchmarks.
#pragma once

#include <sys/resource.h>

#include <cstdlib>
#include <string>

#include "test_paths.h"

namespace gpufit::bench {

inline double PeakRssMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// The real public traces: $GPUFIT_DATA, else ../shared/data beside the checkout.
using gpufit::test_paths::DataDir;

}  // namespace gpufit::bench
