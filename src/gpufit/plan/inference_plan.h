// The inference section of a plan: per service the recommended replica schedule, the
// autoscaler manifests that apply it, and the table of every policy replayed on the trace.
//
// Manifests (one YAML document each, for `kubectl apply`):
//  * HorizontalPodAutoscaler (autoscaling/v2) on a Pods metric `requests_per_second`
//    (served by a metrics adapter such as prometheus-adapter), averageValue = the tuned
//    HPA-like target per replica; minReplicas = the schedule's minimum (at least 1: the
//    HPA cannot scale to zero), maxReplicas = the static-peak count; behavior as the
//    replayed HPA (scale-up 100% or 4 pods per 15 s, scale-down stabilization).
//  * KEDA ScaledObject (keda.sh/v1alpha1): one `cron` trigger per run of gpufit's schedule
//    above its minimum (start rounded down, end up to the minute, clock of the trace in
//    UTC, repeating daily), plus a `prometheus` trigger at the same per-replica threshold as
//    a reactive floor; minReplicaCount 0 when the schedule scales to zero.
// Sources: kubernetes.io/docs/reference/kubernetes-api/workload-resources/horizontal-pod-autoscaler-v2/,
// keda.sh/docs/latest/reference/scaledobject-spec/, keda.sh/docs/latest/scalers/cron/,
// keda.sh/docs/latest/scalers/prometheus/.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gpufit/inference/inference_study.h"

namespace gpufit {

struct ScheduleRun {
  double from_s = 0, to_s = 0;  // seconds since the trace's first request
  int replicas = 0;
};
// gpufit's schedule as runs of equal counts over [0, duration].
std::vector<ScheduleRun> ScheduleRuns(const InferenceStudy& study);

// (file name, YAML) of the HPA and the KEDA ScaledObject of one service.
std::vector<std::pair<std::string, std::string>> InferenceManifests(const InferenceStudy& study);

std::string InferencePlanToJson(const std::vector<InferenceStudy>& studies);
std::string InferencePlanToMarkdown(const std::vector<InferenceStudy>& studies);

}  // namespace gpufit
