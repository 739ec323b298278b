#include "gpufit/backtest/split.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <cmath>

namespace gpufit {
namespace {

constexpr std::size_t kMaxDailySplits = 7;

bool RunsIn(const PodSeries& p, std::size_t begin, std::size_t end) { return p.first < end && p.last >= begin; }

template <class T>
std::vector<T> Cut(const std::vector<T>& v, std::size_t begin, std::size_t end) {
  if (v.empty()) return {};
  return std::vector<T>(v.begin() + static_cast<std::ptrdiff_t>(begin), v.begin() + static_cast<std::ptrdiff_t>(end));
}

}  // namespace

std::vector<WalkForwardSplit> WalkForwardSplits(const Telemetry& telemetry) {
  std::vector<WalkForwardSplit> out;
  const std::size_t n = telemetry.samples;
  if (n < 2) return out;
  const auto per_day = static_cast<std::size_t>(std::llround(kFullDayS / telemetry.step_s));
  const std::size_t days = per_day > 0 ? n / per_day : 0;
  if (days >= 2) {
    const std::size_t first_k = days - 1 > kMaxDailySplits ? days - kMaxDailySplits : 1;
    for (std::size_t k = first_k; k < days; ++k) {
      out.push_back({k == 1 ? fmt::format("day 1 -> day 2") : fmt::format("days 1-{} -> day {}", k, k + 1), 0,
                     k * per_day, k * per_day, (k + 1) * per_day});
    }
    return out;
  }
  // Rolling origin: the rule at several cut points, each fitted on everything before it.
  for (const std::size_t quarter : {1, 2, 3}) {
    const std::size_t cut = n * quarter / 4;
    if (cut == 0 || cut >= n) continue;
    const double fit_h = static_cast<double>(cut) * telemetry.step_s / 3600;
    const double test_h = static_cast<double>(n - cut) * telemetry.step_s / 3600;
    out.push_back({fmt::format("first {:.1f} h -> next {:.1f} h", fit_h, test_h), 0, cut, cut, n});
  }
  return out;
}

std::vector<std::string> PodsRunningIn(const Telemetry& telemetry, std::size_t begin, std::size_t end) {
  std::vector<std::string> names;
  for (const PodSeries& p : telemetry.pods)
    if (RunsIn(p, begin, end)) names.push_back(p.pod);
  std::sort(names.begin(), names.end());
  return names;
}

Telemetry SliceTelemetry(const Telemetry& telemetry, std::size_t begin, std::size_t end,
                         const std::vector<std::string>* only) {
  assert(begin < end && end <= telemetry.samples);
  Telemetry out;
  out.start_s = telemetry.start_s + static_cast<double>(begin) * telemetry.step_s;
  out.step_s = telemetry.step_s;
  out.samples = end - begin;
  out.skipped = telemetry.skipped;
  out.gpu_model_name = telemetry.gpu_model_name;
  auto wanted = [&](const std::string& key) {
    return only == nullptr || std::binary_search(only->begin(), only->end(), key);
  };
  std::vector<std::string> kept;
  for (const PodSeries& p : telemetry.pods) {
    if (!RunsIn(p, begin, end) || !wanted(p.pod)) continue;
    PodSeries q;
    q.pod = p.pod;
    q.fb_used_mib = Cut(p.fb_used_mib, begin, end);
    q.gpu_util_pct = Cut(p.gpu_util_pct, begin, end);
    q.sm_active_pct = Cut(p.sm_active_pct, begin, end);
    q.first = std::max(p.first, begin) - begin;
    q.last = std::min(p.last, end - 1) - begin;
    for (std::uint32_t k : p.fb_gaps)
      if (k >= begin && k < end) q.fb_gaps.push_back(static_cast<std::uint32_t>(k - begin));
    q.filled_samples = q.fb_gaps.size();
    q.util_field = p.util_field;
    q.device = p.device;
    q.gpu_model = p.gpu_model;
    q.kv_cache = p.kv_cache;
    q.kv_cache_usage = Cut(p.kv_cache_usage, begin, end);
    kept.push_back(std::string(PodKeyOf(q.pod)));
    out.pods.push_back(std::move(q));
  }
  std::sort(kept.begin(), kept.end());
  for (const ContainerSeries& c : telemetry.containers) {
    if (!std::binary_search(kept.begin(), kept.end(), c.pod)) continue;
    ContainerSeries d = c;
    d.cpu_cores = Cut(c.cpu_cores, begin, end);
    d.cpu_throttled_ratio = Cut(c.cpu_throttled_ratio, begin, end);
    d.memory_working_set_mib = Cut(c.memory_working_set_mib, begin, end);
    out.containers.push_back(std::move(d));
  }
  return out;
}

}  // namespace gpufit
