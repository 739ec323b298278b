// Per-pod GPU telemetry on one common time grid.
//
// Shapes: every series of every pod has exactly `Telemetry::samples` entries; entry k is
// the value at time `start_s + k * step_s` (seconds, the trace's own clock). Outside a
// pod's life ([first, last], inclusive) both series are 0: the pod held no GPU then.
// How raw samples become this grid (gaps, late starts, duplicates) is documented in
// ingest/align.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpufit/core/units.h"

namespace gpufit {

// DCGM field names of the two metrics gpufit reads (dcgm-exporter default counters).
inline constexpr const char* kDcgmFbUsed = "DCGM_FI_DEV_FB_USED";    // framebuffer used, MiB
inline constexpr const char* kDcgmGpuUtil = "DCGM_FI_DEV_GPU_UTIL";  // duty cycle, percent 0-100
// Profiling counters, ratio 0-1: time the graphics/compute engine is active (in
// default-counters.csv), and cycles an SM has at least one warp resident (commented out
// there: present only where the user enabled it).
inline constexpr const char* kDcgmGrEngineActive = "DCGM_FI_PROF_GR_ENGINE_ACTIVE";
inline constexpr const char* kDcgmSmActive = "DCGM_FI_PROF_SM_ACTIVE";
// kube-state-metrics: a finished pod's end, Unix seconds (ingest/kube/pod_ends.h).
inline constexpr const char* kKubePodCompletionTime = "kube_pod_completion_time";
// The duty cycle of GenTD26 (its pod_gpu_duty_cycle file), percent 0-100.
inline constexpr const char* kGenTd26DutyField = "pod_gpu_duty_cycle";

// A serving engine that pre-allocates GPU memory (vLLM's --gpu-memory-utilization, 0.9 of
// the GPU by default): DCGM's FB_USED shows its budget, not its use. What its own metrics
// say (ingest/prometheus/kv_cache.h; sizing in plan/preallocated.h).
struct KvCacheConfig {
  std::string engine;                  // "vllm"
  std::string model;                   // its model_name label
  double gpu_memory_utilization = 0;   // the setting it runs with (cache_config_info), 0 if unknown
  double num_gpu_blocks = 0;           // KV cache blocks (cache_config_info), 0 if unknown
  double block_size = 0;               // tokens per block, 0 if unknown
  std::string cache_dtype;             // "auto", "fp8", ...
  std::optional<double> kv_cache_mib;  // the cache's size when the engine states it (kv_cache_memory_bytes)
};

struct PodSeries {
  std::string pod;
  std::vector<float> fb_used_mib;   // GPU memory used, MiB (DCGM_FI_DEV_FB_USED)
  std::vector<float> gpu_util_pct;  // GPU duty cycle, percent 0-100 (from `util_field`)
  // DCGM_FI_PROF_SM_ACTIVE x 100 where the source has it (else empty); NaN where no sample.
  std::vector<float> sm_active_pct{};
  std::size_t first = 0;                 // first grid sample of the pod's life
  std::size_t last = 0;                  // last grid sample of the pod's life (inclusive)
  std::size_t filled_samples = 0;        // samples inside the life that had no raw value (gaps)
  std::vector<std::uint32_t> fb_gaps{};  // grid samples of fb_used_mib that were gaps, ascending
  // The field gpu_util_pct was read from (ingest/dcgm_devices.h states the rule):
  // kDcgmGpuUtil, kDcgmGrEngineActive (x 100) or kGenTd26DutyField; "" when not known.
  std::string util_field{};
  // The device the series measures: a GPU UUID, "<GPU UUID>/gi<GPU_I_ID>" for a MIG
  // instance, or "" when the source does not say. A pod on several devices is one series
  // per device, "<pod>[i]" (i in device order).
  std::string device{};
  // dcgm-exporter's modelName of that device (e.g. "NVIDIA A100-SXM4-80GB"), or "" when the
  // source does not say: the GPU the pod runs on today (plan/current_gpus.h).
  std::string gpu_model{};
  // A pre-allocating server's KV cache: its configuration and, per grid sample, the share of
  // the cache in use (0-1; vllm:kv_cache_usage_perc, NaN where no sample). Empty otherwise.
  std::optional<KvCacheConfig> kv_cache{};
  std::vector<float> kv_cache_usage{};
  // The MIG profile of `device` when it is a MIG instance and the source names it, as NVIDIA
  // writes it ("1g.10gb"): dcgm-exporter's GPU_I_PROFILE label, or the pod spec's
  // nvidia.com/mig-<profile> (kubectl's pods); "" otherwise. BuildPlan prices such a pod as
  // its compute slices' share of its GPU (plan/plan.h).
  std::string mig_profile{};

  std::size_t running_samples() const { return last - first + 1; }
};

// One container's CPU and memory (cAdvisor) and its requests and limits (kube-state-metrics)
// on the Telemetry grid (../shared/reference/formats.md (c)). Every series has
// Telemetry::samples entries; NaN where the container had no sample (not running, or the
// first sample of a counter, whose rate needs a previous one).
struct ContainerSeries {
  std::string pod;                                 // "namespace/pod", as PodSeries::pod without a "[i]" GPU suffix
  std::string container;                           // cAdvisor `container` label
  std::string image;                               // cAdvisor `image` label ("" when absent)
  std::vector<float> cpu_cores;                    // rate of container_cpu_usage_seconds_total, cores
  std::vector<float> cpu_throttled_ratio;          // throttled / all CFS periods in the step, 0-1
  std::vector<float> memory_working_set_mib;       // container_memory_working_set_bytes, MiB
  std::optional<MilliCpu> cpu_request, cpu_limit;  // kube_pod_container_resource_requests/limits
  std::optional<MiB> memory_request, memory_limit;
};

// The "namespace/pod" a PodSeries::pod names: without the "[i]" of one GPU of several or
// the "@k" of a later pod of the same name (neither character is allowed in a Kubernetes
// name). The key ContainerSeries::pod and kubectl's pods use.
inline std::string_view PodKeyOf(std::string_view series_pod) {
  return series_pod.substr(0, series_pod.find_first_of("[@"));
}

// A pod that ended inside the window (phase Succeeded or Failed) and the samples the reader
// dropped after its end. dcgm-exporter keeps attributing a GPU to a finished pod while its
// pod-resources cache holds the pod (about 30 minutes), so samples after the end are the
// idle GPU under the dead pod's name, not the pod; averaged in, they dilute its activity
// and charge idle time to it. Sources of ends: ingest/kube/pod_ends.h.
struct PodEnd {
  std::string pod;                  // as PodSeries::pod
  double end_s = 0;                 // the end, seconds on the telemetry's clock
  std::string source;               // where the end comes from, e.g. "kube_pod_completion_time"
  std::size_t dropped_samples = 0;  // sample times after end_s dropped, any metric (0: none followed it)
};

// GPU memory used by processes outside any pod on one GPU: its DCGM series with an empty
// `pod` label (dcgm-exporter attributes a GPU to a pod only while a pod holds it). The
// figure each plan subtracts from that GPU's capacity (plan/reserved_gpus.h), and the one
// online placement subtracts from that GPU's free memory.
struct ReservedGpuMemory {
  std::string gpu;   // dcgm-exporter UUID ("/gi<N>" added for a MIG instance), else "<host>/gpu<N>"
  std::string host;  // Hostname label; "" when absent
  MiB peak{};        // largest DCGM_FI_DEV_FB_USED over the window, whole MiB rounded up
};
// Whether a PodSeries::device names a MIG instance: "<GPU UUID>/gi<GPU_I_ID>" (the readers'
// ids) or a MIG device UUID ("MIG-...", as nvidia-smi -L prints it).
inline bool IsMigDevice(std::string_view device) {
  return device.rfind("MIG-", 0) == 0 || device.find("/gi") != std::string_view::npos;
}

// How the Prometheus reader fetched the telemetry (ingest/prometheus/split.h,
// ingest/prometheus/telemetry.h): what the plan reports in telemetry.queries.
// A warning or info Prometheus sent with an answer (its `warnings`, `infos`): the data may be
// partial ("partial result: store gateway down").
struct QueryNotice {
  std::string query;  // PromQL
  std::string kind;   // "warning" or "info"
  std::string text;
};

struct TelemetryQueries {
  std::size_t requests = 0;            // HTTP requests answered (range chunks and series look-ups)
  std::size_t series_lookups = 0;      // /api/v1/series look-ups that sized the queries
  std::size_t queries = 0;             // range queries asked
  std::size_t split_queries = 0;       // of those, split by namespace or pod batch under the answer cap
  std::size_t parts = 0;               // range queries sent after splitting
  std::uint64_t answer_bytes = 0;      // bytes of all answers
  std::uint64_t max_answer_bytes = 0;  // the answer cap
  double requested_step_s = 0;         // --step
  double step_s = 0;                   // the step read: wider when the window passed max_points_per_series
  std::size_t max_points_per_series = 0;
  std::string step_rule;  // why the step is what it is, for the reader of the plan
  std::string scope;      // the --namespace / --selector matchers added to every query ("" = none)
  std::vector<QueryNotice> notices;  // what the server warned of, each once
};

struct Telemetry {
  double start_s = 0;                       // time of grid sample 0, seconds
  double step_s = 60;                       // grid spacing, seconds (> 0)
  std::size_t samples = 0;                  // grid length; every series has this many entries
  std::vector<PodSeries> pods;              // ordered by pod name
  std::vector<std::string> skipped;         // pods left out, each "pod: reason"
  std::vector<ContainerSeries> containers;  // by pod, container; empty from the file readers
  std::string gpu_model_name;   // dcgm-exporter's modelName shared by every pod's GPU; "" if unknown or mixed
  std::vector<PodEnd> ended{};  // pods with samples dropped after their end, by pod
  // Per GPU no pod held at some time, the memory used there outside pods (peak > 0), by gpu.
  std::vector<ReservedGpuMemory> reserved_gpu_memory{};
  std::optional<TelemetryQueries> queries{};  // with --prometheus: requests and the step rule

  double window_hours() const { return static_cast<double>(samples) * step_s / 3600.0; }
};

}  // namespace gpufit
