#include "gpufit/ingest/dcgm_devices.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string_view>
#include <utility>

namespace gpufit {

const char* DutyFieldOf(const std::string& device, const DeviceSamples& samples) {
  if (!samples.engine_active_pct.time_s.empty()) return kDcgmGrEngineActive;
  if (IsMigDevice(device)) return nullptr;  // GPU_UTIL is 0 on MIG instances, not a measurement
  if (!samples.gpu_util_pct.time_s.empty()) return kDcgmGpuUtil;
  return nullptr;
}

DeviceSeries SeriesByDevice(PodDevices&& pods) {
  DeviceSeries out;
  for (auto& [pod, devices] : pods) {
    // A MIG instance without GR_ENGINE_ACTIVE leaves its pod out: planned as idle it would be packed.
    std::string unusable;
    for (const auto& [device, s] : devices)
      if (IsMigDevice(device) && DutyFieldOf(device, s) == nullptr) unusable = device;
    if (!unusable.empty()) {
      out.skipped.push_back(
          fmt::format("{}: MIG instance {} has no {} samples ({} is 0 on MIG instances, not supported there), so its "
                      "duty cycle is unknown; export {}",
                      pod, unusable, kDcgmGrEngineActive, kDcgmGpuUtil, kDcgmGrEngineActive));
      continue;
    }
    std::size_t i = 0;
    for (auto& [device, s] : devices) {
      const std::string name = devices.size() == 1 ? pod : fmt::format("{}[{}]", pod, i);
      ++i;
      if (!s.fb_used_mib.time_s.empty()) out.raw.fb_used_mib[name] = std::move(s.fb_used_mib);
      const char* field = DutyFieldOf(device, s);
      if (field != nullptr)
        out.raw.gpu_util_pct[name] =
            std::move(std::string_view(field) == kDcgmGrEngineActive ? s.engine_active_pct : s.gpu_util_pct);
      if (!s.sm_active_pct.time_s.empty()) out.sm_active_pct[name] = std::move(s.sm_active_pct);
      out.util_field[name] = field != nullptr ? field : "";
      out.device[name] = device;
    }
  }
  return out;
}

void AttachDeviceFacts(const DeviceSeries& series, Telemetry& telemetry) {
  for (PodSeries& p : telemetry.pods) {
    if (const auto f = series.util_field.find(p.pod); f != series.util_field.end()) p.util_field = f->second;
    if (const auto d = series.device.find(p.pod); d != series.device.end()) p.device = d->second;
    const auto it = series.sm_active_pct.find(p.pod);
    if (it == series.sm_active_pct.end()) continue;
    p.sm_active_pct.assign(telemetry.samples, std::numeric_limits<float>::quiet_NaN());
    for (std::size_t i = 0; i < it->second.time_s.size(); ++i) {
      const double k = std::round((it->second.time_s[i] - telemetry.start_s) / telemetry.step_s);
      if (k < static_cast<double>(p.first) || k > static_cast<double>(p.last)) continue;
      float& at = p.sm_active_pct[static_cast<std::size_t>(k)];
      if (std::isnan(at) || it->second.value[i] > at) at = it->second.value[i];
    }
  }
}

}  // namespace gpufit
