#include "gpufit/training/spot_history.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "gpufit/core/rfc3339.h"
#include "gpufit/training/workload_file.h"

namespace gpufit {

Result<SpotEstimate> EstimateSpotRate(const ClusterHistory* history, const std::string& band) {
  bool short_notice = false;
  double node_hours = 0;
  int gone = 0;
  if (history != nullptr) {
    for (const NodePresence& n : history->nodes) {
      if (n.capacity_type != "spot") continue;
      short_notice = short_notice || n.gke || n.aks;
      node_hours += (n.last_s - n.first_s + history->step_s) / 3600;
      if (n.last_s < history->last_grid_s - history->step_s) ++gone;
    }
  }
  const Seconds notice = short_notice ? kGcpSpotNotice : kAwsSpotNotice;
  Result<SpotMarket> fallback = SpotMarketFromBand(band, notice);
  if (!fallback) return fallback.error();
  SpotEstimate out{.market = *fallback,
                   .origin = {.kind = "catalog band", .events = 0, .node_hours = node_hours, .counted_by = ""}};
  if (history == nullptr) {
    out.market.basis = "no node history (no --prometheus): " + fallback->basis;
    return out;
  }
  const std::string range = fmt::format("{} to {}", FormatRfc3339(history->since_s), FormatRfc3339(history->until_s));
  if (node_hours <= 0) {
    out.market.basis = fmt::format("no spot node seen in {} (kube_node_labels): {}", range, fallback->basis);
    return out;
  }
  double events = 0;
  if (history->karpenter_spot_reclaims) {
    events = *history->karpenter_spot_reclaims;
    out.origin.counted_by = history->karpenter_metric;
  } else {
    events = gone;
    out.origin.counted_by =
        "spot nodes whose kube_node_labels series ended more than one step before the end of the range, each "
        "counted as a reclaim (assumption: scale-downs count too)";
  }
  out.origin.events = events;
  if (events < 1) {
    const double bound = -std::log(0.05) / node_hours;
    if (bound >= fallback->interruptions_per_hour) {
      out.market.basis =
          fmt::format("no reclaim in {:.1f} spot node-hours ({}, {}): too little history to beat the band; {}",
                      node_hours, range, out.origin.counted_by, fallback->basis);
      return out;
    }
    out.origin.kind = "cluster history";
    out.market.interruptions_per_hour = bound;
    out.market.basis = fmt::format(
        "cluster history: no reclaim in {:.1f} spot node-hours ({}, {}); rate = the 95% upper bound 3.0 / {:.1f} h "
        "(Poisson, zero events)",
        node_hours, range, out.origin.counted_by, node_hours);
    return out;
  }
  out.origin.kind = "cluster history";
  const double rate = events / node_hours;
  out.market.interruptions_per_hour = std::min(rate, 1 / kMinMtbfHours);
  out.market.basis =
      fmt::format("cluster history: {:g} reclaim(s) in {:.1f} spot node-hours ({}, {}) = {:.4g} per node-hour{}",
                  events, node_hours, range, out.origin.counted_by, rate,
                  rate > 1 / kMinMtbfHours ? fmt::format(", capped at {:g} per hour", 1 / kMinMtbfHours) : "");
  return out;
}

}  // namespace gpufit
