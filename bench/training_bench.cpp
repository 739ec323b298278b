// Benchmark of the training-job simulator (sim/training_sim.h): 10,000 synthetic jobs
// submitted over 30 days onto 200 nodes of 8 GPUs (half spot, half on-demand), every job
// as DecideSpot recommends; spot reclaims every 24 h per node on average with AWS's 120 s
// notice, hardware failures at 50,000 h per GPU, half the jobs with a deadline of 1.5x
// their run. Target: seconds. Counters: completed jobs, interrupted runs, events.
// Run: build/bench/training_bench (or `make bench`).
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <vector>

#include "bench_util.h"
#include "gpufit/core/rng.h"
#include "gpufit/sim/training_sim.h"

namespace {

using namespace gpufit;

constexpr double kH = 3600;

struct Workload {
  std::vector<TrainingNode> nodes;
  std::vector<TrainingJob> jobs;
  std::vector<JobRunPolicy> policies;
  InterruptionModel model;
};

const Workload& Synthetic() {
  static const Workload w = [] {
    Workload s;
    for (int i = 0; i < 200; ++i) {
      s.nodes.push_back({.name = "n" + std::to_string(i),
                         .gpu_count = 8,
                         .gpu_model = "a100-80gb",
                         .capacity = i % 2 ? CapacityType::kSpot : CapacityType::kOnDemand});
    }
    s.model.spot = {.interruptions_per_hour = 1 / 24.0, .notice = kAwsSpotNotice, .basis = "MTBI 24 h"};
    const GpuPrices prices{.on_demand_per_gpu_hour = Usd{3.4309}, .spot_per_gpu_hour = Usd{1.0842}};
    Rng rng(7);
    for (int j = 0; j < 10000; ++j) {
      const int gpus = 1 << rng.Below(4);
      const double work_h = std::exp(std::log(1.0) + rng.Unit() * (std::log(48.0) - std::log(1.0)));
      const Seconds submit{rng.Unit() * 30 * 24 * kH};
      TrainingJob job{.name = "j" + std::to_string(j),
                      .gpu_count = gpus,
                      .gpu_model = "a100-80gb",
                      .work = Seconds{work_h * kH},
                      .checkpoint_write = Seconds{60 + 240 * rng.Unit()},
                      .restore = Seconds{300},
                      .checkpoint_size = MiB{0},
                      .submit = submit,
                      .deadline = std::nullopt,
                      .checkpointing = rng.Below(3) == 0 ? Checkpointing::kTransparent : Checkpointing::kApplication,
                      .disruption_group = "",
                      .max_unavailable = 1};
      if (j % 2 == 0) job.deadline = submit + 1.5 * job.work;
      s.policies.push_back(PolicyFromDecision(DecideSpot(job, s.model, prices), prices));
      s.jobs.push_back(std::move(job));
    }
    return s;
  }();
  return w;
}

void BM_TrainingSim10kJobs30Days(benchmark::State& state) {
  const Workload& w = Synthetic();
  TrainingSimOptions options;
  options.interruptions = w.model;
  options.seed = 1;
  TrainingSimResult last;
  for (auto _ : state) {
    Result<TrainingSimResult> r = SimulateTraining(w.nodes, w.jobs, w.policies, options);
    last = std::move(*r);
  }
  state.counters["completed"] = last.completed;
  state.counters["job_interruptions"] = last.job_interruptions;
  state.counters["spot_reclaims"] = last.spot_reclaims;
  state.counters["deadline_misses"] = last.deadline_misses;
  state.counters["makespan_days"] = last.makespan.count() / kH / 24;
  state.counters["peak_rss_mib"] = bench::PeakRssMiB();
}
BENCHMARK(BM_TrainingSim10kJobs30Days)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
