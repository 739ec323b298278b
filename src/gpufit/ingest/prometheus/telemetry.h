// GPU telemetry from a Prometheus server that scrapes NVIDIA's dcgm-exporter: the same
// model/telemetry.h grid the file readers produce, so a plan from Prometheus equals the
// plan from the same samples in a long CSV file.
//
// Queries (range queries, ingest/prometheus/client.h), with W = step - 1 ms so that each
// evaluation time t sees exactly the raw samples in (t - step, t] on Prometheus 2 (closed
// range) and 3 (left-open range) alike, and no sample is repeated by the 5-minute lookback:
//   max_over_time(DCGM_FI_DEV_FB_USED[W])            framebuffer used, MiB
//   avg_over_time(DCGM_FI_DEV_GPU_UTIL[W])           duty cycle, percent 0-100
//   avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE[W])  ratio 0-1, x 100; the duty cycle of a MIG
//                                                    instance, and of a full GPU that has it
//                                                    (the rule and its sources: ingest/dcgm_devices.h)
//   avg_over_time(DCGM_FI_PROF_SM_ACTIVE[W])         ratio 0-1, x 100, into PodSeries::sm_active_pct
//                                                    where enabled (not in the default counters)
//   max_over_time(kube_pod_created[W])               kube-state-metrics: each pod's creation
//                                                    time (value) and presence (samples)
//   max_over_time(kube_pod_completion_time[W])       kube-state-metrics: a finished pod's end
//   max_over_time(kube_pod_status_phase{phase=~"Succeeded|Failed"}[W])  which pods finished
// Scope: every query carries PrometheusOptions::ScopeMatchers() (--namespace, --selector;
// AddMatchers in prometheus_selector.h), and runs through QueryRangeSplit
// (prometheus_split.h), split under the answer cap; the requests go to Telemetry::queries.
//
// Steps and what a point is. With one raw sample per step (the step equals the scrape
// interval, 60 s by default) both functions return that sample. With several (a --step longer
// than the scrape interval, or the coarse step below):
//  * memory takes the step's maximum: a co-location must fit the largest memory a pod ever
//    held, and the maximum of a step is the largest raw sample in it, so the envelope (the
//    per-step peaks, and every peak of the window) stays exact however coarse the step; no
//    out-of-memory peak falls between points;
//  * duty takes the step's mean: a duty cycle is a share of time (DCGM_FI_DEV_GPU_UTIL is
//    itself the busy share of its sample period), so the mean of a step's samples is the busy
//    share of the step, and sums of means over pods still say whether their work fits in it;
//    a maximum would charge each pod its busiest moment for the whole step. (Where a GPU's
//    series changes labels inside a step, an exporter upgrade, that step has one mean per
//    series and keeps the larger, as for any two samples at one time.)
// The coarse step: a window of more than range.max_points steps of range.step_s (11,000
// by default: Prometheus's own per-query limit, so each series is one request, and a grid of
// at most that many floats per pod and metric) is read at the smallest whole multiple of the
// step that brings it under that number (30 days at 60 s: 240 s). Telemetry::queries says
// which step was read and why.
//
// Label mapping (dcgm-exporter run with --kubernetes; ../shared/reference/formats.md (a)):
//  * A GPU is identified by `UUID` (or `uuid`) and, for a MIG instance, `GPU_I_ID` (its
//    `GPU_I_PROFILE` goes to PodSeries::mig_profile); without
//    a UUID, by `Hostname` (or `hostname`, the name after dcgm-exporter commit d5e5f51) and
//    `gpu`. Series of one GPU that differ in other labels (a renamed host label, a driver
//    upgrade) are merged.
//  * The pod key is "namespace/pod" ("pod" without a namespace label). A pod on several GPUs
//    or MIG instances is one series per device, "namespace/pod[i]" (ingest/dcgm_devices.h);
//    plans keep such a pod's devices whole (optimize/multi_gpu.h). Pods that report one GPU
//    at the same times (time-slicing, MPS: DCGM measures the GPU) are left out and listed in
//    Telemetry::skipped.
//  * The pod and namespace labels are PrometheusOptions::dcgm_labels (`pod`, `namespace` by
//    default; dcgm-exporter 1.x: --pod-label pod_name --namespace-label pod_namespace).
//  * Series with an empty pod label (GPUs no pod holds, or an exporter without
//    --kubernetes) are left out and listed in Telemetry::skipped; the peak memory of each
//    such GPU is Telemetry::reserved_gpu_memory (processes outside any pod). When no series
//    has a pod, the error says how many series lack it, their label names and the fix
//    (DiagnoseMissingPodLabel); when some do and others carry a label that looks like a pod
//    label, the same diagnosis is a line of Telemetry::skipped.
//  * Samples are clipped to the pod's lifetime when kube-state-metrics is scraped: from its
//    kube_pod_created value to its last kube_pod_created sample, and to its end when it
//    finished (phase Succeeded or Failed: kube_pod_completion_time, ingest/kube/pod_ends.h; or an
//    end in `ends`, e.g. kubectl's pods): the evaluation step holding the end is the pod's,
//    later ones are dropped and counted in Telemetry::ended (dcgm-exporter keeps a finished
//    pod's labels on its GPU for about 30 minutes). A pod name reused by a new
//    pod (a recreated StatefulSet replica) is another pod: "namespace/pod@2", "@3", ... Without
//    kube-state-metrics the DCGM samples themselves bound the life.
//  * NaN, +/-Inf and DCGM's blank sentinels (>= 9223372036854775792) are "no data".
// Errors: those of QueryRange; kInvalidArgument for a value out of range (memory > 1 TiB,
// duty > 100 %, negative), naming the series; kFailedPrecondition when no pod has both
// memory and duty samples in the range, or when no DCGM series names a pod (the diagnosis
// above).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/ingest/align.h"
#include "gpufit/ingest/kube/pod_ends.h"
#include "gpufit/ingest/prometheus/client.h"
#include "gpufit/model/telemetry.h"

namespace gpufit {

// Points per series above which the reader widens the step (Prometheus's per-query limit).
inline constexpr std::size_t kMaxPointsPerSeries = 11000;

struct TelemetryRange {
  double since_s = 0;  // Unix seconds
  double until_s = 0;  // Unix seconds
  double step_s = 60;  // seconds; whole milliseconds, >= 1 s, at most until - since
  // The most steps per series before the step is widened (the coarse step above); 0: never.
  std::size_t max_points = kMaxPointsPerSeries;
};

// The step the reader uses for `range`: range.step_s, or the smallest whole multiple k of it
// with (until - since) / (k step) <= range.max_points. Errors: those of GridFor.
Result<double> ReadStep(const TelemetryRange& range);

// The most steps a range may hold (about two years at 60 s): bounds the work and memory.
inline constexpr std::size_t kMaxPrometheusSteps = 1'000'000;

// The grid of a range: steps (since, since + step], (since + step, since + 2 step], ... that
// end by `until` (a remainder shorter than a step is not read); grid sample k is the end of
// step k, the time the query evaluates max_over_time(...[W]) with W = step - 1 ms. The
// telemetry's grid is then cut to the first and last step that hold samples.
struct TelemetryGrid {
  GridSpec grid;
  std::string window;  // "[59999ms]"
};
// Errors (kInvalidArgument): a step under 1 s or not whole milliseconds, a step longer than
// the range, more than kMaxPrometheusSteps steps.
Result<TelemetryGrid> GridFor(const TelemetryRange& range);

// "namespace/pod" of a series' labels ("pod" without namespace; "" without a pod label),
// read from the labels `names` gives (`pod` and `namespace` by default).
// `exported_<pod>` / `exported_<namespace>` take precedence: that is where the exporter's own
// labels go when a ServiceMonitor scrapes it without honorLabels; there, a pod label naming
// the exporter itself (nvidia-dcgm-exporter-*, dcgm-exporter-*) means no pod: "".
std::string PodKeyFromLabels(const std::map<std::string, std::string>& labels, const PodLabelNames& names = {});

// Why DCGM series carry no pod label, for the error or warning that reports them: "N DCGM
// series carry no `pod` label (their label names: a, b, ...)" and the fix: rerun with
// --pod-label/--namespace-label when a label names a pod another way (pod_name and
// pod_namespace: dcgm-exporter 1.x; any label whose name holds "pod" / "namespace"), else
// run dcgm-exporter with --kubernetes. `label_names` is the union of the series' label names.
std::string DiagnoseMissingPodLabel(std::size_t series, const std::set<std::string>& label_names,
                                    const PodLabelNames& names);

// Reads the range from the server, with the containers' CPU and memory
// (ingest/prometheus/containers.h) on the same grid, at ReadStep(range). `ends` adds pod ends
// known elsewhere (kubectl's pods) to kube-state-metrics' own. Telemetry::queries reports the
// requests, the split queries and the step.
Result<Telemetry> ReadPrometheusTelemetry(const PrometheusOptions& options, const TelemetryRange& range,
                                          const PodEnds& ends = {});

// The mapping step alone (exposed for tests): answers of the first five queries in the
// order above -> telemetry on the common grid; `ends` as PodEndsFromKubeStateMetrics
// returns them. `source` names the server in errors.
Result<Telemetry> TelemetryFromDcgmSeries(const std::vector<PromSeries>& fb_used,
                                          const std::vector<PromSeries>& gpu_util,
                                          const std::vector<PromSeries>& gr_engine_active,
                                          const std::vector<PromSeries>& sm_active,
                                          const std::vector<PromSeries>& pod_created, const std::string& source,
                                          const std::optional<GridSpec>& grid = std::nullopt, const PodEnds& ends = {},
                                          const PodLabelNames& labels = {});

// The peak DCGM_FI_DEV_FB_USED of each GPU in series without a pod (within `grid`), GPUs
// with a peak above 0, by GPU. Errors: kInvalidArgument for a value out of [0, 1 TiB].
Result<std::vector<ReservedGpuMemory>> ReservedGpuMemoryFromDcgm(const std::vector<PromSeries>& fb_used,
                                                                 const std::optional<GridSpec>& grid = std::nullopt,
                                                                 const PodLabelNames& labels = {});

}  // namespace gpufit
