// Plans keyed by workload. A Deployment's pods get new names in every rollout (a new
// ReplicaSet hash), including the rollout a plan's own patches cause, so a plan that names
// pods cannot be re-checked next week. Keyed by workload, a group says "2 replicas of
// deployment/ml/web" and a replay matches the pods of the day by their owner.
//
// Workload key of a telemetry pod ("ns/pod", "ns/pod[i]" one GPU of several, "ns/pod@k" a
// later pod of the name), from the pods file (kubectl get pods -A -o json):
//  * "<kind>/<namespace>/<name>" of the pod's top-level owner (model/kube_cluster.h
//    WorkloadRef), kind in lower case: deployment/ml/web, statefulset/db/pg, job/ml/run-7,
//    daemonset/..., replicaset/... (a ReplicaSet whose pods lack the pod-template-hash label:
//    its name changes in a rollout, so its pods match only until then);
//  * a pod the file does not list (deleted before the snapshot, e.g. replaced in a rollout
//    during the week) whose name is "<deployment>-<hash>-<suffix>" (ReplicaSet naming: hash
//    of 1-10 and suffix of 5 lower-case letters or digits) of a Deployment the file knows in
//    that namespace: deployment/<namespace>/<deployment>;
//  * otherwise, and for a pod no controller owns: "pod/<namespace>/<name>", matched by name
//    (without the "[i]" and "@k"), as a plan without --pods does.
// Each telemetry series is one replica slot: a pod of k GPUs is k slots of its workload.
//
// Envelope (the budget of k slots of one workload on one GPU): per sample t, the sum of the k
// largest fb_used_mib values among the workload's series at t, and, separately, the sum of
// the k largest gpu_util_pct values (series are 0 outside a pod's life). For k = 1 it is the
// per-sample max over the replicas.
// Why it covers any assignment of replicas to slots: at sample t the GPU hosts at most k
// distinct series of the workload (one pod per slot at a time, whichever pod that is after a
// restart or rollout), and any k of them sum to no more than the k largest. A group's replay
// counts overflows and collisions where its summed memory or duty crosses a line, so both
// counts only grow with each member's series: a replay that is safe with every workload's
// envelope is safe for every assignment the scheduler may make. It is the least bound with
// that property for each metric (some assignment attains it); the price is that memory and
// duty may peak on different replicas, and that replicas whose peaks alternate both count at
// their peak. With fewer replicas than slots the envelope sums all of them (empty slots add
// nothing); with more, the slots still hold at most k and the rest are unplanned.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/model/telemetry.h"
#include "gpufit/plan/plan.h"
#include "gpufit/plan/replay.h"

namespace gpufit {

// The pods file's pod of a telemetry pod "ns/pod", "ns/pod[i]" or "ns/pod@k" (namespace/name;
// a name without namespace must be unique), or null.
const KubePod* FindKubePod(const std::vector<KubePod>& pods, const std::string& telemetry_pod);

// The workload key of a telemetry pod (rules above). `pods` sorted by Key() (ReadKubePods).
std::string WorkloadKeyOf(const std::string& telemetry_pod, const std::vector<KubePod>& pods);

// Slots of one workload: `replicas` series of it (in a group, or the plan's own-GPU lists).
struct WorkloadSlots {
  std::string workload;
  std::size_t replicas = 0;
  auto operator<=>(const WorkloadSlots&) const = default;
};

// The keys counted, by workload key.
std::vector<WorkloadSlots> CountSlots(const std::vector<std::string>& keys);

// A plan restated by workload (needs plan.workload_of, see KeyPlanByWorkload).
struct WorkloadPlan {
  std::vector<std::vector<WorkloadSlots>> groups;  // per co-location group (plan.replay.gpus)
  std::vector<WorkloadSlots> too_big;              // each slot: its own right-sized GPU
  std::vector<WorkloadSlots> kept;                 // each slot: its own current GPU (CPU-starved)
};
WorkloadPlan WorkloadPlanOf(const Plan& plan);

// The series of one workload on the grid: `pods` (indices into Telemetry::pods) and its
// replicas, the most series alive at one sample (a rollout's surge counts).
struct WorkloadReplicas {
  std::string workload;
  std::vector<std::size_t> pods;
  std::size_t replicas = 0;
};
// By workload key; `keys` has one key per telemetry pod.
std::vector<WorkloadReplicas> GroupByWorkload(const Telemetry& telemetry, const std::vector<std::string>& keys);

// The envelope of k slots (above) of the series `pods`, named `name`, alive from the first
// series' start to the last one's end.
PodSeries SlotEnvelope(const Telemetry& telemetry, const std::vector<std::size_t>& pods, std::size_t k,
                       const std::string& name);

// A workload of the telemetry the plan has no slot for: not in the plan (planned_slots 0), or
// more replicas than slots (the extra replicas, replicas - planned_slots, are unplanned).
struct UnplannedWorkload {
  std::string workload;
  std::size_t replicas = 0, planned_slots = 0;
  std::vector<std::string> pods;  // its telemetry pods
};

struct WorkloadReplay {
  Replay replay;  // one GpuReplay per planned group; its `pods` index the group's workload entries
  std::vector<UnplannedWorkload> unplanned;  // by workload key
  std::vector<std::string> absent;           // planned workloads with no pod in the telemetry (slots stay empty)
};

// Replays `plan` on `telemetry` (keys: one per telemetry pod) with every group's workload
// entries carrying their SlotEnvelope. Every planned too-big workload present must peak
// above `too_big_above_mib` (else the plan claims it too big wrongly). Errors:
// kInvalidArgument naming the workload ("too_big_for_target_workloads: ...").
Result<WorkloadReplay> ReplayByWorkload(const Telemetry& telemetry, const std::vector<std::string>& keys,
                                        const WorkloadPlan& plan, double capacity_mib, double max_collision_share,
                                        double too_big_above_mib);

// Keys a plan built from `telemetry` by workload: sets plan.workload_of and
// plan.workload_replay (the plan's groups replayed with envelopes at its packing capacity).
void KeyPlanByWorkload(Plan& plan, const Telemetry& telemetry, const std::vector<KubePod>& pods);

}  // namespace gpufit
