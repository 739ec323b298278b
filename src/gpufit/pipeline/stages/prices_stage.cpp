// The prices stage: the prices section of a co-location plan (OpenCost's or the catalog's).
#include "gpufit/pipeline/internal/stages.h"
#include "gpufit/plan/cluster_prices.h"

namespace gpufit::pipeline::internal {

Result<void> PricesStage::Run(PlanContext& c) const {
  c.Phase("sections");
  if (!c.plan) return {};
  const ClusterPrices* prices = c.pricing && c.pricing->prices ? &*c.pricing->prices : nullptr;
  const std::string& reason = c.pricing->catalog_reason;
  c.sections.emplace_back("prices",
                          std::make_pair(ClusterPricesToJson(prices, reason, c.plan->current, c.plan->target),
                                         ClusterPricesToMarkdown(prices, reason, c.plan->current, c.plan->target)));
  return {};
}

}  // namespace gpufit::pipeline::internal
