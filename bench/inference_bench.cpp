// Benchmarks of the inference replay (sim/request_replay.h) on the real Azure LLM
// conversation trace (19,366 requests over 58 minutes; skipped without the trace):
//  * one replay through gpufit's schedule (Llama-2-13B on an A100-80GB, 8 sequences per
//    replica, TTFT <= 2 s for 99%): the target is well under a second;
//  * one replay through the static-peak count;
//  * gpufit's whole schedule search (analytic guide, repair and trim replays).
// Counters: requests, replays, SLO attainment, GPU-hours, peak RSS.
// Run: build/bench/inference_bench (or `make bench`).
#include <benchmark/benchmark.h>

#include <filesystem>
#include <optional>

#include "bench_util.h"
#include "gpufit/inference/inference_study.h"
#include "gpufit/ingest/files/request_trace_reader.h"

namespace {

using namespace gpufit;

const std::optional<PreparedService>& Service() {
  static const std::optional<PreparedService> s = []() -> std::optional<PreparedService> {
    const std::string path = bench::DataDir() + "/azure-llm-2023/AzureLLMInferenceTrace_conv.csv";
    if (!std::filesystem::exists(path)) return std::nullopt;
    InferenceServiceSpec spec;
    spec.name = "chat";
    spec.requests_path = path;
    spec.llm_model = "llama-2-13b";
    spec.llm_params.max_num_seqs = 8;
    spec.load_gb_per_s = 1;
    spec.init_s = 30;
    spec.slo = {.metric = SloMetric::kTtft, .seconds = 2, .target = 0.99};
    Result<PreparedService> p = PrepareService(spec);
    if (!p) return std::nullopt;
    return *std::move(p);
  }();
  return s;
}

void Report(benchmark::State& state, const ReplayResult& r, int replays) {
  state.counters["requests"] = static_cast<double>(r.requests);
  state.counters["replays"] = replays;
  state.counters["slo_attainment"] = r.slo_attainment;
  state.counters["gpu_hours"] = r.gpu_hours;
  state.counters["peak_rss_mib"] = bench::PeakRssMiB();
}

void BM_ReplayAzureThroughGpufitSchedule(benchmark::State& state) {
  if (!Service()) return state.SkipWithError("no Azure trace");
  const ReplicaPolicyInput in = PolicyInput(*Service());
  const PolicyOutcome g = GpufitSchedule(in);
  ReplayResult r;
  for (auto _ : state) {
    r = ReplayRequests(in.demand->trace, in.demand->times.service_s, in.demand->times.prefill_s, g.schedule,
                       ReplayOptionsFor(in));
    benchmark::DoNotOptimize(r);
  }
  Report(state, r, 1);
}
BENCHMARK(BM_ReplayAzureThroughGpufitSchedule)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ReplayAzureStaticPeak(benchmark::State& state) {
  if (!Service()) return state.SkipWithError("no Azure trace");
  const ReplicaPolicyInput in = PolicyInput(*Service());
  const ReplicaSchedule peak{.window_s = 1e18, .replicas = {5}};
  ReplayResult r;
  for (auto _ : state) {
    r = ReplayRequests(in.demand->trace, in.demand->times.service_s, in.demand->times.prefill_s, peak,
                       ReplayOptionsFor(in));
    benchmark::DoNotOptimize(r);
  }
  Report(state, r, 1);
}
BENCHMARK(BM_ReplayAzureStaticPeak)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_GpufitScheduleSearchAzure(benchmark::State& state) {
  if (!Service()) return state.SkipWithError("no Azure trace");
  const ReplicaPolicyInput in = PolicyInput(*Service());
  PolicyOutcome g;
  for (auto _ : state) {
    g = GpufitSchedule(in);
    benchmark::DoNotOptimize(g);
  }
  Report(state, g.replay, g.replays);
}
BENCHMARK(BM_GpufitScheduleSearchAzure)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
