// Which gang a training pod belongs to: the pods that are scheduled, run and stop together
// (a multi-node PyTorchJob, JobSet, Volcano job or Kueue pod group).
//
// Read from the pod's own metadata, the first of (each the key its project documents):
//  1. label `kueue.x-k8s.io/pod-group-name`: Kueue plain-pod groups
//     (https://kueue.sigs.k8s.io/docs/tasks/run/plain_pods/, with the annotation
//     `kueue.x-k8s.io/pod-group-total-count`);
//  2. label `scheduling.x-k8s.io/pod-group`: the coscheduling plugin of
//     kubernetes-sigs/scheduler-plugins
//     (https://scheduler-plugins.sigs.k8s.io/docs/plugins/coscheduling/);
//  3. annotation `scheduling.k8s.io/group-name`: the Volcano PodGroup of the pod
//     (volcano-sh/volcano, pkg/apis/scheduling: GroupNameAnnotationKey);
//  4. label `volcano.sh/job-name`: set on every pod of a Volcano Job (vcjob) by its controller;
//  5. label `jobset.sigs.k8s.io/jobset-name`: every pod of a JobSet (kubernetes-sigs/jobset;
//     the pods' owner is a child Job, so the label, not the owner, names the JobSet);
//  6. label `training.kubeflow.org/job-name`: every pod of a Kubeflow training-operator job
//     (PyTorchJob, TFJob, MPIJob, ...);
//  7. label `ray.io/originated-from-cr-name` on a pod whose `ray.io/originated-from-crd` is
//     RayJob: KubeRay puts both on what a RayJob creates (ray-project/kuberay
//     ray-operator/controllers/ray/utils/constant.go, RayOriginatedFromCRNameLabelKey), so
//     the gang is named after the RayJob;
//  8. label `ray.io/cluster`: every pod of a KubeRay RayCluster (kuberay
//     kubectl-plugin/pkg/util/constant.go, RayClusterLabelKey): a Ray Train run's head and
//     workers stop together;
//  9. else the controller owner (model/kube_cluster.h WorkloadRef) when it is a kind that
//     runs a job's pods together: PyTorchJob, TFJob, MPIJob, XGBoostJob, PaddleJob, JAXJob,
//     TrainJob, JobSet, LeaderWorkerSet, or a batch Job (an Indexed Job's pods are the
//     workers of one run).
// Anything else (a Deployment's pods, a bare pod) is no gang: each pod is its own job.
// Pods of different namespaces never share a gang.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "gpufit/model/kube_cluster.h"

namespace gpufit {

struct GangRef {
  std::string key;   // equal for the pods of one gang: "<namespace>/<source>=<name>"
  std::string name;  // the gang's name (the label value, or the owner's name)
  std::string how;   // the evidence, for humans: "label kueue.x-k8s.io/pod-group-name=llm"
};

// The gang of a pod with these labels, annotations and controller owner; none when the
// pod runs alone. `owner` may be empty (kind ""), e.g. in a workload file.
std::optional<GangRef> GangOf(const std::string& namespace_name, const std::map<std::string, std::string>& labels,
                              const std::map<std::string, std::string>& annotations, const WorkloadRef& owner);

}  // namespace gpufit
