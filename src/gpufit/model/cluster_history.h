// What a cluster's metrics remember about its nodes over a time range: when each node was
// seen, of which capacity type, and the spot reclaims its autoscaler counted. The input of
// the spot interruption estimate (training/spot_history.h); ingest/prometheus/training.h
// reads it from kube-state-metrics and Karpenter.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gpufit {

// One node's presence on the range's grid (kube_node_info / kube_node_labels samples).
struct NodePresence {
  std::string node{};
  std::string capacity_type{};    // "spot", "on-demand", "reserved" or "" (KubeNode::capacity_type)
  double first_s = 0;             // Unix seconds of its first grid sample in the range
  double last_s = 0;              // Unix seconds of its last grid sample in the range
  bool gke = false, aks = false;  // its capacity label was GKE's or AKS's (30 s notice), else AWS's
};

struct ClusterHistory {
  double since_s = 0;  // the range, Unix seconds
  double until_s = 0;
  double step_s = 60;      // seconds per grid sample
  double last_grid_s = 0;  // the range's last grid time (<= until_s)
  std::vector<NodePresence> nodes{};
  // Spot reclaims Karpenter counted in the range (ingest/prometheus/training.h says how),
  // and the metric that counted them; nullopt when Karpenter's metrics are absent.
  std::optional<double> karpenter_spot_reclaims{};
  std::string karpenter_metric{};
};

}  // namespace gpufit
