// Fuzz target: the telemetry files. The input is read as a long CSV (timestamp_s,pod,metric,
// value) and as both files of a GenTD26 directory (timestamp_anon,value,container_ip).
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "gpufit/ingest/files/telemetry_readers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpufit;
  const std::string_view text = fuzz::Text(data, size);
  (void)ReadLongCsv(fuzz::WriteInput(text, "long.csv"));
  fuzz::WriteInput(text, kGenTd26MemoryFile);
  fuzz::WriteInput(text, kGenTd26DutyFile);
  (void)ReadGenTd26(fuzz::ScratchDir().string());
  return 0;
}
