// The Kubernetes side of serving workloads, from kube-state-metrics (docs/metrics/workload/*.md
// of kubernetes/kube-state-metrics), shared by every engine:
//  * pod and namespace: the scrape's `pod`/`namespace` labels (`exported_*` first, as
//    PodKeyFromLabels reads them);
//  * owner: kube_pod_owner{owner_kind, owner_name} (the controller's), and for a ReplicaSet
//    kube_replicaset_owner{replicaset, owner_kind, owner_name}: a Deployment, else the
//    ReplicaSet; a StatefulSet (or any other kind) as named. Without kube_pod_owner the pods
//    of one model in one namespace are one service named after the model;
//  * replicas today: the last kube_deployment_status_replicas{deployment} (or
//    kube_statefulset_status_replicas{statefulset}) in the range;
//  * cold start: the median over the workload's pods of kube_pod_status_ready_time (the Ready
//    condition's lastTransitionTime; kube-state-metrics v2.8.0 and later, PR #1938, only while
//    Ready is true since PR #1971) minus kube_pod_created; without ready_time, for pods
//    created within the range, the end of the first step at which
//    kube_pod_status_ready{condition="true"} is 1 (an upper bound, one step coarse); without
//    either, none (the caller states its assumption);
//  * born in the range: kube_pod_created after `since` (a new process starts its counters at
//    0, serving/workloads.h).
// Queries: max_over_time(kube_pod_owner / kube_replicaset_owner / kube_pod_created[D]) and
// min_over_time(kube_pod_status_ready_time[D]) once at the end of the range;
// max_over_time(kube_pod_status_ready[W]) (only without ready_time) and
// last_over_time(kube_{deployment,statefulset}_status_replicas[W]) on the grid. They are
// restricted to the serving namespaces ({namespace=~"a|b"}), or read the whole cluster when
// kube_pod_owner has nothing there (kube-state-metrics scraped without honorLabels: its
// labels are exported_namespace / exported_pod).
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gpufit/ingest/prometheus/serving/engine.h"

namespace gpufit::serving {

// Asks kube-state-metrics' queries (above) into `answers`. Errors: those of QueryRange.
Result<void> ReadKubeStateMetrics(const Asker& ask, const std::set<std::string>& namespaces, ServingAnswers& answers);

// What kube-state-metrics' answers say of the pods and their controllers.
class KubeObjects {
 public:
  KubeObjects(const ServingAnswers& answers, const GridSpec& grid);

  struct Owner {
    std::string kind, name;  // "" without kube_pod_owner
    std::string basis;       // how it was found, in words
  };
  // The owner of the pod "namespace/pod" (the Deployment of its ReplicaSet).
  Owner OwnerOf(const std::string& pod) const;
  // Created after `since`.
  bool BornInRange(const std::string& pod) const;
  // Sets w.current_replicas and w.cold_start_s (with their bases) where the answers say.
  void AddReplicasAndColdStart(ServingWorkload& w) const;

 private:
  GridSpec grid_;
  double since_s_;
  std::map<std::string, std::pair<std::string, std::string>> pod_owner_;                         // pod -> kind, name
  std::map<std::pair<std::string, std::string>, std::pair<std::string, std::string>> rs_owner_;  // ns, rs -> kind, name
  std::map<std::string, double> created_, ready_time_, first_ready_;                             // pod -> Unix s
  std::map<std::pair<std::string, std::string>, double> deployments_, statefulsets_;             // ns, name -> replicas
};

}  // namespace gpufit::serving
