#include "gpufit/inference/demand.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "gpufit/core/rng.h"

namespace gpufit {
namespace {

double MeanToPeak(const std::vector<double>& per_window) {
  if (per_window.empty()) return 0;
  double sum = 0, peak = 0;
  for (const double x : per_window) {
    sum += x;
    peak = std::max(peak, x);
  }
  return peak > 0 ? sum / static_cast<double>(per_window.size()) / peak : 0;
}

}  // namespace

RequestTrace PoissonArrivals(const RateSeries& series, std::uint64_t seed) {
  Rng rng(seed);
  RequestTrace trace{.source = series.source, .requests = {}, .has_tokens = false, .origin_s = series.origin_s};
  for (std::size_t i = 0; i < series.t_s.size(); ++i) {
    const double from = series.t_s[i];
    double to = from + series.sample_s;
    if (i + 1 < series.t_s.size()) to = std::min(to, series.t_s[i + 1]);
    if (series.per_s[i] <= 0) continue;
    // Memorylessness: restarting the exponential clock at each sample keeps it Poisson.
    for (double t = from + rng.Exponential(series.per_s[i]); t < to; t += rng.Exponential(series.per_s[i])) {
      trace.requests.push_back({.arrival_s = t, .input_tokens = 0, .output_tokens = 0});
    }
  }
  if (!trace.requests.empty()) {
    const double origin = trace.requests.front().arrival_s;
    for (Request& r : trace.requests) r.arrival_s -= origin;
    trace.origin_s += origin;
  }
  return trace;
}

std::vector<double> BootstrapSamples(const std::vector<double>& samples, std::size_t n, std::uint64_t seed) {
  assert(!samples.empty());
  Rng rng(seed);
  std::vector<double> out(n);
  for (double& x : out) x = samples[rng.Below(samples.size())];
  return out;
}

Demand LocalBlockBootstrap(const Demand& demand, double block_s, int reach, std::uint64_t seed) {
  assert(block_s > 0 && reach >= 0);
  Rng rng(seed);
  Demand copy{.trace = {.source = demand.trace.source + " (local block bootstrap)",
                        .requests = {},
                        .has_tokens = demand.trace.has_tokens,
                        .origin_s = demand.trace.origin_s},
              .times = {}};
  const auto& requests = demand.trace.requests;
  if (requests.empty()) return copy;
  const auto blocks = static_cast<std::ptrdiff_t>(demand.trace.Duration() / block_s) + 1;
  // first[j]: the first request of block j; first[blocks] = the end.
  std::vector<std::size_t> first(static_cast<std::size_t>(blocks) + 1, requests.size());
  for (std::size_t i = 0, j = 0; j + 1 < first.size(); ++j) {
    first[j] = i;
    const double end = static_cast<double>(j + 1) * block_s;
    while (i < requests.size() && (j + 2 == first.size() || requests[i].arrival_s < end)) ++i;
  }
  for (std::ptrdiff_t j = 0; j < blocks; ++j) {
    const std::ptrdiff_t lo = std::max<std::ptrdiff_t>(0, j - reach), hi = std::min(blocks - 1, j + reach);
    const auto from = lo + static_cast<std::ptrdiff_t>(rng.Below(static_cast<std::uint64_t>(hi - lo + 1)));
    const double shift = static_cast<double>(j - from) * block_s;
    for (std::size_t i = first[static_cast<std::size_t>(from)]; i < first[static_cast<std::size_t>(from) + 1]; ++i) {
      Request r = requests[i];
      r.arrival_s += shift;
      copy.trace.requests.push_back(r);
      copy.times.service_s.push_back(demand.times.service_s[i]);
      if (!demand.times.prefill_s.empty()) copy.times.prefill_s.push_back(demand.times.prefill_s[i]);
    }
  }
  return copy;
}

double WindowMeanToPeak(const RateSeries& series, double window_s) {
  assert(window_s > 0);
  if (series.t_s.empty()) return 0;
  const double end = series.t_s.back() + series.sample_s;
  std::vector<double> requests(static_cast<std::size_t>(std::ceil(end / window_s)), 0.0);
  for (std::size_t i = 0; i < series.t_s.size(); ++i) {
    double from = series.t_s[i], to = from + series.sample_s;
    if (i + 1 < series.t_s.size()) to = std::min(to, series.t_s[i + 1]);
    // Spread the sample's requests over the windows it covers.
    while (from < to) {
      const auto w = static_cast<std::size_t>(from / window_s);
      const double cut = std::min(to, static_cast<double>(w + 1) * window_s);
      requests[std::min(w, requests.size() - 1)] += series.per_s[i] * (cut - from);
      from = cut;
    }
  }
  return MeanToPeak(requests);
}

double WindowMeanToPeak(const RequestTrace& trace, double window_s) {
  assert(window_s > 0);
  if (trace.requests.empty()) return 0;
  std::vector<double> count(static_cast<std::size_t>(trace.Duration() / window_s) + 1, 0.0);
  for (const Request& r : trace.requests) count[static_cast<std::size_t>(r.arrival_s / window_s)] += 1;
  return MeanToPeak(count);
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  if (values.size() % 2) return values[mid];
  const double upper = values[mid];
  return (*std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

}  // namespace gpufit
