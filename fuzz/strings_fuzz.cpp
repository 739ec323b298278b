// Fuzz target: the short strings of flags and fields: Kubernetes quantities, RFC 3339 and
// trace timestamps, Prometheus durations, and MIG profile names and instance lists
// (PROFILE@START,..., as `gpufit mig free --instances` takes them) on every GPU of the
// embedded MIG catalog.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "gpufit/catalog/mig_catalog.h"
#include "gpufit/core/rfc3339.h"
#include "gpufit/core/text.h"
#include "gpufit/ingest/files/request_trace_reader.h"
#include "gpufit/ingest/kube/k8s_quantity.h"
#include "gpufit/ingest/prometheus/client.h"
#include "gpufit/placement/mig_layout.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpufit;
  const std::string_view text = fuzz::Text(data, size);
  (void)ParseQuantity(text);
  (void)CpuQuantity(text);
  (void)MemoryQuantity(text);
  (void)DeviceQuantity(text);
  (void)ParseRfc3339(text);
  (void)ParseUtcTimestamp(text);
  (void)ParsePrometheusDuration(text);
  for (const MigGpu& gpu : MigCatalog::Embedded().gpus()) {
    (void)gpu.Profile(text);
    std::vector<MigInstance> instances;
    bool ok = true;
    for (const std::string& item : SplitList(text, ',')) {
      const std::size_t at = item.find('@');
      const Result<const MigProfile*> p = gpu.Profile(item.substr(0, at));
      int start = 0;
      if (!p || at == std::string::npos ||
          std::from_chars(item.data() + at + 1, item.data() + item.size(), start).ec != std::errc()) {
        ok = false;
        break;
      }
      instances.push_back({*p, start});
    }
    if (ok && ValidateMigInstances(gpu, instances)) {
      (void)FreeMigCapacity(gpu, instances);
      std::vector<const MigProfile*> profiles;
      for (const MigInstance& i : instances) profiles.push_back(i.profile);
      (void)CheckMigLayout(gpu, profiles);
    }
  }
  return 0;
}
