// What a cluster says about its own nodes: OpenCost's prices per node, each node's network
// link (node-exporter), and each pod's receive rate (cAdvisor). Read by ingest/prometheus/opencost.h and
// ingest/prometheus/network.h; used by plan/cluster_prices.h and the ancillary section.
//
// OpenCost's units (opencost/opencost pkg/costmodel/metrics.go at 02e06667: a node's
// node_total_hourly_cost = vCPUs x node_cpu_hourly_cost + RAM GiB (bytes / 1024^3) x
// node_ram_hourly_cost + GPUs x node_gpu_hourly_cost): USD per vCPU-hour, per GiB-hour and
// per GPU-hour (one GPU, not the node's GPUs together); node_gpu_count is the node's GPUs.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gpufit {

struct NodePrice {
  std::string node{};           // the Kubernetes node (OpenCost's `node` label)
  std::string instance_type{};  // OpenCost's `instance_type` label ("" when absent)
  std::string region{};         // OpenCost's `region` label
  // Time means over the window of the node's samples; nullopt when the metric is absent.
  std::optional<double> usd_per_gpu_hour{};   // node_gpu_hourly_cost: one GPU
  std::optional<double> usd_per_core_hour{};  // node_cpu_hourly_cost: one vCPU
  std::optional<double> usd_per_gib_hour{};   // node_ram_hourly_cost: one GiB
  std::optional<int> gpus{};                  // node_gpu_count, rounded
  std::size_t samples = 0;                    // evaluation steps that held a price
};

// A node's link: node-exporter's node_network_speed_bytes (the device's
// /sys/class/net/<device>/speed, Mbit/s x 125,000) of its fastest device.
struct NodeLink {
  std::string node{};
  std::string device{};       // e.g. "eth0"
  double bytes_per_s = 0;     // > 0; 0 when no device has a usable speed (then `unusable`)
  std::string node_source{};  // how the node-exporter series was tied to the node, in words
  std::string unusable{};     // why the node's link speed is unknown: every device 0, negative or NaN
};

// One pod's network receive rate on the Telemetry grid (model/telemetry.h): entry k is the
// mean bytes/s over step k (between samples k-1 and k); NaN where unknown.
struct PodNetwork {
  std::string pod{};   // "namespace/pod" (PodKeyOf of the GPU series)
  std::string node{};  // the Kubernetes node it ran on; "" when unknown
  std::vector<float> receive_bytes_per_s{};
};

}  // namespace gpufit
