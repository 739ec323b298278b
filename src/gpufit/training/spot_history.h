// The spot reclaim rate of a cluster, from its own history where it has one, else an AWS
// Spot Instance Advisor band (training/workload_file.h SpotMarketFromBand).
//
// Observed spot node-hours: each spot node (capacity_type "spot") counts from its first to
// its last grid sample plus one step (the step its first sample closes), gaps included:
// (last - first + step) / 3600 h.
// Reclaims counted, the first rule that applies:
//  1. Karpenter's own count (ClusterHistory::karpenter_spot_reclaims; ingest/
//     prometheus_training.h reads karpenter_nodeclaims_disrupted_total{reason=
//     "spot_interrupted"}): Karpenter tells a reclaim from its own consolidation and expiry.
//  2. else the spot nodes that disappeared: a node whose last sample is more than one step
//     before the range's last grid time. ASSUMPTION: every such disappearance is a reclaim
//     (a scale-down counts too: the cautious side, more reclaims).
// Rate, per node-hour:
//  * reclaims >= 1: reclaims / node-hours (the maximum-likelihood rate of a Poisson process
//    per node), at most 1 per hour (kMinMtbfHours: faster is a broken pool, not a rate);
//  * no reclaim in T node-hours: the one-sided 95% upper bound of a Poisson rate with zero
//    events, -ln(0.05) / T = 3.0 / T, when it is below the band's rate, else the band;
//  * no spot node seen (or no history): the band.
// Notice: 30 s when a spot node carries GKE's or AKS's capacity label, else AWS's 120 s
// (interruptions.h). Every answer states its basis: which rule, the counts, the metric.
#pragma once

#include <string>

#include "gpufit/core/result.h"
#include "gpufit/model/cluster_history.h"
#include "gpufit/training/interruptions.h"
#include "gpufit/training/job_origin.h"

namespace gpufit {

// The catalog band used when the cluster has no usable history (ASSUMPTION: the middle
// band of those the AWS Spot Instance Advisor shows for GPU instance types; override it in
// a workload file's interruptions.spot).
inline constexpr const char* kDefaultSpotBand = "5-10%";

struct SpotEstimate {
  SpotMarket market;
  SpotRateOrigin origin;
};

// The estimate from `history` (nullptr: none, e.g. only kubectl's pods), else `band`.
// Errors: kInvalidArgument for an unknown band.
Result<SpotEstimate> EstimateSpotRate(const ClusterHistory* history, const std::string& band = kDefaultSpotBand);

}  // namespace gpufit
