#include "gpufit/ingest/align.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>
#include <unordered_map>
#include <utility>

namespace gpufit {
namespace {

constexpr std::size_t kMaxGridSamples = 50'000'000;
constexpr double kMaxGridCells = 400e6;  // samples x pods: two floats each, 3.2 GB

// Calls `add(d)` for each positive difference between consecutive timestamps of each series
// (sorted first: a copy only for a series that is not in time order already).
template <class Add>
void ForEachStep(const RawTelemetry& raw, Add add) {
  std::vector<double> sorted;
  for (const auto* metric : {&raw.fb_used_mib, &raw.gpu_util_pct}) {
    for (const auto& [pod, s] : *metric) {
      const std::vector<double>* times = &s.time_s;
      if (!std::is_sorted(times->begin(), times->end())) {
        sorted = s.time_s;
        std::sort(sorted.begin(), sorted.end());
        times = &sorted;
      }
      for (std::size_t k = 1; k < times->size(); ++k)
        if ((*times)[k] > (*times)[k - 1]) add((*times)[k] - (*times)[k - 1]);
    }
  }
}

double MedianStep(const RawTelemetry& raw) {
  // Spacing within each series, so pods scraped at different offsets do not look like a
  // fine grid; the median ignores the odd jittered or stray sample. Scrapes repeat a few
  // distinct spacings, so the median is read from their counts (a fleet's differences would
  // be gigabytes); jittered times with too many distinct spacings fall back to the list.
  constexpr std::size_t kMaxDistinct = 1 << 16;
  std::unordered_map<double, std::uint64_t> counts;
  bool overflow = false;
  double run_step = 0;  // counted in runs: one spacing repeats through a series
  std::uint64_t run = 0;
  auto flush = [&] {
    if (run > 0 && !overflow && (counts[run_step] += run) == run && counts.size() > kMaxDistinct) overflow = true;
    run = 0;
  };
  ForEachStep(raw, [&](double d) {
    if (run > 0 && d != run_step) flush();
    run_step = d;
    ++run;
  });
  flush();
  if (overflow) {
    std::vector<double> diffs;
    ForEachStep(raw, [&](double d) { diffs.push_back(d); });
    const auto median = diffs.begin() + static_cast<std::ptrdiff_t>(diffs.size() / 2);
    std::nth_element(diffs.begin(), median, diffs.end());
    return *median;
  }
  if (counts.empty()) return 60.0;
  std::vector<std::pair<double, std::uint64_t>> by_step(counts.begin(), counts.end());
  std::sort(by_step.begin(), by_step.end());
  std::uint64_t total = 0;
  for (const auto& [d, n] : by_step) total += n;
  // The element at index total / 2 of the sorted differences (the upper median).
  std::uint64_t seen = 0;
  for (const auto& [d, n] : by_step) {
    seen += n;
    if (seen > total / 2) return d;
  }
  return by_step.back().first;
}

// Puts one metric's raw samples on the grid: max per slot, NaN where unknown.
std::vector<float> ToSlots(const RawSeries& s, double start, double step, std::size_t n) {
  std::vector<float> slots(n, std::numeric_limits<float>::quiet_NaN());
  for (std::size_t k = 0; k < s.time_s.size(); ++k) {
    const auto slot = static_cast<std::size_t>(std::llround((s.time_s[k] - start) / step));
    float& v = slots[std::min(slot, n - 1)];
    v = std::isnan(v) ? s.value[k] : std::max(v, s.value[k]);
  }
  return slots;
}

std::pair<std::size_t, std::size_t> KnownRange(const std::vector<float>& slots) {
  std::size_t first = slots.size(), last = 0;
  for (std::size_t k = 0; k < slots.size(); ++k) {
    if (!std::isnan(slots[k])) {
      first = std::min(first, k);
      last = k;
    }
  }
  return {first, last};
}

// Fills unknown slots inside [first, last] with the max of the nearest known neighbours,
// zeroes the rest; returns how many slots were filled (and their indices in `filled_at`).
std::size_t FillLife(std::vector<float>& slots, std::size_t first, std::size_t last,
                     std::vector<std::uint32_t>* filled_at = nullptr) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> next_known(slots.size(), nan);
  float next = nan;
  for (std::size_t k = last + 1; k-- > first;) {
    if (!std::isnan(slots[k])) next = slots[k];
    next_known[k] = next;
  }
  std::size_t filled = 0;
  float prev = nan;
  for (std::size_t k = 0; k < slots.size(); ++k) {
    if (k < first || k > last) {
      slots[k] = 0;
    } else if (std::isnan(slots[k])) {
      const float a = std::isnan(prev) ? next_known[k] : prev;
      const float b = std::isnan(next_known[k]) ? prev : next_known[k];
      slots[k] = std::max(a, b);
      ++filled;
      if (filled_at != nullptr) filled_at->push_back(static_cast<std::uint32_t>(k));
    } else {
      prev = slots[k];
    }
  }
  return filled;
}

}  // namespace

Result<Telemetry> AlignToGrid(const RawTelemetry& raw, const std::string& source, const std::optional<GridSpec>& grid) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto* metric : {&raw.fb_used_mib, &raw.gpu_util_pct}) {
    for (const auto& [pod, s] : *metric) {
      for (double t : s.time_s) {
        lo = std::min(lo, t);
        hi = std::max(hi, t);
      }
    }
  }
  if (!(lo <= hi)) return InvalidArgument("{}: no samples", source);
  Telemetry tel;
  tel.start_s = grid ? grid->start_s : lo;
  tel.step_s = grid ? grid->step_s : MedianStep(raw);
  const double span = grid ? static_cast<double>(grid->samples) - 1 : std::round((hi - lo) / tel.step_s);
  if (span >= static_cast<double>(kMaxGridSamples))
    return InvalidArgument("{}: timestamps span {} s at a {} s step: more than {} grid samples", source, hi - lo,
                           tel.step_s, kMaxGridSamples);
  tel.samples = static_cast<std::size_t>(span) + 1;
  const double pods = static_cast<double>(std::max(raw.fb_used_mib.size(), raw.gpu_util_pct.size()));
  if (static_cast<double>(tel.samples) * pods > kMaxGridCells)
    return InvalidArgument(
        "{}: timestamps span {} s at a {} s step: {} samples x {:.0f} pods is more than {:.0f} grid cells "
        "(a timestamp far from the rest?)",
        source, hi - lo, tel.step_s, tel.samples, pods, kMaxGridCells);

  std::vector<std::string> names;
  for (const auto& [pod, s] : raw.fb_used_mib) names.push_back(pod);
  for (const auto& [pod, s] : raw.gpu_util_pct) {
    if (!raw.fb_used_mib.count(pod)) names.push_back(pod);
  }
  std::sort(names.begin(), names.end());
  // Pods with both metrics, in name order; the others are listed as skipped.
  std::vector<std::pair<const RawSeries*, const RawSeries*>> kept;
  for (const std::string& name : names) {
    const auto mem = raw.fb_used_mib.find(name);
    const auto util = raw.gpu_util_pct.find(name);
    if (mem == raw.fb_used_mib.end()) {
      tel.skipped.push_back(name + ": no " + kDcgmFbUsed + " samples");
      continue;
    }
    if (util == raw.gpu_util_pct.end()) {
      tel.skipped.push_back(name + ": no " + kDcgmGpuUtil + " samples");
      continue;
    }
    kept.emplace_back(&mem->second, &util->second);
    tel.pods.push_back(PodSeries{.pod = name, .fb_used_mib = {}, .gpu_util_pct = {}});
  }
  // Each pod's grid on its own, so on every core (a fleet has millions of cells per core).
  auto align = [&](std::size_t i) {
    PodSeries& p = tel.pods[i];
    p.fb_used_mib = ToSlots(*kept[i].first, tel.start_s, tel.step_s, tel.samples);
    p.gpu_util_pct = ToSlots(*kept[i].second, tel.start_s, tel.step_s, tel.samples);
    const auto [mf, ml] = KnownRange(p.fb_used_mib);
    const auto [uf, ul] = KnownRange(p.gpu_util_pct);
    p.first = std::min(mf, uf);
    p.last = std::max(ml, ul);
    p.filled_samples =
        std::max(FillLife(p.fb_used_mib, p.first, p.last, &p.fb_gaps), FillLife(p.gpu_util_pct, p.first, p.last));
  };
  const std::size_t threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 8);
  std::vector<std::thread> workers;
  for (std::size_t w = 1; w < threads && w < kept.size(); ++w)
    workers.emplace_back([&, w] {
      for (std::size_t i = w; i < kept.size(); i += threads) align(i);
    });
  for (std::size_t i = 0; i < kept.size(); i += threads) align(i);
  for (std::thread& t : workers) t.join();
  if (tel.pods.empty())
    return InvalidArgument("{}: no pod has both {} and {} samples", source, kDcgmFbUsed, kDcgmGpuUtil);
  return tel;
}

}  // namespace gpufit
