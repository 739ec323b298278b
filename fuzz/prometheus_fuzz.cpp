// Fuzz target: a Prometheus /api/v1/query_range answer body, and the same bytes as an
// /api/v1/series answer (both readers of prometheus_answer.cpp).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_input.h"
#include "gpufit/ingest/prometheus/client.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string body(gpufit::fuzz::Text(data, size));
  (void)gpufit::ParseQueryRangeAnswer(body, "fuzz");
  (void)gpufit::ParseSeriesAnswer(body, "fuzz");
  return 0;
}
