// Fleet-scale benchmarks (issue 21, point 3): `plan` from a long CSV of N pods over one week.
//
//  * BM_FleetLongCsv/<pods>/<step_s>: writes (once, cached under $TMPDIR) a long CSV of
//    `pods` synthetic pods (ingest/synthetic_telemetry.h's mix: 60 % inference, 15 % idle,
//    25 % nightly training) over 7 days at `step_s`, rows only over each pod's life, in
//    blocks of 250 pods written time-major (every pod of the block at t, then t + step), as
//    an export of a Prometheus range query per block of series gives. Then, after resetting
//    the peak RSS, reads it (ReadLongCsv) and plans it on h100-80gb at the default settings.
//    Counters: read_s, plan_s (wall; fleet_s of it the mixed-fleet search), rows, csv_mib,
//    gpus_after, gpus_lower_bound, fleet_gpus and
//    peak_rss_mib (read and plan only: the high-water mark is reset after the file is written).
//    Targets: 10,000 pods at 60 s under 60 s and 4 GiB; 50,000 pods at 300 s under 60 s and
//    8 GiB. Each size should run in its own process (--benchmark_filter), so that one size's
//    freed memory does not count against the next.
// Run: build/bench/fleet_bench --benchmark_filter='BM_FleetLongCsv/10000/60/'
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "bench_util.h"
#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/ingest/files/telemetry_readers.h"
#include "gpufit/ingest/synthetic_telemetry.h"
#include "gpufit/plan/plan.h"

namespace {

using namespace gpufit;

constexpr std::size_t kBlockPods = 250;
constexpr double kEpoch = 1'764'547'200;  // 2025-12-01T00:00:00Z: timestamps as a real export has them

// Writes the long CSV, block by block, so that the writer never holds more than one block.
std::size_t WriteFleetCsv(const std::string& path, std::size_t pods, double step_s) {
  const auto samples = static_cast<std::size_t>(7 * 86400 / step_s);
  const std::string tmp = path + ".part";
  std::FILE* out = std::fopen(tmp.c_str(), "w");
  if (out == nullptr) return 0;
  std::fputs("timestamp_s,pod,metric,value\n", out);
  std::size_t rows = 0;
  fmt::memory_buffer buf;
  for (std::size_t block = 0; block * kBlockPods < pods; ++block) {
    const std::size_t n = std::min(kBlockPods, pods - block * kBlockPods);
    const Telemetry t =
        GenerateSyntheticTelemetry({.pods = n, .samples = samples, .step_s = step_s, .seed = 100 + block});
    for (std::size_t k = 0; k < samples; ++k) {
      buf.clear();
      const double ts = kEpoch + static_cast<double>(k) * step_s;
      for (const PodSeries& p : t.pods) {
        if (k < p.first || k > p.last) continue;
        fmt::format_to(std::back_inserter(buf), "{:.0f},fleet/b{}-{},{},{:.0f}\n", ts, block, p.pod, kDcgmFbUsed,
                       p.fb_used_mib[k]);
        fmt::format_to(std::back_inserter(buf), "{:.0f},fleet/b{}-{},{},{:.1f}\n", ts, block, p.pod, kDcgmGpuUtil,
                       p.gpu_util_pct[k]);
        rows += 2;
      }
      std::fwrite(buf.data(), 1, buf.size(), out);
    }
  }
  if (std::fclose(out) != 0) return 0;
  std::filesystem::rename(tmp, path);
  return rows;
}

// Resets the process's peak RSS to its current RSS (Linux: /proc/PID/clear_refs, value 5).
void ResetPeakRss() { std::ofstream("/proc/self/clear_refs") << "5"; }

double PeakRssMiB() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmHWM:") {
      double kib = 0;
      in >> kib;
      return kib / 1024.0;
    }
    in.ignore(1 << 20, '\n');
  }
  return bench::PeakRssMiB();
}

void BM_FleetLongCsv(benchmark::State& state) {
  const auto pods = static_cast<std::size_t>(state.range(0));
  const auto step_s = static_cast<double>(state.range(1));
  const char* tmpdir = std::getenv("TMPDIR");
  const std::string path = fmt::format("{}/gpufit-fleet-{}-{}.csv", tmpdir ? tmpdir : "/tmp", pods, state.range(1));
  if (!std::filesystem::exists(path) && WriteFleetCsv(path, pods, step_s) == 0) {
    state.SkipWithError(("cannot write " + path).c_str());
    return;
  }
  ResetPeakRss();
  PlanOptions options;
  options.target_gpu = "h100-80gb";
  double read_s = 0, plan_s = 0, fleet_s = 0;
  std::size_t gpus = 0, lb = 0, series = 0, fleet_gpus = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const Result<Telemetry> tel = ReadLongCsv(path);
    const auto t1 = std::chrono::steady_clock::now();
    if (!tel) {
      state.SkipWithError(tel.error().message.c_str());
      return;
    }
    series = tel->pods.size();
    const Result<Plan> plan = BuildPlan(*tel, GpuCatalog::Embedded(), options, path);
    const auto t2 = std::chrono::steady_clock::now();
    if (!plan) {
      state.SkipWithError(plan.error().message.c_str());
      return;
    }
    read_s = std::chrono::duration<double>(t1 - t0).count();
    plan_s = std::chrono::duration<double>(t2 - t1).count();
    gpus = plan->totals.gpus_after;
    lb = plan->totals.gpus_lower_bound;
    fleet_s = plan->fleet.seconds;
    fleet_gpus = plan->fleet.gpus.size() + plan->kept_gpus();
  }
  state.counters["read_s"] = read_s;
  state.counters["plan_s"] = plan_s;
  state.counters["pods_read"] = static_cast<double>(series);
  state.counters["csv_mib"] = static_cast<double>(std::filesystem::file_size(path)) / (1024.0 * 1024.0);
  state.counters["gpus_after"] = static_cast<double>(gpus);
  state.counters["gpus_lower_bound"] = static_cast<double>(lb);
  state.counters["fleet_s"] = fleet_s;
  state.counters["fleet_gpus"] = static_cast<double>(fleet_gpus);
  state.counters["peak_rss_mib"] = PeakRssMiB();
}
BENCHMARK(BM_FleetLongCsv)
    ->Args({1000, 60})
    ->Args({5000, 60})
    ->Args({10000, 60})
    ->Args({1000, 300})
    ->Args({5000, 300})
    ->Args({10000, 300})
    ->Args({50000, 300})
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
