// What a plan from a Prometheus server reads about the cluster beside its GPU telemetry,
// from the same server and range: OpenCost's prices (plan/cluster_prices.h) and the network
// check's series (ingest/prometheus/network.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/ingest/prometheus/client.h"
#include "gpufit/ingest/prometheus/network.h"
#include "gpufit/ingest/prometheus/telemetry.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/model/telemetry.h"
#include "gpufit/plan/cluster_prices.h"

namespace gpufit::pipeline {

// Where the GPU telemetry came from: a file or folder (path), or a Prometheus server (its
// base URL, the options its readers use and the range read), and its name in reports.
struct TelemetryOrigin {
  std::string path;        // GenTD26 folder or long CSV; "" with a server
  std::string prometheus;  // the server's base URL; "" without one
  PrometheusOptions server;
  TelemetryRange range;
  std::string name;  // the path, or the URL and range
};

struct ClusterPricing {
  std::optional<ClusterPrices> prices;  // set when the server has OpenCost series
  std::string catalog_reason;           // else why the catalog priced everything
  GpuCatalog catalog;                   // the catalog, at the cluster's prices where it has them
};

// Without a server: the catalog, saying so. Errors: those of the queries.
Result<ClusterPricing> ReadClusterPricing(const TelemetryOrigin& origin, const std::vector<KubeNode>* nodes,
                                          const GpuCatalog& catalog);

// Without a server: nullopt. Errors: those of the queries.
Result<std::optional<ClusterNetwork>> ReadClusterNetwork(const TelemetryOrigin& origin, const Telemetry& telemetry,
                                                         const std::vector<KubePod>* pods);

}  // namespace gpufit::pipeline
