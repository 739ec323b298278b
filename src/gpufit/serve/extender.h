// gpufit's placement engine as a Kubernetes scheduler extender: the filter and prioritize
// verbs over a cluster state built from kubectl snapshots (serve/extender_wire.h holds the
// wire format, apps/gpufit/serve_command.cpp the HTTP server).
//
// State. Nodes from `kubectl get nodes -o json`: allocatable CPU (millicores) and memory
// (MiB); GPUs from allocatable `nvidia.com/gpu` when the node reports it (0 included: every
// device unhealthy), else the `nvidia.com/gpu.count` label, else allocatable
// `alibabacloud.com/gpu-count`; the GPU type from the `nvidia.com/gpu.product`
// label, else `alibabacloud.com/gpu-card-model`. Pods from `kubectl get pods -A -o json`: each
// pod bound to a node (`.spec.nodeName`) that has not ended (phase neither Succeeded nor
// Failed) takes its declared request there. A snapshot does not say which device a pod
// holds, so a whole-GPU pod takes the node's lowest-numbered idle GPUs and a GPU-sharing pod
// the first GPU with room; a pod that does not fit its node (an overcommitted snapshot, or a
// node the snapshot lacks) is left out and counted in SnapshotStats.
//
// A pod's request is what it declares, or, for a pod sharing one GPU whose workload has a
// telemetry profile (`--profiles`, serve/profiles.h), its profile's share of each node's GPU:
// CPU and memory by
// kube-scheduler's rule (KubePod::CpuRequest, MemoryRequest); whole GPUs from
// `nvidia.com/gpu`; without it, the annotations `alibabacloud.com/gpu-count` and
// `alibabacloud.com/gpu-milli` (milli-GPU on each GPU, 1000 = one whole GPU) of Alibaba's
// open-gpu-share, as the FGD simulator's pods carry them (its pkg/utils constants), the form
// of the openb trace that `simulate` replays; GPU types from the node selector
// `nvidia.com/gpu.product` or `alibabacloud.com/gpu-card-model`.
//
// With --profiles, GPU memory used outside any pod (plan.json `reserved_gpus`) counts as used
// for the pods placed by a profile: on a node whose GPUs have M MiB and where some GPU has X MiB
// used outside pods (the most of its entries), their shares are taken of M - X, so whichever
// GPU the device stack gives them, X is left alone. Pods placed by their declared requests
// (whole GPUs, declared shares) are not charged: a whole GPU is given whatever runs beside.
//
// The policy's target workload (FGD's M) is the shapes of the snapshot's pods; with no pods,
// one whole GPU with the cluster's CPU per GPU.
//
// Duty-curve complementarity (a pod placed by its profile): each GPU's tenants that share it
// add up their 24-hour duty curves; a GPU suits the pod when the sum with the pod's curve stays
// within 100% at every hour and every sharing tenant has a profile (a tenant without one could
// be busy at any hour). The profiles' hourly figures are quantiles at 1 - the plan's collision
// share, so a sum within 100% keeps the GPU as the plan's collision rule allows (summing
// quantiles errs on the safe side when tenants peak together). Prioritize ranks the nodes that
// have such a GPU above those that do not, the policy's value deciding within each rank, and
// the GPU chosen at bind is the picker's when it suits the pod, else the lowest-numbered GPU
// with room that suits it, else the picker's.
//
// Filter: a node the snapshot lacks is FailedAndUnresolvable ("not in gpufit's snapshot");
// otherwise the placement policy's filters (placement/registry.h: gpu-model, gpu, cpu,
// memory) decide, a kNever verdict (the node could not take the pod even empty) going to
// FailedAndUnresolvableNodes, a kNotNow one to FailedNodes, with the filter's reason.
// Prioritize: the candidate the policy chooses (Policy::Place's rule over the candidates: the
// highest value, sum of weight * score; ties to the first in the seeded node order) gets
// MaxExtenderPriority (10), alone, so that kube-scheduler, where the extender's weighted score
// outweighs its own plugins', makes simulate's decision; every other candidate that fits gets
// its value mapped linearly onto 0..9 (the worst 0, a tie with the choice 9); a candidate that
// does not fit, or that the snapshot lacks, gets 0. kube-scheduler multiplies that by the
// extender's weight and by MaxNodeScore / MaxExtenderPriority = 10 (formats.md (d)).
//
// Bind (the bind verb; kube-scheduler then leaves the Binding to the extender): the pod's
// request is the one of the last filter request that named it (ExtenderBindingArgs carries only
// its name, namespace and UID; the last kMaxRemembered pods filtered are kept). Reserve checks
// the node again under the lock, takes the GPUs the policy's picker chooses and puts the pod in
// the state, so that of concurrent binds for the last free GPU exactly one gets it; Release
// undoes a reservation whose Binding the API server refused.
//
// Reconcile (a refreshed snapshot, `serve --watch-dir`): the state is built again from the new
// snapshot as at start (nodes, node order, the policy's target workload, the running pods),
// so pods that ended or were deleted free their GPUs and new nodes can be chosen. The
// extender's own reservations then go back on top: a pod the snapshot shows bound, or ended,
// is the snapshot's (its reservation is dropped, never counted twice); any other keeps its
// node and GPUs (the snapshot was taken before its Binding showed), or other GPUs of that node
// the picker chooses, for at most one snapshot. The second snapshot taken in after a bind was
// listed after the first had been written, so after the bind: a pod it does not show bound was
// deleted, or its Binding never took, and its reservation is dropped. So is one whose pod name
// the snapshot shows with another UID (a new pod of that name), and one whose node is gone or
// full. Requests remembered from filter requests are kept. Between snapshots the state only
// grows.
//
// Thread-safe: one decision at a time (the policy's plugins cache per pod shape).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/core/rng.h"
#include "gpufit/model/cluster.h"
#include "gpufit/model/kube_cluster.h"
#include "gpufit/placement/cluster_state.h"
#include "gpufit/placement/fragmentation.h"
#include "gpufit/placement/policy.h"
#include "gpufit/serve/extender_wire.h"
#include "gpufit/serve/kube_objects.h"
#include "gpufit/serve/profiles.h"

namespace gpufit::serve {

struct ExtenderOptions {
  std::string policy = "gpufit";  // a name of placement/registry.h
  // Ties between equally good nodes go to the first in the snapshot's node order shuffled
  // with this seed, as `simulate --seeds <seed>` breaks them (sim/engine.h); the same seed then
  // drives a random GPU picker's draws.
  std::uint64_t seed = 42;
  std::shared_ptr<const ProfileBook> profiles{};  // --profiles; null: every pod by its declared request
};

// Why Reserve refused.
enum class ReserveFailure { kNone, kUnknownNode, kUnknownPod, kAlreadyBound, kNoRoom };

// Where Reserve put a pod.
struct Reservation {
  std::string pod{};  // namespace/name
  std::string node{};
  GpuSet gpus = 0;  // bit g: GPU g of the node
};

struct SnapshotStats {
  int nodes = 0;
  int pods_placed = 0;                  // bound, running pods taken into the state
  int pods_not_fitting = 0;             // bound pods left out: their node lacks room or is not in the snapshot
  int nodes_with_outside_memory = 0;    // nodes where plan.json reserved_gpus counts (--profiles)
  std::vector<std::string> warnings{};  // one per pod left out (at most 20 kept)
  // Reconcile only: the extender's reservations kept on top of the snapshot, those the
  // snapshot now shows (bound or ended), and those dropped (node gone or full).
  int reservations_kept = 0, reservations_in_snapshot = 0, reservations_dropped = 0;
  int snapshots = 1;  // snapshots taken in since the start, this one included
};

class Extender {
 public:
  // Errors: those of ClusterState::FromSpecs (no nodes, more than 64 GPU types), of
  // DeclaredRequest, and of MakePolicy (an unknown policy name).
  static Result<std::unique_ptr<Extender>> FromSnapshot(const std::vector<KubeNode>& nodes,
                                                        const std::vector<KubePod>& pods,
                                                        const ExtenderOptions& options);

  // Takes in a refreshed snapshot (see the header comment). Errors: those of FromSnapshot; on
  // an error the state is left as it was.
  Result<SnapshotStats> Reconcile(const std::vector<KubeNode>& nodes, const std::vector<KubePod>& pods);

  // Errors: those of DeclaredRequest for the request's pod.
  Result<FilterResult> Filter(const ExtenderArgs& args);
  Result<std::vector<HostPriority>> Prioritize(const ExtenderArgs& args);

  // Errors (and `why`, when given): kFailedPrecondition when no filter request named the pod
  // (by UID, else namespace/name; a UID filtered under another name counts as unknown), when
  // the pod is already bound here, or when the node can no longer take it (with the filter's
  // reason; kube-scheduler schedules the pod again); kNotFound for a node not in the snapshot.
  // A reservation marked uncertain is dropped and made again.
  Result<Reservation> Reserve(const BindingArgs& args, ReserveFailure* why = nullptr);
  // Undoes Reserve of the pod (the same args): its Binding was refused for certain. Nothing
  // when it holds no reservation.
  void Release(const BindingArgs& args);
  // The Binding may or may not exist (no answer, 409, 5xx): the pod keeps its reservation (the
  // safe side: its GPUs stay counted), and its next bind replaces it.
  void MarkUncertain(const BindingArgs& args);

  static constexpr std::size_t kMaxRemembered = 65536;

  SnapshotStats snapshot() const;
  // Allocated milli-GPU over the cluster's milli-GPU, 0..1.
  double GpuAllocationRatio() const;
  // The cluster's GPU fragmentation as `simulate` reports it (sim/engine.h): FGD's sum over nodes
  // of F_n(M) for the policy's target workload M (placement/fragmentation.h), in milli-GPU, and
  // that over the free milli-GPU (0 when none is free).
  struct Fragmentation {
    double milli = 0, ratio = 0;
  };
  Fragmentation GpuFragmentation() const;
  // The GPU shares the placed pods declare over the cluster's milli-GPU. Above
  // GpuAllocationRatio when telemetry profiles place pods below their declared shares (GPU
  // memory overcommitted with respect to the requests); below it when they place them above.
  double GpuMemoryOvercommitRatio() const;

 private:
  // The tenants that share one GPU: their duty curves summed, and how many have no profile.
  struct GpuTenants {
    std::array<double, 24> duty_pct{};
    int unknown = 0;
  };
  // What a snapshot determines (FromSnapshot and Reconcile build it outside the lock).
  struct Snapshot {
    ClusterState cluster;
    Policy policy;
    Rng rng;
    std::unordered_map<std::string, int> node_ids;
    std::vector<int> order_pos;
    SnapshotStats stats;
    std::unordered_set<std::string> shown;                // BindKeys of the snapshot's pods that are bound or ended
    std::unordered_map<std::string, std::string> uid_of;  // namespace/name -> UID, of every snapshot pod
    std::shared_ptr<const std::vector<TypicalPod>> target;  // the policy's target workload
    std::int64_t declared_milli = 0;                        // declared GPU shares of the placed pods
    std::vector<double> gpu_memory_mib;  // per node: GpuMemoryMibOf less the memory used outside pods there
    std::vector<std::vector<GpuTenants>> tenants;         // per node, per GPU
  };
  static Result<Snapshot> Build(const std::vector<KubeNode>& nodes, const std::vector<KubePod>& pods,
                                const ExtenderOptions& options);
  explicit Extender(Snapshot s)
      : cluster_(std::move(s.cluster)),
        policy_(std::move(s.policy)),
        rng_(s.rng),
        node_ids_(std::move(s.node_ids)),
        order_pos_(std::move(s.order_pos)),
        stats_(std::move(s.stats)),
        target_(std::move(s.target)),
        declared_milli_(s.declared_milli),
        gpu_memory_mib_(std::move(s.gpu_memory_mib)),
        tenants_(std::move(s.tenants)) {}
  int NodeId(const std::string& name) const;  // -1 when the snapshot lacks it

  void Remember(const KubePod& pod, const PodRequest& request);  // under mu_

  struct Placed {
    int node = -1;
    std::string pod{};  // namespace/name
    PodRequest request{};
    Workload workload{};
    GpuSet gpus = 0;
    bool certain = true;  // false: the Binding's outcome is unknown (MarkUncertain)
    int unseen = 0;       // snapshots taken in since the bind that did not show the pod bound
  };
  struct Filtered {
    std::string pod{};  // namespace/name
    PodRequest request{};
  };

  mutable std::mutex mu_;
  ClusterState cluster_;
  Policy policy_;
  ExtenderOptions options_{};
  Rng rng_{42};  // the node order's shuffle, then the GPU picker's draws (a random picker only)
  std::unordered_map<std::string, int> node_ids_;
  std::vector<int> order_pos_;  // each node's position in the seeded order (ties: the first wins)
  SnapshotStats stats_;
  std::unordered_map<std::string, Filtered> filtered_;  // by UID (else namespace/name): the last filter's request
  std::deque<std::string> filtered_order_;              // oldest first, for the kMaxRemembered bound
  std::unordered_map<std::string, Placed> placed_;      // pods this extender bound, by the same key
  std::shared_ptr<const std::vector<TypicalPod>> target_;
  std::int64_t declared_milli_ = 0;
  std::vector<double> gpu_memory_mib_;                  // per node
  std::vector<std::vector<GpuTenants>> tenants_;        // per node, per GPU
};

}  // namespace gpufit::serve
