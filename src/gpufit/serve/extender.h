// gpufit's placement engine as a Kubernetes scheduler extender: the filter and prioritize
// verbs over a cluster state built from kubectl snapshots (serve/extender_wire.h holds the
// wire format, apps/gpufit/serve_command.cpp the HTTP server).
//
// State. Nodes from `kubectl get nodes -o json`: allocatable CPU (millicores) and memory
// (MiB); GPUs and GPU type as serve/kube_objects.h reads them (a time-sliced node's physical
// GPUs, not its replicas). Pods from `kubectl get pods -A -o json`: each pod bound to a node
// (`.spec.nodeName`) that has not ended (phase neither Succeeded nor Failed) takes its request
// there. A snapshot does not say which device a pod holds, so a whole-GPU pod takes the node's
// lowest-numbered idle GPUs and a GPU-sharing pod the first GPU with room; a pod that does not
// fit its node (an overcommitted snapshot, or a node the snapshot lacks) is left out and
// counted in SnapshotStats, as is each node with more GPUs than placement counts.
//
// A pod's request on a node (WorkloadOn) is what it declares (serve/kube_objects.h), except:
//  - on a node that shares each GPU among R replicas (time-slicing or MPS), a pod of one
//    `nvidia.com/gpu` takes one replica, 1000 / R milli-GPU of one GPU (or its annotated share,
//    if larger); a pod of more whole GPUs can never go there (two replicas may be one GPU, so
//    it would not have its GPUs; the plan keeps such pods off shared nodes too);
//  - a pod sharing one GPU whose workload has a telemetry profile (`--profiles`,
//    serve/profiles.h) takes its profile's share of the node's GPU.
//
// With --profiles, GPU memory used outside any pod (plan.json `reserved_gpus`) counts as used
// for every share of a GPU: on a node whose GPUs have M MiB and where some GPU has X MiB used
// outside pods (the most of its entries), a profiled share is taken of M - X, and a declared
// share s (s / 1000 of M) becomes ceil(s x M / (M - X)), so whichever GPU the device stack gives
// the pod, X is left alone; a share whose memory does not fit in M - X can never go there.
// Whole GPUs are not charged: a whole GPU is given whatever runs beside.
//
// Replicas apart (ExtenderOptions::replicas_apart): no two pods of one ReplicaSet, Deployment or
// StatefulSet share a GPU (or, with kNode, a node). Filter refuses a node where the pod would
// fit only beside a replica of its workload (FailedNodes), prioritize gives it 0, and bind
// takes a GPU no replica holds.
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
// the picker chooses. A snapshot never frees a reservation because it lacks the pod until a
// second pods listing since the bind lacks it: the first may have been listed before the
// bind, the second was listed after the first had been written, so after the bind; a pod it
// does not show bound was deleted, or its Binding never took, and its reservation is dropped.
// A listing counts only when it differs from the previous one (the pods' names, UIDs, nodes and
// phases): the sidecar writes nodes.json before pods.json, so a snapshot may bring new nodes
// and the old listing. A reservation is also dropped when the snapshot shows its pod name with
// another UID (a new pod of that name), and when its node is gone. On a node the snapshot's pods
// fill, it is kept at what is left there (its CPU and memory whole, the GPU room left, a
// warning). Requests remembered from filter requests are kept. Between snapshots the state
// only grows.
//
// Thread-safe: one decision at a time (the policy's plugins cache per pod shape).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
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
  // Replicas of one workload (PodRequest::replica_of) kept apart: kGpu, no two share a GPU
  // (the default: one GPU's fault or a noisy tenant takes down one replica only); kNode, no two
  // on one node; kOff, nothing. Running pods are counted where they run either way.
  enum class ReplicasApart { kGpu, kNode, kOff } replicas_apart = ReplicasApart::kGpu;
};

// What the extender knows of a node's GPUs beyond NodeSpec (see the header comment).
struct NodeFacts {
  double gpu_memory_mib = 0;  // per GPU, MiB: GpuMemoryMibOf less outside_mib; 0: unknown
  double outside_mib = 0;     // GPU memory used outside pods, MiB: the most on any of its GPUs (--profiles)
  int replicas = 1;           // NodeGpus::replicas: pods the device plugin lets share each GPU
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
  // A reservation marked uncertain is dropped and made again. `from_api`: the pod as the API
  // server holds it (ApiServerBinder::Verify): its requests are reserved, not those of the filter
  // request (which a caller could forge); the filter must still have named the pod by its UID.
  Result<Reservation> Reserve(const BindingArgs& args, ReserveFailure* why = nullptr,
                              const KubePod* from_api = nullptr);
  // Restart recovery: a pod the API server shows bound (`.spec.nodeName`) that the snapshot the
  // extender started from does not (it was listed before the Binding: gpufit bound the pod, was
  // killed, and started again from an older snapshot). Its request is taken on its node as a
  // reservation of this extender, so its GPUs are not given twice; Reconcile then keeps it as it
  // keeps a bind's until snapshots show the pod. Errors: kNotFound for a node not in the
  // snapshot, kFailedPrecondition when the node has no room left for it or gpufit holds it, and
  // those of DeclaredRequest.
  Result<Reservation> Adopt(const KubePod& pod);
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
  // The tenants that share one GPU: their duty curves summed, and how many have no profile;
  // and the workloads (PodRequest::replica_of) of every pod on the GPU, one entry a pod.
  struct GpuTenants {
    std::array<double, 24> duty_pct{};
    int unknown = 0;
    std::vector<std::string> replicas_of{};
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
    std::vector<NodeFacts> facts;                           // per node
    std::vector<std::vector<GpuTenants>> tenants;         // per node, per GPU
    std::uint64_t pods_listing = 0;                       // a digest of the pods listing (Reconcile)
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
        facts_(std::move(s.facts)),
        tenants_(std::move(s.tenants)),
        pods_listing_(s.pods_listing) {}
  int NodeId(const std::string& name) const;  // -1 when the snapshot lacks it

  void Remember(const KubePod& pod, const PodRequest& request);  // under mu_
  // Why node `id` can never take the pod (NeverOn in extender.cpp), and the GPUs of node `id`
  // the pod may take beside the replicas of its workload; under mu_.
  struct Never {
    std::string_view reason{};  // text with static storage (FailedNode::reason)
    std::string detail{};       // with the numbers, for a bind's error
  };
  std::optional<Never> NeverOn(const PodRequest& r, int id) const;
  GpuSet ApartGpus(const PodRequest& r, int id) const;
  // The pod's workload on node `id` (`declared`: cluster_.WorkloadFor(r.declared)); under mu_.
  Workload OnNode(const PodRequest& r, int id, const Workload& declared) const;

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
  std::vector<NodeFacts> facts_;                        // per node
  std::vector<std::vector<GpuTenants>> tenants_;        // per node, per GPU
  std::uint64_t pods_listing_ = 0;                      // the last snapshot's Snapshot::pods_listing
};

}  // namespace gpufit::serve
