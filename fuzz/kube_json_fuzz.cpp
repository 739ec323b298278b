// Fuzz target: `kubectl get nodes -o json` and `kubectl get pods -A -o json`.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "gpufit/ingest/kube/kube_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = gpufit::fuzz::WriteInput(gpufit::fuzz::Text(data, size), "kube.json");
  (void)gpufit::ReadKubeNodes(path);
  (void)gpufit::ReadKubePods(path);
  return 0;
}
