// When pods ended, from each source that knows it, and the cut of raw samples after the end
// (model/telemetry.h PodEnd says why those samples are not the pod's).
//
// A pod has ended when its phase is Succeeded or Failed (every container terminated and
// none restarts); its end is then the latest `finishedAt` of its containers' terminated
// states. That is kube-state-metrics' `kube_pod_completion_time` (internal/store/pod.go:
// the latest `.status.containerStatuses[].state.terminated.finishedAt`, Unix seconds); the
// metric also exists for a Running pod one of whose containers terminated, so it is used
// only for a pod whose `kube_pod_status_phase` is Succeeded or Failed. Sources:
//  * kubectl get pods -o json: `.status.phase` and `.status.containerStatuses[]`
//    (https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/);
//  * kube-state-metrics (docs/metrics/workload/pod-metrics.md): kube_pod_completion_time
//    (gauge, seconds, labels namespace, pod, uid) and kube_pod_status_phase (gauge 0/1,
//    label phase); a pod seen Succeeded or Failed without a completion time ends at the
//    first evaluation time that shows the phase (at most a step late);
//  * a long CSV row with metric `kube_pod_completion_time` (ingest/files/telemetry_readers.h).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpufit/ingest/align.h"
#include "gpufit/ingest/prometheus/client.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/model/telemetry.h"

namespace gpufit {

struct KnownEnd {
  double end_s = 0;    // seconds on the telemetry's clock (Unix seconds for Kubernetes sources)
  std::string source;  // e.g. "kube_pod_completion_time", "pods JSON finishedAt"
  auto operator<=>(const KnownEnd&) const = default;
};

// Ends by pod key ("namespace/pod", or the long CSV's pod name), ascending. Several ends
// under one name are several pods of that name (a Job's retried pod, a recreated replica).
using PodEnds = std::map<std::string, std::vector<KnownEnd>>;

// Adds `from`'s ends to `into`, keeping each list ascending and without repeats.
void MergePodEnds(PodEnds& into, const PodEnds& from);

// Pods in phase Succeeded or Failed with a terminated app container: the latest finishedAt
// (KubePod::finished_s). Other pods have no end.
PodEnds PodEndsFromKubePods(const std::vector<KubePod>& pods);

// Range-query answers of kube_pod_completion_time and of kube_pod_status_phase restricted
// to phase Succeeded or Failed (values 0 or 1), paired by pod key and `uid`.
PodEnds PodEndsFromKubeStateMetrics(const std::vector<PromSeries>& completion_time,
                                    const std::vector<PromSeries>& ended_phase);

// The end that applies to samples from `first_s` on: the first end at or after it, else
// the last end (every sample is after it); nullptr without ends.
const KnownEnd* EndFor(const std::vector<KnownEnd>& ends, double first_s);

// Drops from `raw` the samples of each pod after its end (the pod's own name, else its
// PodKeyOf, looked up in `ends`); a sample at the end itself stays. Returns one PodEnd per
// pod that lost samples, by pod. A pod that loses every sample leaves `raw`.
std::vector<PodEnd> DropSamplesAfterEnd(RawTelemetry& raw, const PodEnds& ends);

}  // namespace gpufit
