// Prices the cluster publishes about its own nodes (OpenCost) and each node's GPU model, from
// a Prometheus server that scrapes OpenCost, kube-state-metrics and dcgm-exporter.
//
// OpenCost's metrics (opencost/opencost pkg/costmodel/metrics.go at commit 02e06667;
// https://opencost.io/docs/integrations/prometheus): node_gpu_hourly_cost (USD per GPU-hour,
// one GPU), node_cpu_hourly_cost (USD per vCPU-hour), node_ram_hourly_cost (USD per
// GiB-hour), node_gpu_count (the node's GPUs), each labelled instance, node, instance_type,
// region, provider_id, arch, uid. OpenCost sets `instance` and `node` both to the node's
// name, and its docs scrape it with honor_labels: true; the docs deprecate `instance`, so
// `node` is read, `instance` only where `node` is missing.
//
// Queries (range queries over the telemetry's range at a coarse step C = max(step,
// (until - since) / 720) whole seconds, so a week is 720 evaluations per series: prices move
// slowly; W = C - 1 ms as in prometheus_telemetry.h):
//   avg_over_time(node_gpu_hourly_cost[W]), ...cpu..., ...ram..., avg_over_time(node_gpu_count[W])
//   max_over_time(kube_node_labels{label_nvidia_com_gpu_product!=""}[W])   GPU feature discovery's
//       product label, exported by kube-state-metrics when allow-listed
//       (--metric-labels-allowlist=nodes=[nvidia.com/gpu.product]; KSM sanitizes the name)
//   count by (Hostname, hostname, modelName) (max_over_time(DCGM_FI_DEV_FB_USED[W]))
//       dcgm-exporter's model name per host (its host label is the node's name under the
//       GPU Operator, which sets NODE_NAME)
// Scope: these series are node-level (OpenCost, kube_node_labels, the DCGM model per host), so
// --namespace/--selector do not apply to them: a node's price is the node's, whoever runs on it.
// A node's price is the mean over the evaluations that hold it (a step's own mean of its
// samples): the window's mean price, for nodes that came and went too.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/ingest/prometheus/client.h"
#include "gpufit/ingest/prometheus/telemetry.h"
#include "gpufit/model/node_prices.h"

namespace gpufit {

// The coarse step C above, seconds (whole seconds, >= range.step_s).
double ClusterStepFor(const TelemetryRange& range);

// Bounds on OpenCost's values: a sample that is NaN, negative or above its bound is bad input
// (kInvalidArgument naming the metric, the node, the time and the value; exit 2), never a price.
// The bounds are two orders of magnitude above the dearest list prices (about 12 USD per
// H100-hour, under 0.1 USD per vCPU-hour, under 0.02 USD per GiB-hour on demand; AWS p5, 2025)
// and above the largest GPU node (16 GPUs): a value past them is a broken exporter or a typo,
// and would turn the plan's dollars into nonsense. A price of 0 is valid (OpenCost publishes 0
// for nodes without GPUs, or without pricing data); plan/cluster_prices.h says so in the plan.
inline constexpr double kMaxUsdPerGpuHour = 1'000;
inline constexpr double kMaxUsdPerCoreHour = 100;
inline constexpr double kMaxUsdPerGibHour = 100;
inline constexpr double kMaxNodeGpus = 1'024;

// Checks the answers of the four OpenCost queries (in the order of NodePricesFromSeries) against
// the bounds above. Errors: kInvalidArgument "node_gpu_hourly_cost of node gpu-1 at
// 2026-01-01T01:00:00Z is -5: expected a number from 0 to 1000 USD per GPU-hour (...)".
Result<void> CheckOpenCostSeries(const std::vector<PromSeries>& gpu, const std::vector<PromSeries>& cpu,
                                 const std::vector<PromSeries>& ram, const std::vector<PromSeries>& gpu_count);

// Every node with any OpenCost series, by node. Empty when the server has none.
// Errors: those of QueryRange and CheckOpenCostSeries.
Result<std::vector<NodePrice>> ReadOpenCostPrices(const PrometheusOptions& options, const TelemetryRange& range);

// Node -> GPU product name ("NVIDIA-H100-80GB-HBM3" from the label, "NVIDIA H100 80GB HBM3"
// from dcgm-exporter), the label first. Errors: those of QueryRange.
Result<std::map<std::string, std::string>> ReadNodeGpuProducts(const PrometheusOptions& options,
                                                               const TelemetryRange& range);

// The mappings alone (exposed for tests), from the answers of the queries above.
std::vector<NodePrice> NodePricesFromSeries(const std::vector<PromSeries>& gpu, const std::vector<PromSeries>& cpu,
                                            const std::vector<PromSeries>& ram,
                                            const std::vector<PromSeries>& gpu_count);
std::map<std::string, std::string> NodeGpuProductsFromSeries(const std::vector<PromSeries>& node_labels,
                                                             const std::vector<PromSeries>& dcgm_models);

}  // namespace gpufit
