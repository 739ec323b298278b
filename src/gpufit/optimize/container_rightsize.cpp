#include "gpufit/optimize/container_rightsize.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "gpufit/analyze/profile.h"

namespace gpufit {
namespace {

double MonthlyUsd(std::optional<MilliCpu> cpu, std::optional<MiB> memory, const NodeRates& r) {
  const double cores = cpu ? static_cast<double>(cpu->value) / 1000.0 : 0;
  const double gib = memory ? static_cast<double>(memory->value) / 1024.0 : 0;
  return (cores * r.usd_per_core_hour + gib * r.usd_per_gib_hour) * kHoursPerMonth;
}

std::string Cores(std::optional<MilliCpu> m) { return m ? fmt::format("{}m", m->value) : std::string("none"); }
std::string Mib(std::optional<MiB> m) { return m ? fmt::format("{}Mi", m->value) : std::string("none"); }

// Whether a sample inside the container's life (first to last sample) is missing within 10
// minutes of its first memory peak, as optimize/rightsize.h GapNearPeak for GPU memory.
bool GapNearPeak(const std::vector<float>& memory, double step_s) {
  const auto finite = [](float x) { return std::isfinite(x); };
  const auto first = std::find_if(memory.begin(), memory.end(), finite);
  if (first == memory.end()) return false;
  const auto last = std::find_if(memory.rbegin(), memory.rend(), finite).base();  // one past the last sample
  std::ptrdiff_t peak = first - memory.begin();
  for (auto it = first; it != last; ++it)
    if (finite(*it) && *it > memory[static_cast<std::size_t>(peak)]) peak = it - memory.begin();
  const auto reach = static_cast<std::ptrdiff_t>(std::max(1.0, std::ceil(600.0 / step_s)));
  const std::ptrdiff_t lo = std::max(first - memory.begin(), peak - reach);
  const std::ptrdiff_t hi = std::min(last - memory.begin() - 1, peak + reach);
  for (std::ptrdiff_t k = lo; k <= hi; ++k)
    if (!finite(memory[static_cast<std::size_t>(k)])) return true;
  return false;
}

}  // namespace

std::vector<ContainerRecommendation> RightsizeContainers(
    const Telemetry& telemetry, const std::function<NodeRates(const std::string&)>& rates,
    const std::vector<CpuStarvation>& starved, const ContainerRightsizeOptions& options,
    const std::function<bool(const std::string&, const std::string&)>& holds_gpu) {
  // Starved pods by container pod key ("ns/pod"), as the containers name them.
  std::map<std::string, const CpuStarvation*> starved_by_pod;
  for (const CpuStarvation& s : starved) starved_by_pod[std::string(PodKeyOf(s.pod_name))] = &s;
  std::vector<ContainerRecommendation> out;
  for (const ContainerSeries& c : telemetry.containers) {
    std::vector<float> cpu = FiniteValues(c.cpu_cores), memory = FiniteValues(c.memory_working_set_mib),
                       throttled = FiniteValues(c.cpu_throttled_ratio);
    if (cpu.size() < options.min_samples || memory.size() < options.min_samples) continue;
    ContainerRecommendation r;
    r.pod = c.pod;
    r.container = c.container;
    r.image = c.image;
    r.kind = ClassifyContainer(c.container, c.image, holds_gpu && holds_gpu(c.pod, c.container));
    r.rates = rates(c.pod);
    r.cpu_samples = cpu.size();
    r.memory_samples = memory.size();
    r.cpu_cores_percentile = NearestRank(cpu, options.cpu_percentile);
    r.cpu_throttled_p95 = throttled.empty() ? 0 : NearestRank(throttled, 95);
    r.memory_peak_mib = *std::max_element(memory.begin(), memory.end());
    r.cpu_request_now = c.cpu_request;
    r.cpu_limit_now = c.cpu_limit;
    r.memory_request_now = c.memory_request;
    r.memory_limit_now = c.memory_limit;

    std::int64_t cpu_m = std::max<std::int64_t>(
        options.min_cpu.value, static_cast<std::int64_t>(std::ceil(r.cpu_cores_percentile * 1000.0 - 1e-3)));
    std::string why = fmt::format("CPU request = p{:g} of {} samples ({:.3f} cores), no limit", options.cpu_percentile,
                                  r.cpu_samples, r.cpu_cores_percentile);
    if (r.cpu_throttled_p95 >= options.throttled_ratio) {
      const std::int64_t now =
          std::max(c.cpu_request.value_or(MilliCpu{0}).value, c.cpu_limit.value_or(MilliCpu{0}).value);
      if (now > cpu_m) {
        cpu_m = now;
        why = fmt::format(
            "CPU-throttled (p95 of CFS ratio {:.0f}%): its usage shows the limit, not the need; kept at {}m, "
            "no limit",
            100 * r.cpu_throttled_p95, now);
      }
    }
    r.memory_request = MiB{std::max<std::int64_t>(
        options.min_memory.value,
        static_cast<std::int64_t>(std::ceil(r.memory_peak_mib * (1 + options.memory_buffer) - 1e-6)))};
    r.memory_limit = r.memory_request;
    r.cpu_request = MilliCpu{cpu_m};
    r.evidence = fmt::format("{}; memory request = limit = peak working set {:.0f} MiB + {:.0f}% of {} samples", why,
                             r.memory_peak_mib, 100 * options.memory_buffer, r.memory_samples);
    const bool lowers = (c.memory_request && *c.memory_request > r.memory_request) || !c.memory_limit ||
                        *c.memory_limit > r.memory_request;
    std::string hold;
    if (telemetry.window_hours() < options.min_window_hours)
      hold = fmt::format(
          "the telemetry covers {:.1f} h, less than the {:g} h needed to shrink memory "
          "(--min-window-hours)",
          telemetry.window_hours(), options.min_window_hours);
    else if (GapNearPeak(c.memory_working_set_mib, telemetry.step_s))
      hold = "memory samples are missing within 10 minutes of its peak (a larger value may have gone unseen)";
    if (lowers && !hold.empty()) {
      r.memory_held = true;
      if (c.memory_request) r.memory_request = std::max(r.memory_request, *c.memory_request);
      r.memory_limit = c.memory_limit ? std::optional<MiB>(std::max(r.memory_request, *c.memory_limit)) : std::nullopt;
      r.evidence += fmt::format("; memory not lowered, kept at request {} / limit {}: {}", Mib(r.memory_request),
                                Mib(r.memory_limit), hold);
    }
    out.push_back(std::move(r));
  }
  // Starved pods: the most-throttled container gets the pod's CPU less its siblings' requests.
  for (const auto& [pod, s] : starved_by_pod) {
    ContainerRecommendation* main = nullptr;
    std::int64_t siblings = 0;
    for (ContainerRecommendation& r : out) {
      if (r.pod != pod) continue;
      siblings += r.cpu_request.value;
      if (main == nullptr || r.cpu_throttled_p95 > main->cpu_throttled_p95) main = &r;
    }
    if (main == nullptr) continue;
    siblings -= main->cpu_request.value;
    const auto want = static_cast<std::int64_t>(std::llround(s->recommended_cores * 1000)) - siblings;
    if (want > main->cpu_request.value) {
      main->cpu_request = MilliCpu{want};
      main->evidence = fmt::format("CPU-starved pod: {} cores per GPU for the pod (see cpu_starvation), {}m here; {}",
                                   s->recommended_cores, want, main->evidence);
    }
  }
  for (ContainerRecommendation& r : out) {
    r.usd_per_month_now = MonthlyUsd(r.cpu_request_now, r.memory_request_now, r.rates);
    r.usd_per_month_recommended = MonthlyUsd(r.cpu_request, r.memory_request, r.rates);
    r.evidence += fmt::format("; now requests {} / {} (limits {} / {})", Cores(r.cpu_request_now),
                              Mib(r.memory_request_now), Cores(r.cpu_limit_now), Mib(r.memory_limit_now));
  }
  std::stable_sort(out.begin(), out.end(), [](const ContainerRecommendation& a, const ContainerRecommendation& b) {
    if (a.usd_per_month_saving() != b.usd_per_month_saving())
      return a.usd_per_month_saving() > b.usd_per_month_saving();
    return std::tie(a.pod, a.container) < std::tie(b.pod, b.container);
  });
  return out;
}

}  // namespace gpufit
