// Fuzz targets: the YAML inputs. Built once per reader, chosen by GPUFIT_FUZZ_YAML:
// 1 training workload, 2 inference services, 3 GPU catalog, 4 MIG profiles.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.h"
#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/catalog/mig_catalog.h"
#include "gpufit/inference/service_spec.h"
#include "gpufit/training/workload_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpufit;
  const std::string_view text = fuzz::Text(data, size);
#if GPUFIT_FUZZ_YAML == 1
  (void)ReadTrainingWorkload(fuzz::WriteInput(text, "training.yaml"));
#elif GPUFIT_FUZZ_YAML == 2
  (void)ReadInferenceServices(fuzz::WriteInput(text, "services.yaml"));
#elif GPUFIT_FUZZ_YAML == 3
  (void)GpuCatalog::Parse(text, "fuzz.yaml");
#elif GPUFIT_FUZZ_YAML == 4
  (void)MigCatalog::Parse(text, "fuzz.yaml");
#endif
  return 0;
}
