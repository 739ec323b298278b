// Fuzz target: the openb (FGD trace) node and pod lists.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "gpufit/ingest/files/openb_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = gpufit::fuzz::WriteInput(gpufit::fuzz::Text(data, size), "openb.csv");
  (void)gpufit::ReadOpenbNodes(path);
  (void)gpufit::ReadOpenbPods(path);
  return 0;
}
