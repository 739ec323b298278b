// Duplicated agents per node: the same log or metrics agent image running more than once on
// one node (a sidecar copy in every pod, or two DaemonSets of one agent), where one copy per
// node (a DaemonSet) would serve every pod. Consolidation candidates, from the pods'
// requests (kubectl get pods -o json), priced at the node's rates (optimize/node_rates.h).
//
// Per node, per agent image repository (analyze/container_kind.h; app containers and native
// sidecars of pods bound to the node, not init containers, not finished pods): with n >= 2
// copies, one DaemonSet pod with the largest copy's requests stays; the saving is the other
// copies' requests. Different agents of one kind (node-exporter and dcgm-exporter) are not
// duplicates: they are told apart by image.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "gpufit/analyze/container_kind.h"
#include "gpufit/core/units.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/optimize/node_rates.h"

namespace gpufit {

struct AgentConsolidation {
  std::string node;
  ContainerKind kind = ContainerKind::kLogAgent;
  std::string image_repository;
  std::vector<std::string> copies;  // "namespace/pod/container", sorted
  MilliCpu cpu_requests{0};         // all copies
  MiB memory_requests{0};
  MilliCpu cpu_kept{0};  // the one copy that stays
  MiB memory_kept{0};
  NodeRates rates;
  double usd_per_month_saving = 0;
};

// Ordered by saving (largest first), then node and image. `rates` gives a node's rates.
std::vector<AgentConsolidation> FindDuplicatedAgents(const std::vector<KubePod>& pods,
                                                     const std::function<NodeRates(const std::string&)>& rates);

}  // namespace gpufit
