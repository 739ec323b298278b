// The training section of `plan`: per job the spot decision, its checkpoint interval (as
// an annotation and an environment variable the job reads), and the scheduling constraints
// that put it on spot capacity or keep it off, in the labels of the user's provisioner.
//
// Labels and taints (../shared/reference/formats.md section g):
//  * karpenter: nodeSelector karpenter.sh/capacity-type: spot | on-demand.
//  * eks (managed node groups): nodeSelector eks.amazonaws.com/capacityType: SPOT | ON_DEMAND.
//  * gke: spot -> nodeSelector cloud.google.com/gke-spot: "true" and a toleration of
//    cloud.google.com/gke-spot=true:NoSchedule (Autopilot adds that taint; on Standard pools
//    the toleration is harmless); off spot -> required node affinity: gke-spot DoesNotExist.
//  * aks: spot -> nodeSelector kubernetes.azure.com/scalesetpriority: spot and a toleration
//    of kubernetes.azure.com/scalesetpriority=spot:NoSchedule (AKS taints spot pools); off
//    spot -> required node affinity: scalesetpriority NotIn [spot].
// Spot-with-fallback jobs start on spot and carry the latest switch time as an annotation.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/training/spot_decision.h"
#include "gpufit/training/workload_file.h"

namespace gpufit {

enum class CapacityLabels { kKarpenter, kEks, kGke, kAks };
Result<CapacityLabels> ParseCapacityLabels(const std::string& name);  // karpenter, eks, gke, aks

inline constexpr const char* kCheckpointIntervalAnnotation = "gpufit.io/checkpoint-interval-seconds";
inline constexpr const char* kCheckpointIntervalEnv = "GPUFIT_CHECKPOINT_INTERVAL_SECONDS";
inline constexpr const char* kSwitchAtAnnotation = "gpufit.io/switch-to-on-demand-after-seconds";

struct Toleration {
  std::string key, op, value, effect;  // op: Equal or Exists
};

struct NodeRequirement {  // one matchExpressions entry of required node affinity
  std::string key, op;    // In, NotIn, Exists, DoesNotExist
  std::vector<std::string> values;
};

struct SchedulingConstraints {
  std::map<std::string, std::string> node_selector;
  std::vector<Toleration> tolerations;
  std::vector<NodeRequirement> required_affinity;
};

// The constraints for a capacity type in a provisioner's labels.
SchedulingConstraints ConstraintsFor(CapacityType capacity, CapacityLabels labels);

struct TrainingRecommendation {
  std::size_t job = 0;
  SpotDecision decision;
  GpuPrices prices;
  Seconds interval{0};  // for the capacity it starts on
  std::map<std::string, std::string> annotations, env;
  SchedulingConstraints scheduling;
};

struct TrainingPlan {
  std::string source;
  CapacityLabels labels = CapacityLabels::kKarpenter;
  TrainingWorkload workload;
  std::vector<TrainingRecommendation> jobs;
  Usd on_demand_cost, recommended_cost;  // expected, all jobs
};

// Prices: the workload's `prices` entry for the job's GPU model, else the catalog entry of
// that id. Errors: kNotFound for a GPU model with neither.
Result<TrainingPlan> BuildTrainingPlan(TrainingWorkload workload, const GpuCatalog& catalog, CapacityLabels labels,
                                       const std::string& source, const SpotDecisionOptions& options = {});

std::string TrainingPlanToJson(const TrainingPlan& plan);  // pretty-printed, ends in a newline
std::string TrainingPlanToMarkdown(const TrainingPlan& plan);

}  // namespace gpufit
