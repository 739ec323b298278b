// Training workloads: the YAML workload file, and a training set derived from the openb
// trace.
//
// Workload file (YAML; durations in hours carry `_h`, short ones `_s`):
//
//   nodes:                       # for simulate, drain and defrag
//     - {name: gpu-0, gpus: 8, gpu_model: a100-80gb, capacity: spot}   # or on-demand
//   jobs:
//     - name: llm-ft             # unique
//       gpus: 8                  # whole GPUs per pod, on its node
//       pods: 1                  # > 1: a gang of that many pods (see below)
//       gpu_model: a100-80gb     # optional; a catalog id prices it
//       work_h: 48               # failure-free compute
//       checkpoint_size_gib: 120 # optional when both times below are given
//       checkpoint_write_s: 90   # default: size / (gpus x storage.write_gib_per_s)
//       restore_s: 300           # default: storage.reschedule_s + size / (gpus x storage.read_gib_per_s)
//       submit_h: 0              # default 0
//       deadline_h: 60           # optional, trace time
//       checkpointing: application   # transparent | application | none
//       disruption_group: llm-ft     # PodDisruptionBudget; default: the job alone
//       max_unavailable: 1           # pods; 0 (no eviction allowed) is planned for, see drain_plan.h
//       running: {node: gpu-0, last_checkpoint_h: 10, work_done_h: 9.5}   # optional: running now
//     - name: pretrain-worker-0      # a gang given pod by pod: entries of one gang merge
//       labels: {kueue.x-k8s.io/pod-group-name: pretrain}   # or annotations:, or
//       owner: {kind: PyTorchJob, name: pretrain}           # the pod's controller owner
//       gpus: 8
//       pods: 2                      # this entry stands for 2 pods of the gang
//       ...                          # the other fields as above, equal in every entry
//       running: {nodes: [gpu-2, gpu-3], last_checkpoint_h: 10, work_done_h: 9.5}   # one per pod
//   interruptions:
//     spot: {band: "5-10%", notice_s: 120}   # or monthly_fraction: 0.07, or mtbi_h: 500
//     spot_by_gpu_model: {a100-80gb: {mtbi_h: 300, notice_s: 30}}
//     gpu_mtbf_h: 50000
//     preemptions: [{node: gpu-0, at_h: 30}]                          # explicit reclaims
//     maintenance: [{node: gpu-1, start_h: 40, duration_h: 4}]        # drains
//   storage: {write_gib_per_s: 0.25, read_gib_per_s: 0.5, reschedule_s: 120}   # per GPU
//   prices: {a100-80gb: {on_demand_usd_per_gpu_hour: 3.43, spot_usd_per_gpu_hour: 1.08}}
//
// A band ("<5%", "5-10%", "10-15%", "15-20%": the AWS Spot Instance Advisor's monthly
// interruption frequency) is read at its upper bound, the cautious end, and converted with
// RatePerHourFromMonthlyFraction (an assumption, stated in the basis). ">20%" has no upper
// bound: give monthly_fraction or mtbi_h instead.
//
// Gangs: a job of several pods on several nodes that stop together (model/training_job.h).
// Either `pods: N` on one entry, or several entries whose labels, annotations or owner name
// the same gang (training/gang.h): they become one job named after the gang, their pods
// add up, and every other field must be equal (else an error naming the field). The
// checkpoint is sharded over all GPUs of all pods: the default write time is
// size / (gpus x pods x write_gib_per_s), the restore reschedule_s + size / (gpus x pods x
// read_gib_per_s).
//
// Errors name the file and the job or node and field: kNotFound (missing file),
// kInvalidArgument (malformed YAML with its line, missing or negative field, unknown
// checkpointing or capacity, duplicate name, running on an unknown node).
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/cluster.h"
#include "gpufit/model/training_job.h"
#include "gpufit/training/gang.h"
#include "gpufit/training/interruptions.h"
#include "gpufit/training/job_origin.h"
#include "gpufit/training/spot_decision.h"

namespace gpufit {

// Where a running job is and what it has saved.
struct RunningState {
  std::vector<std::string> nodes;  // the node of each pod (one for a one-pod job)
  Seconds last_checkpoint{0};      // trace time its last checkpoint finished (or its run began)
  Seconds work_done{0};            // work saved in that checkpoint
};

struct TrainingWorkload {
  std::vector<TrainingNode> nodes;
  std::vector<TrainingJob> jobs;
  std::vector<std::optional<RunningState>> running;  // per job
  InterruptionModel interruptions;
  std::vector<SpotReclaim> preemptions;  // explicit reclaim times
  std::vector<MaintenanceWindow> maintenance;
  std::map<std::string, GpuPrices> prices;  // by GPU model; others come from the catalog
  // Found in a cluster (training/cluster_jobs.h): per job where its figures came from
  // (nullopt for a job of a workload file), and where the spot rate came from. Empty from
  // ReadTrainingWorkload.
  std::vector<std::optional<JobOrigin>> origins;
  std::optional<SpotRateOrigin> spot_origin;

  // Index in `nodes` of the node of each pod of job j (running[j] must be set; the reader
  // checks that the nodes exist).
  std::vector<std::size_t> NodesOf(std::size_t j) const {
    std::vector<std::size_t> out;
    for (const std::string& name : running[j]->nodes) {
      const auto it = std::find_if(nodes.begin(), nodes.end(), [&](const TrainingNode& n) { return n.name == name; });
      out.push_back(static_cast<std::size_t>(it - nodes.begin()));
    }
    return out;
  }
};

// Checkpoint I/O: each GPU writes and reads its shard in parallel.
struct StorageModel {
  double write_gib_per_s = 0.25;  // ASSUMPTION: per GPU, to shared networked storage
  double read_gib_per_s = 0.5;    // ASSUMPTION: per GPU
  Seconds reschedule{120};        // ASSUMPTION: pod rescheduled and started, image cached

  Seconds Write(double gib, int gpus) const { return Seconds{gib / (gpus * write_gib_per_s)}; }
  Seconds Restore(double gib, int gpus) const { return reschedule + Seconds{gib / (gpus * read_gib_per_s)}; }
};

Result<TrainingWorkload> ReadTrainingWorkload(const std::string& path);
// The same from YAML text (the demo's embedded jobs); errors name `source` as they name a path.
Result<TrainingWorkload> ParseTrainingWorkload(const std::string& yaml, const std::string& source);

// "transparent", "application", "none" and back. Errors: kInvalidArgument naming `where`.
Result<Checkpointing> ParseCheckpointing(const std::string& name, const std::string& where);
const char* CheckpointingName(Checkpointing c);

// A SpotMarket from an AWS Spot Instance Advisor band ("<5%", "5-10%", ...).
Result<SpotMarket> SpotMarketFromBand(const std::string& band, Seconds notice);

// Training jobs from openb pods: whole GPUs (gpu_milli 1000), a deletion time, and a
// lifetime within [min_hours, max_hours] (longer pods are services). The lifetime becomes
// the failure-free work, creation the submit time, the first gpu_spec type the GPU model.
// Checkpoints: checkpoint_gib_per_gpu per GPU (ASSUMPTION: weights and optimizer state
// sharded over the job's GPUs), times from `storage`.
struct OpenbTrainingOptions {
  double min_hours = 1;
  double max_hours = 720;
  double checkpoint_gib_per_gpu = 16;
  StorageModel storage;
  Checkpointing checkpointing = Checkpointing::kApplication;
  double deadline_factor = 0;  // > 0: deadline = creation + factor x lifetime
};
std::vector<TrainingJob> TrainingJobsFromOpenb(const std::vector<PodSpec>& pods, const OpenbTrainingOptions& options);

}  // namespace gpufit
