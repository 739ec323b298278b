// Fuzz target: the GenTD26 serving files (qps.csv, queue_rt_raw_anon.csv,
// basemodel_update_latency_anon.csv), each reader on the same input.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "gpufit/ingest/files/gentd26_serving_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpufit;
  const std::string path = fuzz::WriteInput(fuzz::Text(data, size), "serving.csv");
  (void)ReadGenTd26Qps(path, "predict");
  (void)ReadGenTd26LatencySeconds(path);
  (void)ReadGenTd26ModelLoads(path);
  return 0;
}
