// Pods that hold several GPUs or MIG instances. Co-location shares one GPU among pods of one
// GPU each; a pod of several devices is kept whole in every plan (one current device per
// device it holds, never packed): its devices work together (data or model parallel, or
// CUDA picking among them), so packing its series as separate pods, or sharing a device of
// it, would plan a workload that does not exist. Its manifests keep it off shared nodes
// (plan/manifests/whole_gpus.cpp), where two "GPUs" can be replicas of one device.
//
// A pod is on several devices when
//  * its telemetry has one series per device, "<pod>[i]" (ingest/dcgm_devices.h), or
//  * its pod spec asks for more than one (nvidia.com/gpu plus every nvidia.com/mig-<profile>,
//    KubePod::GpuDevices()), given as `spec_devices` by telemetry pod name (kubectl pods
//    file). A long CSV without a device column holds one series for such a pod: it stands
//    for all of its devices, and the pod counts as that many GPUs.
//
// "Ask for 1": a CUDA process uses only the first MIG instance it sees (NVIDIA/DCGM issue
// #138: "a Cuda application can only utilize the first MIG instance it detects"), so a pod
// given several MIG instances often leaves all but one idle. Where every device but one is
// idle over the whole window (peak DCGM_FI_PROF_GR_ENGINE_ACTIVE below kIdleDutyPct and peak
// memory below kIdleMemoryMib, less than any CUDA context takes), the pod gets the
// recommendation to ask for one instance, with the busy and idle devices' figures.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/model/telemetry.h"

namespace gpufit {

inline constexpr double kIdleDutyPct = 1.0;     // peak duty cycle of an idle device, percent (exclusive)
inline constexpr double kIdleMemoryMib = 64.0;  // peak memory of an idle device, MiB (exclusive)

struct AskForOne {
  std::size_t busy = 0;           // the series of the device in use (index into Telemetry::pods)
  std::vector<std::size_t> idle;  // the idle devices' series
  double busy_peak_mib = 0;       // peak memory of the device in use, MiB
  double busy_peak_duty_pct = 0;  // its peak duty cycle, percent
  double idle_peak_mib = 0;       // the largest peak memory among the idle devices, MiB
  double idle_peak_duty_pct = 0;  // the largest peak duty cycle among them, percent
  std::string text;               // the recommendation with these figures
};

struct MultiGpuPod {
  std::string pod;                  // the series name without "[i]" ("namespace/pod", "@k" kept)
  std::vector<std::size_t> series;  // its series (indices into Telemetry::pods), device order
  int devices = 0;                  // devices it holds: its series, or its spec's request when larger
  int spec_devices = 0;             // what its pod spec asks for (0: not known)
  bool mig = false;                 // every device of it is a MIG instance
  std::string evidence;             // where `devices` comes from
  std::optional<AskForOne> ask_for_one;
};

// The pods of `telemetry` on several devices, by name. `spec_devices`: telemetry pod name ->
// the devices its pod spec asks for (absent or <= 1: one).
std::vector<MultiGpuPod> FindMultiGpuPods(const Telemetry& telemetry, const std::map<std::string, int>& spec_devices);

}  // namespace gpufit
