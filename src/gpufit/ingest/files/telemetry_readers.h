// Telemetry readers: each turns one file format into model/telemetry.h's grid (through
// ingest/align.h) or into one clear error naming the file, line and column.
//
// Formats:
//  * GenTD26 (Alibaba cluster-trace-v2026-GenAI), a directory holding
//      pod_gpu_memory_used_bytes_anon.csv  GPU memory used, bytes (converted to MiB)
//      pod_gpu_duty_cycle_anon.csv         GPU duty cycle, percent 0-100
//    each with columns timestamp_anon (s), value, container_ip (the pod key) in any order.
//  * Long CSV, one file with header `timestamp_s,pod,metric,value` (any column order, extra
//    columns ignored); metric is a DCGM field name, its value in DCGM's own unit:
//    DCGM_FI_DEV_FB_USED (MiB), DCGM_FI_DEV_GPU_UTIL (percent 0-100),
//    DCGM_FI_PROF_GR_ENGINE_ACTIVE and DCGM_FI_PROF_SM_ACTIVE (ratios 0-1, as dcgm-exporter
//    sends them; stored x 100). A row with metric kube_pod_completion_time says the pod ended
//    at `value` (seconds, the timestamp_s clock; its timestamp_s is not used): samples after
//    it are dropped (ingest/kube/pod_ends.h). Rows of other metrics are skipped. Optional columns
//    `device` (the GPU's UUID, or a MIG device UUID "MIG-...") and `GPU_I_ID` (dcgm-exporter's
//    MIG GPU-instance id, with `device` naming its GPU) say which device a row measures: a pod
//    on several devices becomes one series per device, and each device's duty-cycle field is
//    chosen by the rule of ingest/dcgm_devices.h (a MIG instance: GR_ENGINE_ACTIVE only).
//    Optional column `GPU_I_PROFILE` (dcgm-exporter's label, e.g. 3g.40gb, with GPU_I_ID)
//    names a MIG instance's profile: PodSeries::mig_profile, which the plan prices by.
//    Documented in docs/telemetry-formats.md.
// `ends` (e.g. from kubectl's pods, ingest/kube/pod_ends.h) cut pods' samples the same way; the
// pods that lost samples are listed in Telemetry::ended.
// Values must be finite and >= 0, duty cycles <= 100, ratios <= 1, memory <= 1 TiB;
// timestamps finite and >= 0.
#pragma once

#include <string>

#include "gpufit/core/result.h"
#include "gpufit/core/units.h"
#include "gpufit/ingest/kube/pod_ends.h"
#include "gpufit/model/telemetry.h"

namespace gpufit {

inline constexpr const char* kGenTd26MemoryFile = "pod_gpu_memory_used_bytes_anon.csv";
inline constexpr const char* kGenTd26DutyFile = "pod_gpu_duty_cycle_anon.csv";
inline constexpr const char* kLongCsvDevice = "device";          // optional long CSV column
inline constexpr const char* kLongCsvInstance = "GPU_I_ID";      // optional long CSV column
inline constexpr const char* kLongCsvProfile = "GPU_I_PROFILE";  // optional long CSV column

// Reads the two GenTD26 files of directory `dir`.
Result<Telemetry> ReadGenTd26(const std::string& dir, const PodEnds& ends = {});

// Reads a long CSV file.
Result<Telemetry> ReadLongCsv(const std::string& path, const PodEnds& ends = {});

// A directory is read as GenTD26, a file as long CSV. kNotFound when `path` does not exist.
Result<Telemetry> ReadTelemetry(const std::string& path, const PodEnds& ends = {});

}  // namespace gpufit
