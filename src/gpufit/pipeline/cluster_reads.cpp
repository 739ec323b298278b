#include "gpufit/pipeline/cluster_reads.h"

#include "gpufit/ingest/prometheus/opencost.h"

namespace gpufit::pipeline {

Result<ClusterPricing> ReadClusterPricing(const TelemetryOrigin& origin, const std::vector<KubeNode>* nodes,
                                          const GpuCatalog& catalog) {
  ClusterPricing out{.prices = std::nullopt, .catalog_reason = "", .catalog = catalog};
  if (origin.prometheus.empty()) {
    out.catalog_reason = "no --prometheus to read OpenCost from";
    return out;
  }
  Result<std::vector<NodePrice>> prices = ReadOpenCostPrices(origin.server, origin.range);
  if (!prices) return prices.error();
  if (prices->empty()) {
    out.catalog_reason = "no OpenCost series (node_gpu_hourly_cost, node_cpu_hourly_cost, node_ram_hourly_cost) on " +
                         origin.prometheus + " in the range";
    return out;
  }
  Result<std::map<std::string, std::string>> products = ReadNodeGpuProducts(origin.server, origin.range);
  if (!products) return products.error();
  out.prices = PriceFromCluster(*prices, *products, nodes, catalog);
  out.prices->source = origin.prometheus;
  out.catalog = ApplyClusterPrices(catalog, *out.prices);
  return out;
}

Result<std::optional<ClusterNetwork>> ReadClusterNetwork(const TelemetryOrigin& origin, const Telemetry& telemetry,
                                                         const std::vector<KubePod>* pods) {
  if (origin.prometheus.empty()) return std::optional<ClusterNetwork>();
  std::map<std::string, std::string> kubectl_nodes;
  if (pods != nullptr)
    for (const KubePod& p : *pods) kubectl_nodes[p.Key()] = p.node_name;
  Result<ClusterNetwork> n = ReadPrometheusNetwork(origin.server, origin.range, telemetry, kubectl_nodes);
  if (!n) return n.error();
  return std::optional<ClusterNetwork>(std::move(*n));
}

}  // namespace gpufit::pipeline
