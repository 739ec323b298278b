// Benchmarks of `plan` (profiles, right-sizing, lower bound, co-location search, replay):
//  * BM_PlanGenTd26/a100_80gb, /h100_80gb and /h200_141gb: reading the real GenTD26 files and
//    planning on an 80 GiB and a 141 GiB GPU, the pods on that model today (target: under 2 s
//    on the 2-core machine), with the lower bound and the LP relaxation's value, convergence
//    and time, and the mixed-fleet plan's USD per month, GPUs and its search's own seconds
//    (part of the total) beside the same-model plan's, as counters;
//  * BM_PlanSynthetic5000: a generated 5,000-pod, one-week, one-minute cluster
//    (target: under 60 s and under 4 GiB peak memory; peak RSS is reported as a counter).
//  * BM_PlanTwoSamples/2000 and /10000: pods of 2 samples, memory 2-60 GiB and duty 0-100%
//    drawn uniformly (a dense conflict graph: issue 18 point 10 measured 107 s at 2,000
//    pods and over 15 minutes at 10,000); target: 10,000 well under a minute;
//  * BM_LowerBoundTwoSamples/2000 and /10000: the lower bound alone on the same pods (the
//    conflict graph and its greedy clique);
//  * BM_PlanDemo100000: `gpufit demo --pods 100000` (synthetic, 100,000 pods, one day of
//    one-minute samples); target: under 2 minutes.
// Run: build/bench/plan_bench (or `make bench`). GPUFIT_DATA points at the traces.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <string>

#include "bench_util.h"
#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/ingest/files/telemetry_readers.h"
#include "gpufit/ingest/synthetic_telemetry.h"
#include "gpufit/optimize/lower_bound.h"
#include "gpufit/plan/plan.h"

namespace {

using namespace gpufit;

using bench::PeakRssMiB;

void BM_PlanGenTd26(benchmark::State& state, const char* target, double lp_seconds = PlanOptions{}.lp_bound_seconds) {
  const std::string dir = bench::DataDir() + "/gentd26";
  PlanOptions options;
  options.target_gpu = target;
  options.lp_bound_seconds = lp_seconds;
  PlanTotals totals;
  FleetPlan fleet;
  for (auto _ : state) {
    const Result<Telemetry> tel = ReadGenTd26(dir);
    if (!tel) {
      state.SkipWithError(tel.error().message.c_str());
      return;
    }
    const Result<Plan> plan = BuildPlan(*tel, GpuCatalog::Embedded(), options, dir);
    totals = plan->totals;
    fleet = plan->fleet;
  }
  state.counters["gpus_after"] = static_cast<double>(totals.gpus_after);
  state.counters["usd_per_month_same_model"] = totals.usd_per_month_after;
  state.counters["fleet_usd_per_month"] = fleet.usd_per_month;
  state.counters["fleet_gpus"] = static_cast<double>(fleet.gpus.size() + fleet.kept_gpus);
  state.counters["fleet_seconds"] = fleet.seconds;
  state.counters["gpus_lower_bound"] = static_cast<double>(totals.gpus_lower_bound);
  state.counters["lp_value"] = totals.lower_bound.lp_value;
  state.counters["lp_converged"] = totals.lower_bound.lp_converged ? 1 : 0;
  state.counters["lp_seconds"] = totals.lower_bound.lp_seconds;
  state.counters["peak_rss_mib"] = PeakRssMiB();
}
BENCHMARK_CAPTURE(BM_PlanGenTd26, a100_80gb, "a100-80gb")->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK_CAPTURE(BM_PlanGenTd26, h100_80gb, "h100-80gb")->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK_CAPTURE(BM_PlanGenTd26, h200_141gb, "h200-141gb")->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
// The LP relaxation at 141 GiB given 20x its default CPU-time guard: how far it is from converging.
BENCHMARK_CAPTURE(BM_PlanGenTd26, h200_141gb_lp60s, "h200-141gb", 60.0)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

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

// `pods` pods over 2 one-minute samples, memory uniform in [2000, 60000] MiB and duty
// cycle uniform in [0, 100] %, as a long CSV of random values would give.
Telemetry TwoSamplePods(std::size_t pods) {
  std::mt19937_64 rng(1);
  std::uniform_int_distribution<int> mem(2000, 60000), util(0, 100);
  Telemetry t;
  t.samples = 2;
  for (std::size_t p = 0; p < pods; ++p) {
    PodSeries s{.pod = "pod-" + std::to_string(p), .fb_used_mib = {}, .gpu_util_pct = {}, .last = 1};
    for (int k = 0; k < 2; ++k) {
      s.fb_used_mib.push_back(static_cast<float>(mem(rng)));
      s.gpu_util_pct.push_back(static_cast<float>(util(rng)));
    }
    t.pods.push_back(std::move(s));
  }
  std::sort(t.pods.begin(), t.pods.end(), [](const PodSeries& a, const PodSeries& b) { return a.pod < b.pod; });
  return t;
}

void BM_PlanTwoSamples(benchmark::State& state) {
  const Telemetry tel = TwoSamplePods(static_cast<std::size_t>(state.range(0)));
  PlanOptions options;
  options.target_gpu = "h100-80gb";
  std::size_t gpus = 0, lb = 0;
  for (auto _ : state) {
    const Result<Plan> plan = BuildPlan(tel, GpuCatalog::Embedded(), options, "two-samples");
    gpus = plan->totals.gpus_after;
    lb = plan->totals.gpus_lower_bound;
  }
  state.counters["gpus_after"] = static_cast<double>(gpus);
  state.counters["gpus_lower_bound"] = static_cast<double>(lb);
  state.counters["peak_rss_mib"] = PeakRssMiB();
}
BENCHMARK(BM_PlanTwoSamples)->Arg(2000)->Arg(10000)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

void BM_LowerBoundTwoSamples(benchmark::State& state) {
  const Telemetry tel = TwoSamplePods(static_cast<std::size_t>(state.range(0)));
  std::vector<std::size_t> pods(tel.pods.size());
  for (std::size_t i = 0; i < pods.size(); ++i) pods[i] = i;
  GpuLowerBound lb;
  for (auto _ : state) lb = LowerBound(tel, pods, 81920, 0);  // 80 GiB, no collision allowed
  state.counters["conflict_clique"] = static_cast<double>(lb.conflict_clique);
  state.counters["clique_seeds_tried"] = static_cast<double>(lb.clique_seeds_tried);
}
BENCHMARK(BM_LowerBoundTwoSamples)->Arg(2000)->Arg(10000)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

void BM_PlanDemo100000(benchmark::State& state) {
  const Telemetry tel = GenerateSyntheticTelemetry({.pods = 100000});
  PlanOptions options;
  options.target_gpu = "h100-80gb";
  std::size_t gpus = 0, lb = 0;
  for (auto _ : state) {
    const Result<Plan> plan = BuildPlan(tel, GpuCatalog::Embedded(), options, "demo-100000");
    gpus = plan->totals.gpus_after;
    lb = plan->totals.gpus_lower_bound;
  }
  state.counters["gpus_after"] = static_cast<double>(gpus);
  state.counters["gpus_lower_bound"] = static_cast<double>(lb);
  state.counters["peak_rss_mib"] = PeakRssMiB();
}
BENCHMARK(BM_PlanDemo100000)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
