// The read stage: the catalog and, with telemetry, the cluster's prices.
#include "gpufit/pipeline/internal/stages.h"

namespace gpufit::pipeline::internal {

Result<void> ReadStage::Run(PlanContext& c) const {
  Result<GpuCatalog> catalog =
      c.in.catalog_path.empty() ? Result<GpuCatalog>(GpuCatalog::Embedded()) : GpuCatalog::Load(c.in.catalog_path);
  if (!catalog) return catalog.error();
  c.catalog = std::move(*catalog);
  if (!c.in.telemetry && !c.in.model_loads.empty())
    return InvalidArgument("--model-loads needs GPU telemetry (--telemetry or --prometheus)");
  if (Result<void> ok = ValidateAncillaryOptions(c.in.rightsize, c.in.model_loading); !ok) return ok;
  // Prices: OpenCost's on the server, where it has them, else the catalog's (plan/cluster_prices.h).
  if (c.in.telemetry) {
    Result<ClusterPricing> p = ReadClusterPricing(c.in.origin, c.nodes(), c.catalog);
    if (!p) return p.error();
    c.catalog = p->catalog;
    c.pricing = std::move(*p);
  }
  return {};
}

}  // namespace gpufit::pipeline::internal
