#include "gpufit/ingest/synthetic_telemetry.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numbers>
#include <random>

namespace gpufit {
namespace {

constexpr double kSecondsPerDay = 86400;

double HourOfDay(double t_s) { return std::fmod(t_s, kSecondsPerDay) / 3600.0; }

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : rng_(seed) {}
  double Uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  double Noise(double sd) { return std::normal_distribution<double>(0.0, sd)(rng_); }

  PodSeries Inference(std::size_t samples, double step) {
    PodSeries p = Blank(samples);
    const double model_mib = Uniform(14, 44) * 1024;
    const double peak_util = Uniform(25, 70);
    const double threshold = Uniform(2, 10);
    const double phase = Uniform(-2, 2);  // hours, per-pod shift of the daily peak
    for (std::size_t t = 0; t < samples; ++t) {
      const double h = HourOfDay(static_cast<double>(t) * step);
      const double load = 0.5 + 0.5 * std::cos(2 * std::numbers::pi * (h - 14 - phase) / 24);  // 1 at 14:00
      double util = peak_util * load * load + Noise(4);
      util = util < threshold ? 0 : std::min(100.0, util);
      p.gpu_util_pct[t] = static_cast<float>(util);
      p.fb_used_mib[t] = static_cast<float>(model_mib * (1 + 0.3 * load * Uniform(0.6, 1.0)));
    }
    p.last = samples - 1;
    return p;
  }

  PodSeries Idle(std::size_t samples) {
    PodSeries p = Blank(samples);
    const float mem = static_cast<float>(Uniform(8, 20) * 1024);
    for (std::size_t t = 0; t < samples; ++t) {
      p.fb_used_mib[t] = mem;
      p.gpu_util_pct[t] = Uniform(0, 1) < 0.01 ? static_cast<float>(Uniform(5, 20)) : 0.0F;
    }
    p.last = samples - 1;
    return p;
  }

  // A training job over [first, last].
  PodSeries Training(std::size_t samples, std::size_t first, std::size_t last) {
    PodSeries p = Blank(samples);
    const double mem = Uniform(28, 56) * 1024;
    const double util = Uniform(75, 98);
    for (std::size_t t = first; t <= last; ++t) {
      p.fb_used_mib[t] = static_cast<float>(mem * (1 + 0.02 * Uniform(-1, 1)));
      p.gpu_util_pct[t] = static_cast<float>(std::clamp(util + Noise(3), 0.0, 100.0));
    }
    p.first = first;
    p.last = last;
    return p;
  }

 private:
  static PodSeries Blank(std::size_t samples) {
    PodSeries p;
    p.fb_used_mib.assign(samples, 0.0F);
    p.gpu_util_pct.assign(samples, 0.0F);
    p.util_field = kDcgmGpuUtil;  // what the generated duty cycle stands for (a full GPU's)
    return p;
  }
  std::mt19937_64 rng_;
};

}  // namespace

Telemetry GenerateSyntheticTelemetry(const SyntheticOptions& o) {
  assert(o.pods >= 1 && o.samples >= 1 && o.step_s > 0);
  Generator gen(o.seed);
  Telemetry tel;
  tel.start_s = 0;
  tel.step_s = o.step_s;
  tel.samples = o.samples;
  const std::size_t training = o.pods / 4;
  const std::size_t idle = o.pods * 15 / 100;
  const std::size_t inference = o.pods - training - idle;
  for (std::size_t i = 0; i < inference; ++i) {
    tel.pods.push_back(gen.Inference(o.samples, o.step_s));
    tel.pods.back().pod = fmt::format("infer-{:04}", i);
  }
  for (std::size_t i = 0; i < idle; ++i) {
    tel.pods.push_back(gen.Idle(o.samples));
    tel.pods.back().pod = fmt::format("idle-{:04}", i);
  }
  // Training jobs: one pod per night, nights cycling over the window.
  const auto per_day = static_cast<std::size_t>(kSecondsPerDay / o.step_s);
  const std::size_t nights = std::max<std::size_t>(1, (o.samples + per_day - 1) / std::max<std::size_t>(1, per_day));
  for (std::size_t i = 0; i < training; ++i) {
    const std::size_t night = i % nights;
    const double start_s = static_cast<double>(night) * kSecondsPerDay + 20 * 3600 + gen.Uniform(0, 3600);
    const double end_s = start_s + gen.Uniform(6, 10) * 3600;
    const auto first = std::min(o.samples - 1, static_cast<std::size_t>(start_s / o.step_s));
    const auto last = std::min(o.samples - 1, std::max(first, static_cast<std::size_t>(end_s / o.step_s)));
    tel.pods.push_back(gen.Training(o.samples, first, last));
    tel.pods.back().pod = fmt::format("train-{:04}", i);
    // A job that finishes inside the window has a known end, as kube_pod_completion_time gives.
    if (last + 1 < o.samples)
      tel.ended.push_back({.pod = tel.pods.back().pod,
                           .end_s = static_cast<double>(last + 1) * o.step_s,
                           .source = "the synthetic job's completion",
                           .dropped_samples = 0});
  }
  std::sort(tel.pods.begin(), tel.pods.end(), [](const PodSeries& a, const PodSeries& b) { return a.pod < b.pod; });
  return tel;
}

}  // namespace gpufit
