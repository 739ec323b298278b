// Fuzz target: the request traces: Azure LLM inference (2023), the generic request CSV and
// the GenTD26 LoRA request trace.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "gpufit/ingest/files/lora_request_reader.h"
#include "gpufit/ingest/files/request_trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = gpufit::fuzz::WriteInput(gpufit::fuzz::Text(data, size), "requests.csv");
  (void)gpufit::ReadAzureLlmTrace(path);
  (void)gpufit::ReadGenericRequestTrace(path);
  (void)gpufit::ReadLoraRequestTrace(path);
  return 0;
}
