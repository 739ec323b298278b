// Benchmarks of the Prometheus source's client-side work, on synthetic answers of
// dcgm-exporter series (no server: the network and Prometheus are not measured):
//  * parsing one query_range answer at the point limit: 200 series x 11,000 points;
//  * turning a week at 60 s of 500 pods' memory and duty series (10,080 points each) into
//    the telemetry grid (label mapping, lifetime checks, alignment).
// Counters: samples, answer MiB, peak RSS of the process, and parse_peak_heap_mib: the
// largest heap the parse itself held at once (its output included, the answer text it reads
// excluded), from a counting operator new/delete in this binary (glibc malloc_usable_size).
// The answer's own bytes plus that peak is the parse's memory high-water mark; it is
// compared with the answer's size (issue 19: under 2x the answer).
// Run: build/bench/prometheus_bench (or `make bench`).
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

namespace {
std::atomic<std::size_t> live_heap{0}, peak_heap{0};
void* Counted(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  const std::size_t now = live_heap += malloc_usable_size(p);
  std::size_t peak = peak_heap.load();
  while (now > peak && !peak_heap.compare_exchange_weak(peak, now)) {
  }
  return p;
}
void Uncounted(void* p) {
  if (p == nullptr) return;
  live_heap -= malloc_usable_size(p);
  std::free(p);
}
}  // namespace

void* operator new(std::size_t n) { return Counted(n); }
void* operator new[](std::size_t n) { return Counted(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return Counted(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return Counted(n);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p) noexcept { Uncounted(p); }
void operator delete[](void* p) noexcept { Uncounted(p); }
void operator delete(void* p, std::size_t) noexcept { Uncounted(p); }
void operator delete[](void* p, std::size_t) noexcept { Uncounted(p); }

#include "bench_util.h"
#include "gpufit/ingest/prometheus/client.h"
#include "gpufit/ingest/prometheus/telemetry.h"

namespace {

using namespace gpufit;

constexpr double kT0 = 1767225600;

std::string Answer(int series, int points) {
  std::string body = R"({"status":"success","data":{"resultType":"matrix","result":[)";
  for (int s = 0; s < series; ++s) {
    body += fmt::format(
        R"({}{{"metric":{{"UUID":"GPU-{:08x}","Hostname":"node-{}","gpu":"{}","namespace":"ml","pod":"p-{}"}},"values":[)",
        s == 0 ? "" : ",", s, s / 8, s % 8, s);
    for (int k = 0; k < points; ++k)
      body += fmt::format(R"({}[{},"{}"])", k == 0 ? "" : ",", static_cast<long long>(kT0) + 60 * k,
                          20000 + (k * 37 + s) % 5000);
    body += "]}";
  }
  return body + "]}}";
}

void BM_ParseQueryRangeAnswerAtThePointLimit(benchmark::State& state) {
  const std::string body = Answer(200, kPrometheusMaxPoints);
  std::size_t samples = 0, parse_peak = 0;
  for (auto _ : state) {
    const std::size_t before = live_heap.load();
    peak_heap = before;
    {
      const Result<std::vector<PromSeries>> r = ParseQueryRangeAnswer(body, "bench");
      samples = r ? r->size() * r->front().value.size() : 0;
      benchmark::DoNotOptimize(r);
    }
    parse_peak = std::max(parse_peak, peak_heap.load() - before);
  }
  state.counters["samples"] = static_cast<double>(samples);
  state.counters["answer_mib"] = static_cast<double>(body.size()) / (1 << 20);
  state.counters["parse_peak_heap_mib"] = static_cast<double>(parse_peak) / (1 << 20);
  state.counters["peak_rss_mib"] = bench::PeakRssMiB();
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(body.size()));
}
BENCHMARK(BM_ParseQueryRangeAnswerAtThePointLimit)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_WeekOf500PodsToTheGrid(benchmark::State& state) {
  constexpr int kPods = 500, kPoints = 7 * 24 * 60;
  std::vector<PromSeries> fb(kPods), util(kPods);
  for (int p = 0; p < kPods; ++p) {
    fb[p].labels = util[p].labels = {{"UUID", fmt::format("GPU-{:08x}", p)},
                                     {"Hostname", "n"},
                                     {"namespace", "ml"},
                                     {"pod", fmt::format("p-{}", p)}};
    for (int k = 0; k < kPoints; ++k) {
      const double t = kT0 + 60.0 * k;
      fb[p].time_s.push_back(t);
      fb[p].value.push_back(20000 + (k * 37 + p) % 5000);
      util[p].time_s.push_back(t);
      util[p].value.push_back((k * 13 + p) % 100);
    }
  }
  const GridSpec grid{.start_s = kT0, .step_s = 60, .samples = kPoints};
  std::size_t pods = 0;
  for (auto _ : state) {
    const Result<Telemetry> t = TelemetryFromDcgmSeries(fb, util, {}, {}, {}, "bench", grid);
    pods = t ? t->pods.size() : 0;
    benchmark::DoNotOptimize(t);
  }
  state.counters["pods"] = static_cast<double>(pods);
  state.counters["samples"] = 2.0 * kPods * kPoints;
  state.counters["peak_rss_mib"] = bench::PeakRssMiB();
}
BENCHMARK(BM_WeekOf500PodsToTheGrid)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
