#include "gpufit/ingest/align.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpufit {
namespace {

constexpr std::size_t kMaxGridSamples = 50'000'000;
constexpr double kMaxGridCells = 400e6;  // samples x pods: two floats each, 3.2 GB

double MedianStep(const RawTelemetry& raw) {
  // Spacing within each series, so pods scraped at different offsets do not look like a
  // fine grid; the median ignores the odd jittered or stray sample.
  std::vector<double> diffs, times;
  for (const auto* metric : {&raw.fb_used_mib, &raw.gpu_util_pct}) {
    for (const auto& [pod, s] : *metric) {
      times = s.time_s;
      std::sort(times.begin(), times.end());
      for (std::size_t k = 1; k < times.size(); ++k) {
        if (times[k] > times[k - 1]) diffs.push_back(times[k] - times[k - 1]);
      }
    }
  }
  if (diffs.empty()) return 60.0;
  const auto median = diffs.begin() + static_cast<std::ptrdiff_t>(diffs.size() / 2);
  std::nth_element(diffs.begin(), median, diffs.end());
  return *median;
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
    PodSeries p;
    p.pod = name;
    p.fb_used_mib = ToSlots(mem->second, tel.start_s, tel.step_s, tel.samples);
    p.gpu_util_pct = ToSlots(util->second, tel.start_s, tel.step_s, tel.samples);
    const auto [mf, ml] = KnownRange(p.fb_used_mib);
    const auto [uf, ul] = KnownRange(p.gpu_util_pct);
    p.first = std::min(mf, uf);
    p.last = std::max(ml, ul);
    p.filled_samples =
        std::max(FillLife(p.fb_used_mib, p.first, p.last, &p.fb_gaps), FillLife(p.gpu_util_pct, p.first, p.last));
    tel.pods.push_back(std::move(p));
  }
  if (tel.pods.empty())
    return InvalidArgument("{}: no pod has both {} and {} samples", source, kDcgmFbUsed, kDcgmGpuUtil);
  return tel;
}

}  // namespace gpufit
