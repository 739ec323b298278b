// Per-device DCGM samples of pods -> the series of model/telemetry.h: which field gives each
// device's duty cycle, and one series per device for a pod on several. Both DCGM sources
// (ingest/prometheus/telemetry.h, the long CSV of ingest/files/telemetry_readers.h) go through it.
//
// The duty-cycle field, per device (PodSeries::util_field records it):
//  * a MIG instance (a GPU_I_ID, or a "MIG-..." device UUID): DCGM_FI_PROF_GR_ENGINE_ACTIVE
//    (ratio 0-1, x 100). DCGM_FI_DEV_GPU_UTIL is ignored there: DCGM does not support it on
//    MIG instances and dcgm-exporter sends 0 for them, so a busy instance would look idle;
//    NVIDIA's answer is GR_ENGINE_ACTIVE (NVIDIA/dcgm-exporter issues #216 and #430,
//    NVIDIA/DCGM issue #80). A MIG instance without GR_ENGINE_ACTIVE samples has no usable
//    duty cycle: its pod is left out, with that reason, rather than planned as idle.
//  * a full GPU with DCGM_FI_PROF_GR_ENGINE_ACTIVE samples (profiling fields exist on Volta
//    and newer; in dcgm-exporter's default-counters.csv): that field, which NVIDIA recommends
//    over the older GPU_UTIL (DCGM issue #80: GPU_UTIL "is outdated and has several
//    limitations"; DCGM docs, "Profiling Metrics");
//  * a full GPU without it (pre-Volta GPUs have no profiling fields: dcgm-exporter issue #395,
//    "Volta or newer is required for PROF metric support"; or the field is not exported):
//    DCGM_FI_DEV_GPU_UTIL (percent 0-100).
// A device without a known id ("" from a long CSV without a device column) is a full GPU.
//
// Series names: the pod key for a pod on one device; "<pod>[i]" for device i (in device-id
// order) of a pod on several (model/telemetry.h PodKeyOf strips it).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpufit/ingest/align.h"
#include "gpufit/model/telemetry.h"

namespace gpufit {

// One device's raw samples of one pod. Times in seconds.
struct DeviceSamples {
  RawSeries fb_used_mib{};        // DCGM_FI_DEV_FB_USED, MiB
  RawSeries gpu_util_pct{};       // DCGM_FI_DEV_GPU_UTIL, percent 0-100
  RawSeries engine_active_pct{};  // DCGM_FI_PROF_GR_ENGINE_ACTIVE x 100
  RawSeries sm_active_pct{};      // DCGM_FI_PROF_SM_ACTIVE x 100
};

// Pod key -> device id ("" = not given) -> samples.
using PodDevices = std::map<std::string, std::map<std::string, DeviceSamples>>;

// The DCGM field that gives the device's duty cycle by the rule above; nullptr when none is
// usable (a MIG instance without GR_ENGINE_ACTIVE, or no duty samples at all).
const char* DutyFieldOf(const std::string& device, const DeviceSamples& samples);

struct DeviceSeries {
  RawTelemetry raw;                                // by series name: memory and the chosen duty field
  std::map<std::string, RawSeries> sm_active_pct;  // by series name, where any
  std::map<std::string, std::string> util_field;   // by series name
  std::map<std::string, std::string> device;       // by series name
  std::vector<std::string> skipped;                // "pod: reason"
};

// Each pod's devices as series (names above), each with its duty field. A pod with a MIG
// instance that has no usable duty cycle is left out (in `skipped`). The samples are moved
// out of `pods` (a fleet's raw samples are held once, not twice).
DeviceSeries SeriesByDevice(PodDevices&& pods);

// After AlignToGrid: each pod's util_field and device, and its SM activity on the grid (the
// nearest grid sample, the largest of several, inside the pod's life; NaN elsewhere).
void AttachDeviceFacts(const DeviceSeries& series, Telemetry& telemetry);

}  // namespace gpufit
