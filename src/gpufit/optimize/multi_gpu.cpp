#include "gpufit/optimize/multi_gpu.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace gpufit {
namespace {

double Peak(const std::vector<float>& series, std::size_t first, std::size_t last) {
  double peak = 0;
  for (std::size_t t = first; t <= last && t < series.size(); ++t)
    if (std::isfinite(series[t])) peak = std::max(peak, static_cast<double>(series[t]));
  return peak;
}

std::optional<AskForOne> AskForOneOf(const Telemetry& telemetry, const MultiGpuPod& pod) {
  if (!pod.mig || pod.series.size() < 2) return std::nullopt;
  AskForOne a;
  std::vector<std::size_t> busy;
  for (std::size_t s : pod.series) {
    const PodSeries& p = telemetry.pods[s];
    const double mib = Peak(p.fb_used_mib, p.first, p.last), duty = Peak(p.gpu_util_pct, p.first, p.last);
    if (mib < kIdleMemoryMib && duty < kIdleDutyPct) {
      a.idle.push_back(s);
      a.idle_peak_mib = std::max(a.idle_peak_mib, mib);
      a.idle_peak_duty_pct = std::max(a.idle_peak_duty_pct, duty);
    } else {
      busy.push_back(s);
    }
  }
  if (busy.size() > 1) return std::nullopt;
  // All idle: the first device is the one CUDA would use.
  a.busy = busy.empty() ? a.idle.front() : busy.front();
  std::erase(a.idle, a.busy);
  const PodSeries& b = telemetry.pods[a.busy];
  a.busy_peak_mib = Peak(b.fb_used_mib, b.first, b.last);
  a.busy_peak_duty_pct = Peak(b.gpu_util_pct, b.first, b.last);
  a.text = fmt::format(
      "ask for 1 MIG instance instead of {}: {} of its {} instances stayed idle over the window (peak {:.0f} MiB, "
      "peak duty {:.1f}%), the one in use ({}) peaked at {:.0f} MiB and {:.1f}% duty (a CUDA process uses only the "
      "first MIG instance it sees)",
      pod.devices, a.idle.size(), pod.series.size(), a.idle_peak_mib, a.idle_peak_duty_pct, b.device, a.busy_peak_mib,
      a.busy_peak_duty_pct);
  return a;
}

}  // namespace

std::vector<MultiGpuPod> FindMultiGpuPods(const Telemetry& telemetry, const std::map<std::string, int>& spec_devices) {
  std::map<std::string, MultiGpuPod> by_pod;
  for (std::size_t i = 0; i < telemetry.pods.size(); ++i) {
    const std::string& name = telemetry.pods[i].pod;
    MultiGpuPod& m = by_pod[name.substr(0, name.find('['))];
    m.series.push_back(i);
    if (const auto it = spec_devices.find(name); it != spec_devices.end()) m.spec_devices = it->second;
  }
  std::vector<MultiGpuPod> out;
  for (auto& [pod, m] : by_pod) {
    // A reader names a pod's series "pod[i]" only when it saw the pod on several devices, so
    // one "[i]" series left (the others dropped, e.g. all after the pod's end) still means
    // at least max(2, i + 1) devices.
    int seen = static_cast<int>(m.series.size());
    for (std::size_t s : m.series) {
      const std::string& name = telemetry.pods[s].pod;
      if (const std::size_t open = name.find('['); open != std::string::npos)
        seen = std::max({seen, 2, std::atoi(name.c_str() + open + 1) + 1});
    }
    const bool from_telemetry = seen > 1;
    if (!from_telemetry && m.spec_devices <= 1) continue;
    m.pod = pod;
    m.devices = std::max(seen, m.spec_devices);
    m.mig = std::all_of(m.series.begin(), m.series.end(),
                        [&](std::size_t s) { return IsMigDevice(telemetry.pods[s].device); });
    m.evidence = from_telemetry ? fmt::format("its telemetry shows {} devices", seen)
                                : fmt::format("its pod spec asks for {} GPUs or MIG devices", m.spec_devices);
    if (from_telemetry && m.spec_devices > seen)
      m.evidence += fmt::format(" and its pod spec asks for {}", m.spec_devices);
    m.ask_for_one = AskForOneOf(telemetry, m);
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace gpufit
