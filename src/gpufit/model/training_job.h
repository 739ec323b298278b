// A training job as the checkpoint, spot and drain planners see it: what it runs on, how
// long it computes when nothing fails, and what checkpointing costs it.
//
// A job may be a gang: `pods` pods of `gpu_count` GPUs each, on several nodes (a multi-node
// PyTorchJob, JobSet or Kueue pod group). Its pods stop together: when any one pod's node
// fails, is reclaimed or is drained, every pod stops and all of them lose the work since
// the last checkpoint (data-parallel training steps in lockstep; training/gang.h says how
// a gang is recognised).
//
// Times are Seconds of trace time. Sources of the defaults a reader fills in are in the
// reader (ingest/training_reader.h).
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/core/units.h"

namespace gpufit {

// How a job can save its state.
//  * kTransparent: transparent checkpoint/restore (e.g. CRIU with cuda-checkpoint) can
//    save it at any moment, so an emergency checkpoint can use a preemption notice.
//  * kApplication: only the job's own periodic checkpoints (it cannot save on demand).
//  * kNone: no checkpoint at all (e.g. cross-GPU state that cannot be saved): an
//    interruption loses all its work.
enum class Checkpointing { kTransparent, kApplication, kNone };

enum class CapacityType { kOnDemand, kSpot };

// A node that runs training jobs.
struct TrainingNode {
  std::string name;
  int gpu_count = 0;  // 1..kMaxGpusPerNode (model/cluster.h)
  std::string gpu_model;
  CapacityType capacity = CapacityType::kOnDemand;
};

// Most pods one gang may have (a bound on input, far above real jobs).
inline constexpr int kMaxGangPods = 4096;

struct TrainingJob {
  std::string name{};
  int gpu_count = 1;                  // whole GPUs per pod, all on its node (1..kMaxGpusPerNode)
  std::string gpu_model{};            // required GPU type; empty = any
  Seconds work{0};                    // failure-free compute time T_s (> 0)
  Seconds checkpoint_write{0};        // delta: time to write one checkpoint
  Seconds restore{0};                 // R: reschedule, read the checkpoint, initialise
  MiB checkpoint_size{};              // size of one checkpoint (all GPUs of all pods)
  Seconds submit{0};                  // trace time of arrival
  std::optional<Seconds> deadline{};  // trace time it must finish by
  Checkpointing checkpointing = Checkpointing::kApplication;
  std::string disruption_group{};  // PodDisruptionBudget it belongs to; empty = its own
  // That budget's maxUnavailable, in pods (>= 0). 0 refuses every eviction: a drain of one
  // of its nodes waits until the budget is relaxed or the job is stopped by other means.
  int max_unavailable = 1;
  int pods = 1;        // pods of the gang (>= 1), each on one node; 1 = a one-pod job
  std::string gang{};  // how the gang was recognised (e.g. "label kueue.x-k8s.io/pod-group-name=llm")

  // GPUs of all its pods: what an interruption stops and what the job is billed for.
  int TotalGpus() const { return gpu_count * pods; }
};

// Whether `node` could ever run `job`: enough GPUs, of its model when it names one.
inline bool CanHost(const TrainingNode& node, const TrainingJob& job) {
  return node.gpu_count >= job.gpu_count && (job.gpu_model.empty() || job.gpu_model == node.gpu_model);
}

// Whether any node of a capacity type could ever run `job`.
inline bool AnyCanHost(const std::vector<TrainingNode>& nodes, const TrainingJob& job, CapacityType capacity) {
  return std::any_of(nodes.begin(), nodes.end(),
                     [&](const TrainingNode& n) { return n.capacity == capacity && CanHost(n, job); });
}

}  // namespace gpufit
