// Training jobs found in a live cluster: its GPU pods (kubectl's or kube-state-metrics',
// ingest/kube/kube_reader.h and ingest/prometheus/training.h), grouped into jobs, become a
// TrainingWorkload that BuildTrainingPlan (plan/training_plan.h) plans like a workload file.
// Every figure records where it came from (training/job_origin.h).
//
// Which pods: phase Running (or unknown), bound to a node, holding nvidia.com/gpu, not
// terminating or finished, and part of a training gang (training/gang.h: batch Job,
// Kubeflow PyTorchJob/TFJob/MPIJob/..., TrainJob, JobSet, RayJob and Ray cluster pods,
// Kueue, coscheduling and Volcano groups). LeaderWorkerSet and RayService pods are serving,
// not training: left out; so are Deployments, StatefulSets and bare pods.
//
// Per job (the pods of one gang; one-pod jobs are gangs of one):
//  * gpus: the pods' nvidia.com/gpu (the largest when they differ); pods: their count;
//    nodes: each pod's node; capacity: of those nodes (KubeNode::capacity_type).
//  * started: the earliest pod start (.status.startTime, kube_pod_start_time), else creation;
//    runtime so far = now - started.
//  * remaining work (TrainingJob::work): annotation gpufit.io/work-hours (the whole run's
//    failure-free compute, hours) minus the runtime so far; else the runtime so far
//    (ASSUMPTION: a job that has run t is as likely as not to run t more, the median of
//    heavy-tailed run times with P(T > t) ~ 1/t: Harchol-Balter and Downey, "Exploiting
//    process lifetime distributions for dynamic load balancing", ACM TOCS 15(3), 1997); at
//    least min_remaining_h either way.
//  * checkpoint size: annotation gpufit.io/checkpoint-size-gib; else the sum of the pods'
//    peak GPU memory used (DCGM; ASSUMPTION: an upper bound, GPU memory holds the model
//    states a checkpoint saves plus activations: mixed-precision Adam keeps 16 bytes per
//    parameter, of which a checkpoint saves 14, Rajbhandari et al., "ZeRO", SC 2020); else
//    GPUs x the GPU model's memory (a whole GPU full, the cautious end).
//  * checkpoint write and restore: annotations gpufit.io/checkpoint-write-seconds and
//    gpufit.io/restore-seconds; else the StorageModel (workload_file.h) on the size.
//  * checkpointing: annotation gpufit.io/checkpointing (transparent, application, none);
//    else application (ASSUMPTION: training frameworks save periodic checkpoints).
//  * gpu model: of the first pod's node (gpu_model_of_node), else default_gpu_model.
// Annotations are read from the job's first pod (by name) that has them: set them in the
// owner's pod template so every pod carries them. Trace time 0 is `now_s`: each job is
// submitted at 0 and running with nothing saved since 0.
//
// Bounds: an annotation above its physical bound is bad input, not a figure: work-hours at most
// 87,660 h (10 years of compute, longer than any training run; beyond it costs overflow to
// inf), checkpoint-write-seconds and restore-seconds at most 604,800 s (7 days: a save or
// restore longer than a week would outlast any spot node's life many times over), and
// checkpoint-size-gib at most 1,048,576 GiB (1 PiB: a checkpoint holds about 14 bytes a
// parameter (ZeRO, above), so 1 PiB is 80 trillion parameters, far past any model).
//
// Errors (kInvalidArgument) name the source, the pod and the annotation: a value that is not
// a number > 0 (>= 0 for the size), one above its bound, an unknown checkpointing; kFailedPrecondition when a
// job's checkpoint cannot be sized (no annotation, no GPU memory use, no GPU model).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/training/spot_history.h"
#include "gpufit/training/workload_file.h"

namespace gpufit {

inline constexpr const char* kWorkHoursAnnotation = "gpufit.io/work-hours";
inline constexpr const char* kCheckpointSizeAnnotation = "gpufit.io/checkpoint-size-gib";
inline constexpr const char* kCheckpointWriteAnnotation = "gpufit.io/checkpoint-write-seconds";
inline constexpr const char* kRestoreAnnotation = "gpufit.io/restore-seconds";
inline constexpr const char* kCheckpointingAnnotation = "gpufit.io/checkpointing";

// The physical bounds of the numeric annotations (header: why).
inline constexpr double kMaxWorkHours = 87'660;           // 10 years x 365.25 days x 24 h
inline constexpr double kMaxCheckpointSeconds = 604'800;  // 7 days
inline constexpr double kMaxCheckpointGib = 1'048'576;    // 1 PiB
inline constexpr const char* kAnnotationBoundWhy =
    "work at most 10 years, checkpoint write and restore at most 7 days, a checkpoint at most 1 PiB";

struct ClusterJobsOptions {
  double now_s = 0;         // the end of the range (--until), Unix seconds
  std::string pods_source;  // where the pods came from, for the sources and errors
  // Peak GPU memory used over all GPUs of a pod, by "namespace/pod" (DCGM), and its source.
  std::map<std::string, MiB> gpu_memory_used{};
  std::string gpu_memory_source{};
  std::map<std::string, std::string> gpu_model_of_node{};  // catalog id by node name
  std::string default_gpu_model{};                         // catalog id for the rest
  std::string default_gpu_model_source{};                  // why that one
  std::map<std::string, MiB> gpu_memory_of_model{};        // per GPU, by catalog id
  StorageModel storage{};
  double min_remaining_h = 1;
};

// The jobs among `pods` on `nodes` (nodes may be empty: then capacity is "unknown" and a
// node's GPU count is what its jobs use), with the spot estimate. No training pod: a
// workload with no jobs.
Result<TrainingWorkload> TrainingWorkloadFromCluster(const std::vector<KubePod>& pods,
                                                     const std::vector<KubeNode>& nodes, const SpotEstimate& spot,
                                                     const ClusterJobsOptions& options);

// A workload file's jobs win over the cluster's of the same name; its nodes, prices,
// preemptions and maintenance are added (its nodes win by name), and its interruptions
// replace the cluster's where it gives them (spot, spot_by_gpu_model, gpu_mtbf_h).
TrainingWorkload MergeTrainingWorkloads(TrainingWorkload cluster, TrainingWorkload file);

}  // namespace gpufit
