// The cluster's training pods, nodes and node history from kube-state-metrics and
// Karpenter in Prometheus, for training/cluster_jobs.h and training/spot_history.h.
//
// Pods: the state at the range's last grid time T, each query evaluated once at T over
// the window (T - max(step, 5 min), T] (max_over_time; 5 min is Prometheus's default
// lookback, so a pod scraped less often than the step is still seen):
//   kube_pod_container_resource_requests{resource="nvidia_com_gpu"}  GPUs, summed over containers; node
//   kube_pod_status_phase{phase="Running"} == 1                        running at T
//   kube_pod_owner          owner_kind, owner_name (owner_is_controller="true" first; "<none>" = none)
//   kube_pod_info           node (when the requests lack it), created_by_kind/name when no owner
//   kube_pod_start_time     start, Unix seconds (else kube_pod_created)
//   kube_pod_labels         label_<key> of the gang keys training/gang.h reads
//   kube_pod_annotations    annotation_<key> of gpufit.io/* (cluster_jobs.h) and Volcano's group
// Scope: every kube_pod_* query carries PrometheusOptions::ScopeMatchers() (--namespace,
// --selector; AddMatchers in prometheus_selector.h), so pods outside the scope are not read.
// The node history and Karpenter series below are node-level and cluster-wide: the scope does
// not apply to them (a node has no namespace, and its spot history is the whole cluster's).
// Only pods with GPU requests and phase Running at T are kept. Labels and annotations
// appear only when kube-state-metrics allow-lists them (--metric-labels-allowlist,
// --metric-annotations-allowlist); their names are KsmLabelName's.
//
// Node history, over the whole range on a grid of step max(--step, range / 2,000) rounded
// up to whole seconds (W = that step - 1 ms, as prometheus_telemetry.h; at most 2,000 points
// per node, so a week of a thousand nodes stays far under the answer cap):
//   kube_node_labels   presence, and the capacity-type and GPU labels (allow-listed):
//                      label_karpenter_sh_capacity_type, label_eks_amazonaws_com_capacity_type,
//                      label_cloud_google_com_gke_spot, label_cloud_google_com_gke_preemptible,
//                      label_kubernetes_azure_com_scalesetpriority, label_nvidia_com_gpu_product,
//                      label_nvidia_com_gpu_count
//   kube_node_info     presence of nodes without kube_node_labels
// A node's capacity type is its labels' last (KubeNode::capacity_type rule); its presence
// runs from its first to its last sample of either metric.
//
// Karpenter (spot reclaims counted by Karpenter itself), over the range:
//   karpenter_nodeclaims_disrupted_total{reason="spot_interrupted"}   kubernetes-sigs/karpenter
//       pkg/metrics (labels reason, nodepool, capacity_type), incremented by
//       karpenter-provider-aws pkg/controllers/interruption with reason = the message kind
//       ("spot_interrupted", messages/types.go);
//   karpenter_interruption_received_messages_total{message_type="spot_interrupted"}
//       karpenter-provider-aws pkg/controllers/interruption/metrics.go (v1): used when the
//       first has no series (it counts messages, not nodes);
//   karpenter_build_info: Karpenter ran in the range (then no series above means 0 reclaims).
// Increase of a counter series: the sum of its rises between consecutive samples, a fall
// being a restart from 0 (Prometheus's reset rule); a series whose first sample comes after
// the range's first grid time was created in the range (Karpenter creates a labelled child
// at its first increment), so its first value counts too.
// Errors: those of QueryRange and GridFor.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/ingest/prometheus/client.h"
#include "gpufit/ingest/prometheus/telemetry.h"
#include "gpufit/model/cluster_history.h"
#include "gpufit/model/kube_cluster.h"

namespace gpufit {

// The most grid steps of the node history (see above).
inline constexpr double kHistoryPoints = 2000;

struct PrometheusClusterState {
  std::vector<KubePod> pods;    // GPU pods running at the last grid time, by Key()
  std::vector<KubeNode> nodes;  // nodes seen in the range, by name (labels: the known keys only)
  ClusterHistory history;
};

// The label name kube-state-metrics gives a Kubernetes label or annotation key: `prefix`
// + "_" + the key with every character outside [a-zA-Z0-9_] replaced by "_", then
// snake_case (an "aB" pair becomes "a_b") and lower case (kube-state-metrics
// internal/store/utils.go, labelName). KsmLabelName("label", "eks.amazonaws.com/capacityType")
// = "label_eks_amazonaws_com_capacity_type".
std::string KsmLabelName(std::string_view prefix, std::string_view key);

Result<PrometheusClusterState> ReadPrometheusClusterState(const PrometheusOptions& options,
                                                          const TelemetryRange& range);

// The answers, in the order of the header (pods: instant at the range's last grid time;
// nodes and Karpenter: on the history grid `grid`), for tests.
struct ClusterStateAnswers {
  std::vector<PromSeries> gpu_requests, running, owner, info, start_time, created, labels, annotations;
  std::vector<PromSeries> node_labels, node_info;
  std::vector<PromSeries> karpenter_disrupted, karpenter_messages, karpenter_build_info;
};
PrometheusClusterState ClusterStateFromSeries(const ClusterStateAnswers& a, const GridSpec& grid, double since_s,
                                              double until_s);

}  // namespace gpufit
