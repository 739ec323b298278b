// Each pod's network receive rate, its node, and each node's link, from a Prometheus server
// that scrapes the kubelets' cAdvisor, kube-state-metrics and node-exporter; for the network
// check of model and data loading (analyze/network_loading.h).
//
// Queries (range queries; W = step - 1 ms as in prometheus_telemetry.h):
//   max_over_time(container_network_receive_bytes_total{pod!="",interface!="lo"}[W])
//       cAdvisor, counter, bytes (/sys/class/net/<interface>/statistics/rx_bytes of the
//       pod's network namespace), on the telemetry's grid from one step before its start.
//       Network counters sit on the pod's sandbox (pause) container, not on its app
//       containers, which share its namespace: `container="POD"` under dockershim and CRI-O,
//       `container=""` with the pause image under containerd (kubernetes/kubernetes#43560,
//       cri-o/cri-o#6657, rancher/rke2#7436); series with `pod=""` are the host's own
//       interfaces (id="/", google/cadvisor#2207). So every series with a pod counts, any
//       container label; per (namespace, pod, interface) the largest rate of its series
//       (a duplicate cgroup reports the same namespace), summed over interfaces.
//   max_over_time(kube_pod_info{node!=""}[C])   kube-state-metrics: each pod's node (the
//       last seen); kubectl's pods, when given, win.
//   max_over_time(node_network_speed_bytes[C])  node-exporter (netclass collector, Linux),
//       bytes/s per `device`; devices without a speed (virtual ones) export none.
//   max_over_time(node_uname_info[C])           node-exporter: `nodename` per `instance`.
// C is the coarse step of ingest/prometheus/opencost.h. Rates: consecutive raw samples of a
// series with Prometheus's counter-reset rule (a decrease restarts from 0), as in
// prometheus_containers.h, at the grid sample nearest the later sample.
// A node's link is its fastest device other than `lo`. Tying a node-exporter series to the
// Kubernetes node, first match: its `node` or `kubernetes_node` label (added by relabeling
// from __meta_kubernetes_pod_node_name, as many ServiceMonitors do); node_uname_info's
// `nodename` of its `instance` (the kernel's hostname: the node's name unless the kubelet
// overrides it); its `instance` without the port (kube-prometheus and OpenShift relabel
// `instance` to the node's name).
// Scope: the pod-level queries (container_network_receive_bytes_total, kube_pod_info) carry
// PrometheusOptions::ScopeMatchers() (--namespace, --selector); the node exporter's series
// (node_network_speed_bytes, node_uname_info) are node-level and read cluster-wide.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/ingest/prometheus/client.h"
#include "gpufit/ingest/prometheus/telemetry.h"
#include "gpufit/model/node_prices.h"
#include "gpufit/model/telemetry.h"

namespace gpufit {

struct ClusterNetwork {
  std::vector<PodNetwork> pods;                  // pods with a receive series, by pod key
  std::vector<NodeLink> links;                   // by node
  std::map<std::string, std::string> pod_nodes;  // pod key -> node (kubectl's or kube_pod_info)
};

// A pod receiving faster than this is a broken counter, not traffic: 10^12 bytes/s is 8 Tbit/s,
// ten 800 GbE NICs (the fastest Ethernet standard, IEEE 802.3df-2024) at line rate.
inline constexpr double kMaxReceiveBytesPerS = 1e12;

// Bad input (kInvalidArgument naming the pod, interface, time and rate) when a receive
// counter rises faster than kMaxReceiveBytesPerS between two samples, never a rate.
Result<void> CheckReceiveSeries(const std::vector<PromSeries>& receive_bytes);

// `kubectl_nodes`: pod key -> node from kubectl's pods (may be empty). The telemetry's grid
// (start_s, step_s, samples) places the rates. Errors: those of QueryRange and
// CheckReceiveSeries. A node whose devices all report a speed of 0, below 0 (node-exporter's
// -1 Mb/s for an unknown speed) or NaN gets a NodeLink of 0 bytes/s with `unusable` saying so;
// its pods are listed as not judged with that reason (analyze/network_loading.h).
Result<ClusterNetwork> ReadPrometheusNetwork(const PrometheusOptions& options, const TelemetryRange& range,
                                             const Telemetry& telemetry,
                                             const std::map<std::string, std::string>& kubectl_nodes);

// The mappings alone (exposed for tests).
std::vector<PodNetwork> PodReceiveRates(const std::vector<PromSeries>& receive_bytes, const Telemetry& telemetry);
std::map<std::string, std::string> PodNodesFromSeries(const std::vector<PromSeries>& pod_info);
std::vector<NodeLink> NodeLinksFromSeries(const std::vector<PromSeries>& speed, const std::vector<PromSeries>& uname);

}  // namespace gpufit
