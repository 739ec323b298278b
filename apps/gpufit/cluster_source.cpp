#include "cluster_source.h"

#include "gpufit/ingest/prometheus/opencost.h"

namespace gpufit::cli {

Result<ClusterPricing> ReadClusterPricing(const TelemetrySource& source, const std::vector<KubeNode>* nodes,
                                          const GpuCatalog& catalog) {
  ClusterPricing out{.prices = std::nullopt, .catalog_reason = "", .catalog = catalog};
  if (source.prometheus.empty()) {
    out.catalog_reason = "no --prometheus to read OpenCost from";
    return out;
  }
  Result<std::vector<NodePrice>> prices = ReadOpenCostPrices(source.server, source.range);
  if (!prices) return prices.error();
  if (prices->empty()) {
    out.catalog_reason = "no OpenCost series (node_gpu_hourly_cost, node_cpu_hourly_cost, node_ram_hourly_cost) on " +
                         source.prometheus + " in the range";
    return out;
  }
  Result<std::map<std::string, std::string>> products = ReadNodeGpuProducts(source.server, source.range);
  if (!products) return products.error();
  out.prices = PriceFromCluster(*prices, *products, nodes, catalog);
  out.prices->source = source.prometheus;
  out.catalog = ApplyClusterPrices(catalog, *out.prices);
  return out;
}

Result<std::optional<ClusterNetwork>> ReadClusterNetwork(const TelemetrySource& source, const Telemetry& telemetry,
                                                         const std::vector<KubePod>* pods) {
  if (source.prometheus.empty()) return std::optional<ClusterNetwork>();
  std::map<std::string, std::string> kubectl_nodes;
  if (pods != nullptr)
    for (const KubePod& p : *pods) kubectl_nodes[p.Key()] = p.node_name;
  Result<ClusterNetwork> n = ReadPrometheusNetwork(source.server, source.range, telemetry, kubectl_nodes);
  if (!n) return n.error();
  return std::optional<ClusterNetwork>(std::move(*n));
}

}  // namespace gpufit::cli
