#include "gpufit/controller/drift.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace gpufit::controller {

std::size_t DriftReport::drifted() const {
  return static_cast<std::size_t>(
      std::count_if(peaks.begin(), peaks.end(), [](const PeakDrift& p) { return p.drifted; }));
}

DriftReport FindDrift(const PlanFacts& planned, const std::map<std::string, double>& recent_peak_mib,
                      const std::vector<std::string>& observed_workloads, const DriftOptions& options) {
  DriftReport report;
  std::map<std::string, const WorkloadFacts*> by_key;
  for (const WorkloadFacts& w : planned.workloads) by_key[w.workload] = &w;
  std::map<std::string, double> workload_peak;  // recent peak per planned workload
  for (const auto& [pod, peak] : recent_peak_mib) {
    const auto of = planned.workload_of.find(pod);
    if (of == planned.workload_of.end()) continue;  // a pod the plan does not know
    const WorkloadFacts& w = *by_key.at(of->second);
    if (peak > static_cast<double>(w.cap_mib))
      report.over_envelope.push_back({.pod = pod, .workload = w.workload, .peak_mib = peak, .cap_mib = w.cap_mib});
    double& top = workload_peak[w.workload];
    top = std::max(top, peak);
  }
  const std::set<std::string> observed(observed_workloads.begin(), observed_workloads.end());
  for (const std::string& w : observed)
    if (!by_key.contains(w)) report.new_workloads.push_back(w);
  for (const auto& [key, peak] : workload_peak) {
    const WorkloadFacts& w = *by_key.at(key);
    if (w.fitted_peak_mib <= 0) continue;
    const double ratio = peak / w.fitted_peak_mib;
    report.peaks.push_back({.workload = key,
                            .fitted_peak_mib = w.fitted_peak_mib,
                            .recent_peak_mib = peak,
                            .ratio = ratio,
                            .drifted = ratio > 1 + options.peak_drift_tolerance});
  }
  return report;
}

std::map<std::string, double> RecentPeaks(const Telemetry& telemetry, double window_s) {
  std::map<std::string, double> peaks;
  if (telemetry.samples == 0) return peaks;
  const auto window = static_cast<std::size_t>(std::max(1.0, std::ceil(window_s / telemetry.step_s)));
  const std::size_t from = telemetry.samples > window ? telemetry.samples - window : 0;
  for (const PodSeries& p : telemetry.pods) {
    if (p.last < from || p.fb_used_mib.empty()) continue;
    const std::size_t begin = std::max(from, p.first);
    const std::size_t end = std::min(p.last + 1, p.fb_used_mib.size());
    if (begin >= end) continue;
    peaks[p.pod] = *std::max_element(p.fb_used_mib.begin() + static_cast<std::ptrdiff_t>(begin),
                                     p.fb_used_mib.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return peaks;
}

}  // namespace gpufit::controller
