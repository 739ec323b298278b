// The one autoscaler per inference service that applies gpufit's replica schedule: an HPA
// (default) or, when asked, a KEDA ScaledObject. Never both: KEDA's admission webhook refuses
// a ScaledObject whose target an HPA already scales, and two scalers on one Deployment fight.
//
//  * HorizontalPodAutoscaler (autoscaling/v2) on a Pods metric `requests_per_second`
//    (served by a metrics adapter such as prometheus-adapter), averageValue = the tuned
//    HPA-like target per replica; minReplicas = the service's HPA minimum, maxReplicas = the
//    most replicas the schedule or the replayed HPA reached (at least static peak's count);
//    behavior as the replayed HPA (scale-up 100% or 4 pods per 15 s, scale-down stabilization).
//  * KEDA ScaledObject (keda.sh/v1alpha1): one `cron` trigger per run of gpufit's schedule
//    above its minimum (start rounded down, end up to the minute, clock of the trace in
//    UTC, repeating daily), plus a `prometheus` trigger at the same per-replica threshold as
//    a reactive floor, on the server and query the options give; minReplicaCount 0 when the
//    schedule scales to zero.
// Neither scales on GPU utilisation: DCGM_FI_DEV_GPU_UTIL is NVML's utilization.gpu, the
// "percent of time over the past sample period during which one or more kernels was
// executing on the GPU" (docs.nvidia.com/deploy/nvml-api/structnvmlUtilization__t.html), so
// one request in flight keeps a kernel running and reads ~100%: it cannot tell 1 from 10
// concurrent requests, and an autoscaler on it sees a saturated GPU at any load (it reads 0%
// or 100%: github.com/NVIDIA/dcgm-exporter/issues/341). The request rate, the queue depth or
// DCGM_FI_PROF_SM_ACTIVE (the share of SM cycles with work, which grows with concurrency)
// can; AutoscalerWarnings says so when --keda-query reads DCGM_FI_DEV_GPU_UTIL.
// Sources: kubernetes.io/docs/reference/kubernetes-api/workload-resources/horizontal-pod-autoscaler-v2/,
// keda.sh/docs/latest/reference/scaledobject-spec/, keda.sh/docs/latest/scalers/cron/,
// keda.sh/docs/latest/scalers/prometheus/, keda.sh/docs/latest/concepts/scaling-deployments/
// (an HPA and a ScaledObject must not target the same workload).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/inference/inference_study.h"

namespace gpufit {

enum class AutoscalerKind { kHpa, kKeda };

// The default of AutoscalerOptions::keda_query: the request rate of the Deployment's pods.
inline constexpr const char* kDefaultKedaQuery =
    "sum(rate(http_requests_total{namespace=\"{namespace}\",deployment=\"{deployment}\"}[1m]))";

struct AutoscalerOptions {
  AutoscalerKind kind = AutoscalerKind::kHpa;
  std::string keda_prometheus;                 // the prometheus trigger's serverAddress; kKeda needs it
  std::string keda_query = kDefaultKedaQuery;  // PromQL, requests/s of the whole service;
                                               // {namespace} and {deployment} are replaced
};

// kInvalidArgument when kKeda has no http(s) keda_prometheus, or kHpa has one (it would be
// ignored), or the query is empty.
Result<void> CheckAutoscalerOptions(const AutoscalerOptions& options);

// Warnings for an autoscaler that will not work as meant (empty: none): a --keda-query that
// reads DCGM_FI_DEV_GPU_UTIL (above). The inference plan lists them (JSON `warnings`,
// Markdown "- warning: ...").
std::vector<std::string> AutoscalerWarnings(const AutoscalerOptions& options);

struct ScheduleRun {
  double from_s = 0, to_s = 0;  // seconds since the trace's first request
  int replicas = 0;
};
// gpufit's schedule as runs of equal counts over [0, duration].
std::vector<ScheduleRun> ScheduleRuns(const InferenceStudy& study);

int MinReplicas(const std::vector<ScheduleRun>& runs);  // 0 for no runs
// The most replicas the autoscalers may ask for: static peak's count, or more where gpufit's
// schedule goes above it (static peak may spend the whole miss allowance at the peak); >= 1.
int MaxReplicas(const InferenceStudy& study, const std::vector<ScheduleRun>& runs);

// The tuned HPA's requests per second per replica, rounded up in the unit the manifests
// carry: milli when at least 0.1, micro when at least 0.0001, else nano (Kubernetes
// quantities take the suffixes m, u and n), so at least three significant digits survive.
struct RateTarget {
  double per_s = 0;
  std::string quantity;  // e.g. "982m"
};
RateTarget TargetRps(const InferenceStudy& study);

// Cron triggers repeat daily: they describe a trace of at most a day.
bool CronFits(const InferenceStudy& study);

// (file name, YAML) of the service's one autoscaler: <name>-hpa.yaml or
// <name>-keda-scaledobject.yaml. Precondition: CheckAutoscalerOptions(options) passed.
std::pair<std::string, std::string> AutoscalerManifest(const InferenceStudy& study, const AutoscalerOptions& options);

}  // namespace gpufit
