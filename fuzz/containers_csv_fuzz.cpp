// Fuzz target: the containers CSV (timestamp_s,pod,container,image,metric,value) onto a
// fixed telemetry grid of two pods, ml/a and ml/b, sampled every 60 s from 0 to 600 s.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_input.h"
#include "gpufit/ingest/files/containers_csv.h"
#include "gpufit/ingest/files/telemetry_readers.h"

namespace {
const gpufit::Telemetry& Grid() {
  static const gpufit::Telemetry grid = [] {
    std::string csv = "timestamp_s,pod,metric,value\n";
    for (int t = 0; t <= 600; t += 60)
      for (const char* pod : {"ml/a", "ml/b"})
        csv += std::to_string(t) + "," + pod + ",DCGM_FI_DEV_FB_USED,1000\n" + std::to_string(t) + "," + pod +
               ",DCGM_FI_DEV_GPU_UTIL,50\n";
    gpufit::Result<gpufit::Telemetry> t = gpufit::ReadLongCsv(gpufit::fuzz::WriteInput(csv, "grid.csv"));
    if (!t) __builtin_trap();  // the fixed grid must read
    return std::move(*t);
  }();
  return grid;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const gpufit::Telemetry& grid = Grid();
  (void)gpufit::ReadContainersCsv(gpufit::fuzz::WriteInput(gpufit::fuzz::Text(data, size), "containers.csv"), grid);
  return 0;
}
