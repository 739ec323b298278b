// What `plan --prometheus` reads about the cluster beside its GPU telemetry, from the same
// server and range: OpenCost's prices (plan/cluster_prices.h) and the network check's series
// (ingest/prometheus/network.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/ingest/prometheus/network.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/plan/cluster_prices.h"
#include "telemetry_source.h"

namespace gpufit::cli {

struct ClusterPricing {
  std::optional<ClusterPrices> prices;  // set when the server has OpenCost series
  std::string catalog_reason;           // else why the catalog priced everything
  GpuCatalog catalog;                   // the catalog, at the cluster's prices where it has them
};

// Without --prometheus: the catalog, saying so. Errors: those of the queries.
Result<ClusterPricing> ReadClusterPricing(const TelemetrySource& source, const std::vector<KubeNode>* nodes,
                                          const GpuCatalog& catalog);

// Without --prometheus: nullopt. Errors: those of the queries.
Result<std::optional<ClusterNetwork>> ReadClusterNetwork(const TelemetrySource& source, const Telemetry& telemetry,
                                                         const std::vector<KubePod>* pods);

}  // namespace gpufit::cli
