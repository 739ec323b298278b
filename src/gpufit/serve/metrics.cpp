#include "gpufit/serve/metrics.h"

#include <fmt/format.h>

namespace gpufit::serve {

void ExtenderMetrics::Observe(const std::string& verb, const std::string& outcome, double seconds) {
  const std::lock_guard lock(mu_);
  ++requests_[{verb, outcome}];
  Histogram& h = latency_[verb];
  ++h.count;
  h.sum_s += seconds;
  for (std::size_t b = 0; b < kBucketsS.size(); ++b) {
    if (seconds <= kBucketsS[b]) {
      ++h.buckets[b];
      break;
    }
  }
}

void ExtenderMetrics::CountNodes(const std::string& answer, std::int64_t n) {
  const std::lock_guard lock(mu_);
  nodes_[answer] += static_cast<std::uint64_t>(n);
}

void ExtenderMetrics::CountPodRequest(const std::string& from) {
  const std::lock_guard lock(mu_);
  ++pod_requests_[from];
}

void ExtenderMetrics::CountClosed(const std::string& reason) {
  const std::lock_guard lock(mu_);
  ++closed_[reason];
}

std::string ExtenderMetrics::Text(const Gauges& g) const {
  const std::lock_guard lock(mu_);
  std::string out;
  out += "# HELP gpufit_extender_requests_total Extender requests answered, by verb and outcome.\n";
  out += "# TYPE gpufit_extender_requests_total counter\n";
  for (const auto& [key, n] : requests_)
    out += fmt::format("gpufit_extender_requests_total{{verb=\"{}\",outcome=\"{}\"}} {}\n", key.first, key.second, n);
  out += "# HELP gpufit_extender_filter_nodes_total Candidate nodes of filter requests, by answer.\n";
  out += "# TYPE gpufit_extender_filter_nodes_total counter\n";
  for (const auto& [answer, n] : nodes_)
    out += fmt::format("gpufit_extender_filter_nodes_total{{answer=\"{}\"}} {}\n", answer, n);
  out += "# HELP gpufit_extender_pod_requests_total Filter requests by how the pod's request was taken.\n";
  out += "# TYPE gpufit_extender_pod_requests_total counter\n";
  for (const auto& [from, n] : pod_requests_)
    out += fmt::format("gpufit_extender_pod_requests_total{{from=\"{}\"}} {}\n", from, n);
  out += "# HELP gpufit_extender_connections_closed_total Connections the server closed, by reason.\n";
  out += "# TYPE gpufit_extender_connections_closed_total counter\n";
  for (const char* reason : {"evicted", "head_timeout", "idle", "too_many_connections", "too_many_from_peer", "write_timeout"})
    out += fmt::format("gpufit_extender_connections_closed_total{{reason=\"{}\"}} {}\n", reason,
                       closed_.contains(reason) ? closed_.at(reason) : 0);
  out += "# HELP gpufit_extender_request_duration_seconds Time from a request's body read to its answer.\n";
  out += "# TYPE gpufit_extender_request_duration_seconds histogram\n";
  for (const auto& [verb, h] : latency_) {
    std::uint64_t cumulative = 0;
    for (std::size_t b = 0; b < kBucketsS.size(); ++b) {
      cumulative += h.buckets[b];
      out += fmt::format("gpufit_extender_request_duration_seconds_bucket{{verb=\"{}\",le=\"{}\"}} {}\n", verb,
                         kBucketsS[b], cumulative);
    }
    out +=
        fmt::format("gpufit_extender_request_duration_seconds_bucket{{verb=\"{}\",le=\"+Inf\"}} {}\n", verb, h.count);
    out += fmt::format("gpufit_extender_request_duration_seconds_sum{{verb=\"{}\"}} {}\n", verb, h.sum_s);
    out += fmt::format("gpufit_extender_request_duration_seconds_count{{verb=\"{}\"}} {}\n", verb, h.count);
  }
  out += "# HELP gpufit_cluster_gpu_allocation_ratio Allocated milli-GPU over the cluster's milli-GPU.\n";
  out += "# TYPE gpufit_cluster_gpu_allocation_ratio gauge\n";
  out += fmt::format("gpufit_cluster_gpu_allocation_ratio {}\n", g.gpu_allocation_ratio);
  out +=
      "# HELP gpufit_cluster_gpu_fragmentation_milli FGD fragmentation of the cluster for the target workload, "
      "milli-GPU.\n";
  out += "# TYPE gpufit_cluster_gpu_fragmentation_milli gauge\n";
  out += fmt::format("gpufit_cluster_gpu_fragmentation_milli {}\n", g.gpu_fragmentation_milli);
  out +=
      "# HELP gpufit_cluster_gpu_fragmentation_ratio Fragmented milli-GPU over free milli-GPU (simulate's "
      "frag_rate).\n";
  out += "# TYPE gpufit_cluster_gpu_fragmentation_ratio gauge\n";
  out += fmt::format("gpufit_cluster_gpu_fragmentation_ratio {}\n", g.gpu_fragmentation_ratio);
  out +=
      "# HELP gpufit_cluster_gpu_memory_overcommit_ratio GPU shares the placed pods declare over the cluster's "
      "milli-GPU.\n";
  out += "# TYPE gpufit_cluster_gpu_memory_overcommit_ratio gauge\n";
  out += fmt::format("gpufit_cluster_gpu_memory_overcommit_ratio {}\n", g.gpu_memory_overcommit_ratio);
  out += "# HELP gpufit_snapshot_nodes Nodes in the cluster snapshot.\n# TYPE gpufit_snapshot_nodes gauge\n";
  out += fmt::format("gpufit_snapshot_nodes {}\n", g.nodes);
  out += "# HELP gpufit_snapshot_pods Bound pods of the snapshot, by whether they were taken into the state.\n";
  out += "# TYPE gpufit_snapshot_pods gauge\n";
  out += fmt::format("gpufit_snapshot_pods{{state=\"placed\"}} {}\n", g.snapshot_pods);
  out += fmt::format("gpufit_snapshot_pods{{state=\"not_fitting\"}} {}\n", g.snapshot_pods_not_fitting);
  out += "# HELP gpufit_snapshots_total Cluster snapshots taken in since the start (--watch-dir refreshes them).\n";
  out += "# TYPE gpufit_snapshots_total counter\n";
  out += fmt::format("gpufit_snapshots_total {}\n", g.snapshots);
  out += "# HELP gpufit_snapshot_reservations gpufit's own binds that the last snapshot did not show yet.\n";
  out += "# TYPE gpufit_snapshot_reservations gauge\n";
  out += fmt::format("gpufit_snapshot_reservations {}\n", g.reservations_kept);
  return out;
}

}  // namespace gpufit::serve
