// Fuzz target: plan.json as `gpufit replay` reads it (apps/gpufit/replay_plan_file.h), against
// the embedded GPU catalog and a fixed telemetry of four pods, p0..p3; both the by-name
// checks and the by-workload ones (plans made with --pods). Built with JSON_DIAGNOSTICS=1
// as the app is.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_input.h"
#include "gpufit/core/json_input.h"
#include "gpufit/ingest/files/telemetry_readers.h"
#include "replay_plan_file.h"

namespace {
const gpufit::Telemetry& FourPods() {
  static const gpufit::Telemetry tel = [] {
    std::string csv = "timestamp_s,pod,metric,value\n";
    for (int t = 0; t <= 300; t += 60)
      for (int p = 0; p < 4; ++p)
        csv += std::to_string(t) + ",p" + std::to_string(p) + ",DCGM_FI_DEV_FB_USED," + std::to_string(1000 * (p + 1)) +
               "\n" + std::to_string(t) + ",p" + std::to_string(p) + ",DCGM_FI_DEV_GPU_UTIL,20\n";
    gpufit::Result<gpufit::Telemetry> t = gpufit::ReadLongCsv(gpufit::fuzz::WriteInput(csv, "tel.csv"));
    if (!t) __builtin_trap();  // the fixed telemetry must read
    return std::move(*t);
  }();
  return tel;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpufit;
  using namespace gpufit::cli;
  const Result<json> plan = ParseJson<json>(fuzz::Text(data, size), "plan.json");
  if (!plan) return 0;
  try {
    const Result<Limits> limits = ReadLimits(*plan, GpuCatalog::Embedded(), "plan.json");
    if (!limits) return 0;
    (void)ReadCaps(*plan, "plan.json");
    (void)GroupsByName(*plan, FourPods(), *limits, "plan.json", "tel.csv");
    (void)ReadWorkloadPlan(*plan, "plan.json");
  } catch (const json::exception& e) {
    (void)FieldError(e);
  }
  return 0;
}
