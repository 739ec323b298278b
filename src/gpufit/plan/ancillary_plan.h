// The ancillary section of a plan: what rides along with the GPU work.
//  * container right-sizing, sidecars included (optimize/container_rightsize.h), priced at
//    each container's node rates: with kubectl nodes and pods, the node's price split
//    (optimize/node_rates.h) of its GPUs' catalog price; without them, containers of pods
//    in the GPU telemetry on an assumed GPU node of the current model with p5.48xlarge's
//    shape per GPU (24 cores, 256 GiB; ../shared/reference/cloud_prices.yaml), others at
//    OpenCost's reference rates;
//  * sidecars found in the kubectl pods: each app container or native sidecar of a kind
//    other than application (analyze/container_kind.h), and duplicated agents per node
//    (optimize/agent_consolidation.h);
//  * model loading (analyze/model_loading.h), when load events are given;
//  * network-bound model and data loading (analyze/network_loading.h), with --prometheus:
//    each pod's receive rate against its node's link, and what a node-local cache, a
//    peer-to-peer distribution or a faster link saves;
//  * with OpenCost (plan/cluster_prices.h), containers on a node that publishes
//    node_cpu_hourly_cost and node_ram_hourly_cost are priced at those instead;
//  * day/night time-multiplexing (optimize/time_multiplex.h) of the plan's fleet (the GPUs
//    kept after co-location; CPU-starved pods left out), lending to the training jobs
//    given, with its replay (its Kubernetes objects: plan/kube_manifests.h).
// CPU starvation is in the co-location plan (plan/plan.h), which keeps starved pods' GPUs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/analyze/model_loading.h"
#include "gpufit/analyze/network_loading.h"
#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/optimize/agent_consolidation.h"
#include "gpufit/optimize/container_rightsize.h"
#include "gpufit/optimize/time_multiplex.h"
#include "gpufit/plan/cluster_prices.h"
#include "gpufit/plan/plan.h"

namespace gpufit {

struct AncillaryInputs {
  const Telemetry* telemetry = nullptr;  // required
  const Plan* plan = nullptr;            // required: current GPU, CPU starvation
  const GpuCatalog* catalog = nullptr;   // required
  const std::vector<KubeNode>* nodes = nullptr;
  const std::vector<KubePod>* pods = nullptr;
  const std::vector<ModelLoad>* model_loads = nullptr;
  std::string model_loads_source{};                // the loads file, for errors
  const std::vector<TrainingJob>* jobs = nullptr;  // lent at night when given
  ContainerRightsizeOptions rightsize{};
  ModelLoadingOptions model_loading{};
  TimeMultiplexOptions time_multiplex{};  // cold_start_s: model loading's p95 when loads are given
  const ClusterPrices* prices = nullptr;  // OpenCost's node prices, when read
  // Pod key -> node from the server (kube_pod_info), for pods --pods does not place.
  const std::map<std::string, std::string>* pod_nodes = nullptr;
  // The network check: each pod's receive rate and the nodes' links (both or neither).
  const std::vector<PodNetwork>* network = nullptr;
  const std::vector<NodeLink>* links = nullptr;
};

struct SidecarFinding {
  std::string pod, container, image, node;
  ContainerKind kind = ContainerKind::kApplication;
  bool native = false;  // an init container with restartPolicy Always
  bool gpu_node = false;
  std::optional<MilliCpu> cpu_request;
  std::optional<MiB> memory_request;
};

struct AncillaryPlan {
  std::vector<ContainerRecommendation> containers;
  std::vector<SidecarFinding> sidecars;
  std::vector<AgentConsolidation> duplicated_agents;
  std::optional<ModelLoadingReport> model_loading;
  std::optional<NetworkReport> network;
  std::optional<TimeMultiplexPlan> time_multiplex;
  TimeMultiplexReplay time_multiplex_replay;
  bool container_data = false;                 // the telemetry has container series
  std::string rates_basis;                     // how containers were priced, in words
  double containers_usd_per_month_saving = 0;  // sum of positive savings
};

// kInvalidArgument naming the flag for right-sizing or model-loading options out of range
// (NaN included).
Result<void> ValidateAncillaryOptions(const ContainerRightsizeOptions& rightsize,
                                      const ModelLoadingOptions& model_loading);

// Errors (kInvalidArgument, naming the flag or file): right-sizing or model-loading options
// out of range (NaN included), model loads none of whose pods is in the telemetry, and
// those of PlanTimeMultiplex.
Result<AncillaryPlan> BuildAncillaryPlan(const AncillaryInputs& in);

std::string AncillaryPlanToJson(const AncillaryPlan& plan);  // pretty-printed, ends in a newline
std::string AncillaryPlanToMarkdown(const AncillaryPlan& plan);

// The network check's part of both (plan/ancillary_network.cpp): a JSON object, and a
// Markdown subsection.
std::string NetworkReportToJson(const NetworkReport& report);
std::string NetworkReportToMarkdown(const NetworkReport& report);

}  // namespace gpufit
