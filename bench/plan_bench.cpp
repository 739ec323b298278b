// Benchmarks of `plan` (profiles, right-sizing, lower bound, co-location search, replay):
//  * BM_PlanGenTd26: reading the real GenTD26 files and planning on an 80 GiB GPU
//    (target: well under 2 s on the 2-core machine);
//  * BM_PlanSynthetic5000: a generated 5,000-pod, one-week, one-minute cluster
//    (target: under 60 s and under 4 GiB peak memory; peak RSS is reported as a counter).
// Run: build/bench/plan_bench (or `make bench`). GPUFIT_DATA points at the traces.
#include <benchmark/benchmark.h>

#include <string>

#include "bench_util.h"
#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/ingest/synthetic_telemetry.h"
#include "gpufit/ingest/telemetry_readers.h"
#include "gpufit/plan/plan.h"

namespace {

using namespace gpufit;

using bench::PeakRssMiB;

void BM_PlanGenTd26(benchmark::State& state) {
  const std::string dir = bench::DataDir() + "/gentd26";
  PlanOptions options;
  options.target_gpu = "a100-80gb";
  std::size_t gpus = 0;
  for (auto _ : state) {
    const Result<Telemetry> tel = ReadGenTd26(dir);
    if (!tel) {
      state.SkipWithError(tel.error().message.c_str());
      return;
    }
    const Result<Plan> plan = BuildPlan(*tel, GpuCatalog::Embedded(), options, dir);
    gpus = plan->totals.gpus_after;
  }
  state.counters["gpus_after"] = static_cast<double>(gpus);
  state.counters["peak_rss_mib"] = PeakRssMiB();
}
BENCHMARK(BM_PlanGenTd26)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

void BM_PlanSynthetic5000(benchmark::State& state) {
  const Telemetry tel = GenerateSyntheticTelemetry({.pods = 5000, .samples = 7 * 24 * 60, .step_s = 60, .seed = 11});
  PlanOptions options;
  options.target_gpu = "h100-80gb";
  std::size_t gpus = 0, ffd = 0, lb = 0;
  for (auto _ : state) {
    const Result<Plan> plan = BuildPlan(tel, GpuCatalog::Embedded(), options, "synthetic-5000");
    gpus = plan->totals.gpus_after;
    ffd = plan->totals.gpus_first_fit_decreasing;
    lb = plan->totals.gpus_lower_bound;
  }
  state.counters["gpus_after"] = static_cast<double>(gpus);
  state.counters["gpus_ffd"] = static_cast<double>(ffd);
  state.counters["gpus_lower_bound"] = static_cast<double>(lb);
  state.counters["peak_rss_mib"] = PeakRssMiB();
}
BENCHMARK(BM_PlanSynthetic5000)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
