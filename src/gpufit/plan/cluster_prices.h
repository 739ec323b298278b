// GPU prices from the cluster itself (OpenCost, model/node_prices.h) instead of the catalog's
// list prices, and the record of which source priced each figure.
//
// Each node's GPU model: its product name (kubectl's nvidia.com/gpu.product label, else
// kube-state-metrics' label_nvidia_com_gpu_product, else dcgm-exporter's modelName on that
// host) matched to a catalog model by NormalizedGpuProduct (plan/kube_manifests.h).
// A catalog model's price = the mean per GPU over the cluster's nodes of that model that
// publish node_gpu_hourly_cost > 0: sum(price x GPUs) / sum(GPUs), GPUs from
// node_gpu_count, else kubectl's, else 1 (OpenCost publishes 0 for nodes without GPUs).
// Models without such a node keep the catalog's list price; a GPU node of a known model whose
// price is 0 is listed in `unpriced` with that reason, and the model's basis says the price was
// 0 (not that no node publishes one). Negative, NaN and absurd prices never get here: they are
// bad input (CheckOpenCostSeries, ingest/prometheus/opencost.h). Spot prices stay the catalog's.
// Every figure of the plan priced from a model (before/after USD, right-sizing, MIG, the
// model-loading saving) then uses it; the section says which source priced each model.
// Containers (the ancillary section) take their node's own node_cpu_hourly_cost and
// node_ram_hourly_cost where OpenCost has both.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/model/node_prices.h"

namespace gpufit {

struct GpuModelPrice {
  std::string gpu{};  // catalog id
  double usd_per_gpu_hour = 0;
  double catalog_usd_per_gpu_hour = 0;
  std::vector<std::string> nodes{};  // the nodes it is the mean over
  int gpus = 0;
};

struct ClusterPrices {
  bool opencost = false;                          // the server had OpenCost series
  std::vector<NodePrice> nodes{};                 // as read, by node
  std::map<std::string, std::string> node_gpu{};  // node -> catalog id, where known
  std::vector<GpuModelPrice> models{};            // models priced from OpenCost, by id
  std::vector<std::string> unpriced{};            // "node: reason" for GPU-priced nodes left out
  std::string source{};                           // where the telemetry came from (the server), for words

  const GpuModelPrice* Find(const std::string& gpu) const {
    for (const GpuModelPrice& m : models)
      if (m.gpu == gpu) return &m;
    return nullptr;
  }
  // The node's OpenCost price, when it has both a CPU and a RAM price.
  const NodePrice* CpuRamOf(const std::string& node) const {
    for (const NodePrice& n : nodes)
      if (n.node == node && n.usd_per_core_hour && n.usd_per_gib_hour) return &n;
    return nullptr;
  }
};

// `products`: node -> GPU product name (server-side sources); `kube_nodes` (may be null):
// kubectl's nodes, whose product label and GPU count win.
ClusterPrices PriceFromCluster(const std::vector<NodePrice>& nodes, const std::map<std::string, std::string>& products,
                               const std::vector<KubeNode>* kube_nodes, const GpuCatalog& catalog);

// The catalog with the models of `prices` at the cluster's price (GpuCatalog::WithOnDemandPrices).
GpuCatalog ApplyClusterPrices(const GpuCatalog& catalog, const ClusterPrices& prices);

// The plan's "prices" section. `prices` null: no OpenCost to read (a file's telemetry), or
// `no_opencost_reason` says why the catalog priced everything. `current`, `target`: the
// plan's models, named with their source.
std::string ClusterPricesToJson(const ClusterPrices* prices, const std::string& no_opencost_reason,
                                const GpuModel& current, const GpuModel& target);
std::string ClusterPricesToMarkdown(const ClusterPrices* prices, const std::string& no_opencost_reason,
                                    const GpuModel& current, const GpuModel& target);

}  // namespace gpufit
