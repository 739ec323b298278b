// Fuzz target: a Prometheus /api/v1/query_range answer body.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_input.h"
#include "gpufit/ingest/prometheus_client.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  (void)gpufit::ParseQueryRangeAnswer(std::string(gpufit::fuzz::Text(data, size)), "fuzz");
  return 0;
}
