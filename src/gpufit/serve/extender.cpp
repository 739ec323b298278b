#include "gpufit/serve/extender.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "gpufit/placement/fragmentation.h"
#include "gpufit/placement/registry.h"
#include "gpufit/serve/internal/gpu_choice.h"

namespace gpufit::serve {
namespace {

using internal::ApartOf;
using internal::CountTenant;
using internal::FitsOn;
using internal::kAllGpus;
using internal::LowestGpus;
using internal::PickFor;
using internal::ShareBesideOutside;
using internal::SuitingGpu;
using internal::WhatIsLeft;
using internal::WorkloadOn;

std::int64_t DeclaredMilli(const PodSpec& p) { return static_cast<std::int64_t>(p.gpu_count) * p.gpu_per_gpu.value; }

std::string BindKey(const std::string& uid, const std::string& ns, const std::string& name) {
  return uid.empty() ? ns + "/" + name : uid;
}

// A digest of what a pods listing says of its pods (name, UID, node, phase): two snapshots with
// the same are one listing as far as Reconcile's count of listings goes.
std::uint64_t ListingDigest(const std::vector<KubePod>& pods) {
  std::uint64_t h = 1469598103934665603ULL;
  const auto mix = [&h](const std::string& s) { h = (h ^ std::hash<std::string>{}(s)) * 1099511628211ULL; };
  for (const KubePod& p : pods) {
    mix(p.Key());
    mix(p.uid);
    mix(p.node_name);
    mix(p.phase);
  }
  return h;
}

}  // namespace

Result<Extender::Snapshot> Extender::Build(const std::vector<KubeNode>& nodes, const std::vector<KubePod>& pods,
                                           const ExtenderOptions& options) {
  std::vector<NodeSpec> specs;
  specs.reserve(nodes.size());
  for (const KubeNode& n : nodes) specs.push_back(NodeSpecOf(n));
  Result<ClusterState> cluster = ClusterState::FromSpecs(specs);
  if (!cluster) return cluster.error();

  std::unordered_set<std::string> shown;
  std::unordered_map<std::string, std::string> uid_of;
  std::vector<PodSpec> requests;
  std::vector<PodRequest> placed_as;  // requests[i] with its profile
  std::vector<const KubePod*> bound;
  for (const KubePod& p : pods) {
    const bool ended = p.phase == "Succeeded" || p.phase == "Failed";
    if (ended || !p.node_name.empty()) {
      shown.insert(p.Key());
      if (!p.uid.empty()) shown.insert(p.uid);
    }
    uid_of.emplace(p.Key(), p.uid);
    if (ended) continue;
    Result<PodRequest> r = RequestOf(p, options.profiles.get());
    if (!r) return r.error();
    requests.push_back(r->declared);
    placed_as.push_back(std::move(*r));
    bound.push_back(&p);
  }
  // FGD's target workload (and gpufit's): the shapes of the cluster's own pods. A cluster with
  // no pods yet gets the pod its nodes are built for: one whole GPU with the cluster's CPU per
  // GPU (CPU-only clusters: one core).
  std::vector<TypicalPod> typical = TypicalPods(requests, *cluster);
  if (typical.empty()) {
    const int gpus = cluster->total_gpus();
    typical.push_back(TypicalPod{.cpu = MilliCpu{gpus > 0 ? cluster->cpu_capacity().value / gpus : 1000},
                                 .gpu_count = gpus > 0 ? 1 : 0,
                                 .gpu_per_gpu = GpuMilli{gpus > 0 ? 1000 : 0},
                                 .any_model = true,
                                 .model_mask = 0,
                                 .share = 1.0});
  }
  auto target = std::make_shared<const std::vector<TypicalPod>>(std::move(typical));
  Result<Policy> policy = MakePolicy(options.policy, PolicyContext{target});
  if (!policy) return policy.error();

  // The node order simulate uses for the same seed (its Rng's first draws).
  Rng rng(options.seed);
  const std::vector<int> order = SeededNodeOrder(cluster->nodes().size(), rng);
  policy->SetNodeOrder(order);

  Snapshot s{.cluster = std::move(*cluster),
             .policy = std::move(*policy),
             .rng = rng,
             .node_ids = {},
             .order_pos = std::vector<int>(order.size()),
             .stats = {},
             .shown = std::move(shown),
             .uid_of = std::move(uid_of),
             .target = target,
             .declared_milli = 0,
             .facts = {},
             .tenants = {},
             .pods_listing = ListingDigest(pods)};
  for (const KubeNode& n : nodes) {
    const NodeGpus gpus = NodeGpusOf(n);
    s.facts.push_back({.gpu_memory_mib = GpuMemoryMibOf(n), .outside_mib = 0, .replicas = gpus.replicas});
    if (!gpus.warning.empty() && s.stats.warnings.size() < 20) s.stats.warnings.push_back(gpus.warning);
  }
  for (const NodeState& n : s.cluster.nodes()) s.tenants.emplace_back(static_cast<std::size_t>(n.gpu_count));
  for (std::size_t k = 0; k < order.size(); ++k) s.order_pos[static_cast<std::size_t>(order[k])] = static_cast<int>(k);
  for (std::size_t i = 0; i < s.cluster.nodes().size(); ++i) {
    s.node_ids.emplace(s.cluster.node_name(static_cast<int>(i)), static_cast<int>(i));
  }
  s.stats.nodes = static_cast<int>(nodes.size());
  // GPU memory used outside any pod (plan.json reserved_gpus, serve/profiles.h): the most on any
  // GPU of a node comes off the memory the shares of its pods are taken of (extender.h), the
  // running pods' included.
  std::vector<std::string> unknown_hosts;
  for (const OutsideMemory& o : options.profiles ? options.profiles->outside() : std::vector<OutsideMemory>{}) {
    const auto found = s.node_ids.find(o.host);
    if (found == s.node_ids.end()) {
      unknown_hosts.push_back(o.host);
      continue;
    }
    double& most = s.facts[static_cast<std::size_t>(found->second)].outside_mib;
    if (most == 0 && o.peak_mib > 0) ++s.stats.nodes_with_outside_memory;
    most = std::max(most, o.peak_mib);
  }
  for (NodeFacts& f : s.facts) {
    if (f.gpu_memory_mib > 0 && f.outside_mib > 0) {
      const double full = f.gpu_memory_mib;
      f.gpu_memory_mib = std::max(1.0, full - f.outside_mib);
      f.outside_mib = full - f.gpu_memory_mib;  // what came off
    } else {
      f.outside_mib = 0;  // the GPU's memory is unknown: nothing to take it from
    }
  }
  if (!unknown_hosts.empty() && s.stats.warnings.size() < 20)
    s.stats.warnings.push_back(fmt::format(
        "{} reserved_gpus entries name hosts that are not nodes of the snapshot (e.g. {}): their memory used outside "
        "pods is not counted (dcgm-exporter's Hostname must be the node's name)",
        unknown_hosts.size(), unknown_hosts.front()));
  for (std::size_t i = 0; i < bound.size(); ++i) {
    const KubePod& p = *bound[i];
    if (p.node_name.empty()) continue;  // pending: kube-scheduler will ask about it
    const auto found = s.node_ids.find(p.node_name);
    const int id = found == s.node_ids.end() ? -1 : found->second;
    const Workload w =
        id >= 0 ? WorkloadOn(s.cluster, s.facts[static_cast<std::size_t>(id)], options.profiles.get(), placed_as[i])
                : s.cluster.WorkloadFor(requests[i]);
    Workload placed = w;
    if (id >= 0 && w.gpu_count == 1 && (placed_as[i].profile != nullptr || w.gpu_per_gpu != requests[i].gpu_per_gpu) &&
        !s.policy.Check(w, s.cluster.node(id)).fits()) {
      // Its share (its profile's, one replica's, or the declared one taken of the memory left
      // beside what is used outside pods) does not fit beside the pods already there. It runs
      // all the same, so it takes what is left of the GPU with the most room (the safe side:
      // nothing else lands there), if the rest of its request fits.
      const NodeState& n = s.cluster.node(id);
      std::int64_t most = 0;
      for (int g = 0; g < n.gpu_count; ++g) most = std::max(most, n.gpu_free[static_cast<std::size_t>(g)].value);
      if (most > 0) {
        placed.gpu_per_gpu = GpuMilli{most};
        if (s.policy.Check(placed, n).fits() && s.stats.warnings.size() < 20)
          s.stats.warnings.push_back(fmt::format(
              "pod {}: its share ({} milli-GPU) does not fit beside the pods already on node {}; counted at the {} "
              "left",
              p.Key(), w.gpu_per_gpu.value, p.node_name, most));
      }
    }
    if (id >= 0 && s.policy.Check(placed, s.cluster.node(id)).fits()) {
      const GpuSet gpus = LowestGpus(placed, s.cluster.node(id));
      s.cluster.Place(id, placed, gpus);
      CountTenant(s.tenants[static_cast<std::size_t>(id)], placed, gpus, placed_as[i], +1);
      s.declared_milli += DeclaredMilli(requests[i]);
      ++s.stats.pods_placed;
      continue;
    }
    ++s.stats.pods_not_fitting;
    if (s.stats.warnings.size() < 20) {
      s.stats.warnings.push_back(id < 0
                                     ? fmt::format("pod {}: node {} is not in the nodes snapshot", p.Key(), p.node_name)
                                     : fmt::format("pod {}: does not fit node {} beside the pods already there ({})",
                                                   p.Key(), p.node_name, s.policy.Check(w, s.cluster.node(id)).reason));
    }
  }
  return s;
}

Result<std::unique_ptr<Extender>> Extender::FromSnapshot(const std::vector<KubeNode>& nodes,
                                                         const std::vector<KubePod>& pods,
                                                         const ExtenderOptions& options) {
  Result<Snapshot> s = Build(nodes, pods, options);
  if (!s) return s.error();
  std::unique_ptr<Extender> e(new Extender(std::move(*s)));
  e->options_ = options;
  return e;
}

Result<SnapshotStats> Extender::Reconcile(const std::vector<KubeNode>& nodes, const std::vector<KubePod>& pods) {
  const std::lock_guard lock(mu_);  // one decision at a time: no bind may slip between the build and the swap
  Result<Snapshot> s = Build(nodes, pods, options_);
  if (!s) return s.error();
  s->stats.snapshots = stats_.snapshots + 1;
  // Only a pods listing that differs from the last one counts as one more listing since a bind:
  // the sidecar writes nodes.json before pods.json, so a snapshot may bring new nodes and the
  // old listing, made before the bind.
  const bool new_listing = s->pods_listing != pods_listing_;
  for (auto it = placed_.begin(); it != placed_.end();) {
    Placed& p = it->second;
    if (s->shown.contains(it->first)) {  // the snapshot has it, bound or ended: it is counted there
      ++s->stats.reservations_in_snapshot;
      it = placed_.erase(it);
      continue;
    }
    const auto node = s->node_ids.find(cluster_.node_name(p.node));
    const Workload w = node == s->node_ids.end()
                           ? s->cluster.WorkloadFor(p.request.declared)
                           : WorkloadOn(s->cluster, s->facts[static_cast<std::size_t>(node->second)],
                                        options_.profiles.get(), p.request);
    const auto same_name = s->uid_of.find(p.pod);
    std::string drop;
    if (same_name != s->uid_of.end() && it->first != p.pod && same_name->second != it->first)
      drop = fmt::format("the snapshot has a pod of that name with another UID ({})", same_name->second);
    else if (new_listing && ++p.unseen >= 2)
      drop = "two snapshots taken after its bind do not show it bound (deleted, or its Binding never took)";
    else if (node == s->node_ids.end())
      drop = "the node is not in the new snapshot";
    if (!drop.empty()) {
      ++s->stats.reservations_dropped;
      if (s->stats.warnings.size() < 20)
        s->stats.warnings.push_back(
            fmt::format("reservation of {} on node {} dropped: {}", p.pod, cluster_.node_name(p.node), drop));
      it = placed_.erase(it);
      continue;
    }
    const NodeState& n = s->cluster.node(node->second);
    std::vector<GpuTenants>& tenants = s->tenants[static_cast<std::size_t>(node->second)];
    Workload held = w;
    GpuSet gpus = 0;
    if (const Verdict v = s->policy.Check(w, n); !v.fits()) {
      // The snapshot's pods leave no room for it there (bound by another scheduler, or the node
      // shrank), yet its pod may be running there: it keeps what is left (a snapshot never frees
      // a live reservation).
      std::tie(held, gpus) = WhatIsLeft(w, n);
      if (s->stats.warnings.size() < 20)
        s->stats.warnings.push_back(fmt::format(
            "reservation of {} on node {} kept beyond the room the snapshot leaves there ({}): counted at what is left",
            p.pod, cluster_.node_name(p.node), v.reason));
    } else {
      // The same GPUs when the node still has them all idle enough; else the picker's.
      bool same_gpus_free = std::popcount(p.gpus) == w.gpu_count && (p.gpus >> n.gpu_count) == 0;
      for (int g = 0; g < n.gpu_count && same_gpus_free; ++g) {
        if ((p.gpus >> g & 1) == 0) continue;
        const GpuMilli free = n.gpu_free[static_cast<std::size_t>(g)];
        same_gpus_free = w.SharesGpu() ? free >= w.gpu_per_gpu : free.value == 1000;
      }
      GpuSet allowed = ApartOf(tenants, p.request.replica_of, options_.replicas_apart);
      if (!FitsOn(w, n, allowed)) allowed = kAllGpus;  // it runs there (or will): counted, siblings or not
      gpus = same_gpus_free ? p.gpus : PickFor(s->policy, s->rng, tenants, n, w, p.request, allowed);
    }
    s->cluster.Place(node->second, held, gpus);
    CountTenant(tenants, held, gpus, p.request, +1);
    s->declared_milli += DeclaredMilli(p.request.declared);
    p.node = node->second;
    p.workload = held;
    p.gpus = gpus;
    ++s->stats.reservations_kept;
    ++it;
  }
  cluster_ = std::move(s->cluster);
  policy_ = std::move(s->policy);
  rng_ = s->rng;
  node_ids_ = std::move(s->node_ids);
  order_pos_ = std::move(s->order_pos);
  stats_ = std::move(s->stats);
  facts_ = std::move(s->facts);
  tenants_ = std::move(s->tenants);
  pods_listing_ = s->pods_listing;
  target_ = std::move(s->target);
  declared_milli_ = s->declared_milli;
  return stats_;
}

SnapshotStats Extender::snapshot() const {
  const std::lock_guard lock(mu_);
  return stats_;
}

int Extender::NodeId(const std::string& name) const {
  const auto it = node_ids_.find(name);
  return it == node_ids_.end() ? -1 : it->second;
}

std::optional<Extender::Never> Extender::NeverOn(const PodRequest& r, int id) const {
  const NodeFacts& f = facts_[static_cast<std::size_t>(id)];
  const ProfileBook* book = options_.profiles.get();
  if (f.replicas > 1 && r.declared.gpu_count >= 2 && !r.declared.SharesGpu()) {
    return Never{.reason = "needs whole GPUs; this node shares each GPU (time-slicing or MPS replicas)",
                 .detail = fmt::format("the pod needs {} whole GPUs and each GPU of this node is shared {} ways "
                                       "(nvidia.com/gpu.replicas): two of its replicas may be one GPU",
                                       r.declared.gpu_count, f.replicas)};
  }
  if (r.profile != nullptr && book != nullptr) {
    if (f.gpu_memory_mib <= 0 || r.profile->memory_peak_mib <= f.gpu_memory_mib - book->reserve_mib()) return {};
    return Never{.reason = "the workload's memory peak (telemetry profile) exceeds this node's GPU memory",
                 .detail = fmt::format(
                     "the workload's peak of {:.0f} MiB does not fit this node's GPU ({:.0f} MiB, {:.0f} reserved)",
                     r.profile->memory_peak_mib, f.gpu_memory_mib, book->reserve_mib())};
  }
  if (f.outside_mib > 0 && r.declared.SharesGpu() && ShareBesideOutside(r.declared.gpu_per_gpu.value, f) > 1000) {
    const double full = f.gpu_memory_mib + f.outside_mib;
    return Never{
        .reason = "the pod's GPU share does not fit beside the GPU memory used outside pods",
        .detail = fmt::format("its share of {} milli-GPU is {:.0f} MiB of this node's {:.0f} MiB GPU, and "
                              "{:.0f} MiB are used outside pods (plan.json reserved_gpus)",
                              r.declared.gpu_per_gpu.value,
                              static_cast<double>(r.declared.gpu_per_gpu.value) * full / 1000.0, full, f.outside_mib)};
  }
  return {};
}

GpuSet Extender::ApartGpus(const PodRequest& r, int id) const {
  return ApartOf(tenants_[static_cast<std::size_t>(id)], r.replica_of, options_.replicas_apart);
}

namespace {

// A replica's reason not to go onto a node (FailedNodes' static text).
std::string_view ApartReason(ExtenderOptions::ReplicasApart mode) {
  return mode == ExtenderOptions::ReplicasApart::kNode
             ? "a replica of the same workload already runs on this node"
             : "a replica of the same workload already uses each GPU with room";
}

}  // namespace

Result<FilterResult> Extender::Filter(const ExtenderArgs& args) {
  const Result<PodRequest> request = RequestOf(args.pod, options_.profiles.get());
  if (!request) return request.error();
  FilterResult out;
  out.request_from = request->from;
  const std::lock_guard lock(mu_);
  Remember(args.pod, *request);
  const Workload declared = cluster_.WorkloadFor(request->declared);
  std::vector<char> seen(cluster_.nodes().size(), 0);  // a node named twice is answered once
  for (std::size_t i = 0; i < args.node_names.size(); ++i) {
    const int id = NodeId(args.node_names[i]);
    if (id >= 0 && std::exchange(seen[static_cast<std::size_t>(id)], 1) != 0) continue;
    if (id < 0) {
      out.failed_and_unresolvable.push_back({.node = i, .reason = "not in gpufit's snapshot of the cluster"});
      continue;
    }
    if (const std::optional<Never> never = NeverOn(*request, id)) {
      // FailedNode::reason is static text (the numbers go into a bind's error)
      out.failed_and_unresolvable.push_back({.node = i, .reason = never->reason});
      continue;
    }
    const Workload w = OnNode(*request, id, declared);
    const NodeState& n = cluster_.node(id);
    const Verdict v = policy_.Check(w, n);
    if (!v.fits()) {
      (v.kind == Verdict::Kind::kNever ? out.failed_and_unresolvable : out.failed)
          .push_back({.node = i, .reason = v.reason});
    } else if (!FitsOn(w, n, ApartGpus(*request, id))) {
      out.failed.push_back({.node = i, .reason = ApartReason(options_.replicas_apart)});
    } else {
      out.kept.push_back(i);
    }
  }
  return out;
}

Workload Extender::OnNode(const PodRequest& r, int id, const Workload& declared) const {
  const NodeFacts& f = facts_[static_cast<std::size_t>(id)];
  if (r.profile == nullptr && f.replicas == 1 && (f.outside_mib <= 0 || !r.declared.SharesGpu())) return declared;
  return WorkloadOn(cluster_, f, options_.profiles.get(), r);
}

Result<std::vector<HostPriority>> Extender::Prioritize(const ExtenderArgs& args) {
  const Result<PodRequest> request = RequestOf(args.pod, options_.profiles.get());
  if (!request) return request.error();
  std::vector<int> ids;
  std::vector<std::size_t> at;                         // index in args.node_names of each id
  const std::lock_guard lock(mu_);                     // a Reconcile may swap the nodes
  std::vector<char> seen(cluster_.nodes().size(), 0);  // a node named twice is scored once (then 0)
  for (std::size_t i = 0; i < args.node_names.size(); ++i) {
    if (const int id = NodeId(args.node_names[i]);
        id >= 0 && std::exchange(seen[static_cast<std::size_t>(id)], 1) == 0) {
      ids.push_back(id);
      at.push_back(i);
    }
  }
  // The pod's workload differs with the node (its profile's share with the GPU memory, a
  // replica's share on a time-sliced node, a share taken of the memory left beside what is used
  // outside pods): the policy values each group of nodes with the same workload there. Nodes
  // that can never take the pod, or only beside a replica of its workload, get none.
  const Workload declared = cluster_.WorkloadFor(request->declared);
  std::vector<std::optional<std::int64_t>> values(ids.size());
  std::vector<Workload> on(ids.size());
  std::map<std::pair<int, std::int64_t>, std::vector<std::size_t>> by_shape;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    if (NeverOn(*request, ids[k])) continue;
    on[k] = OnNode(*request, ids[k], declared);
    by_shape[{on[k].gpu_count, on[k].gpu_per_gpu.value}].push_back(k);
  }
  std::vector<char> suits(ids.size(), 0);
  for (const auto& [shape, ks] : by_shape) {
    std::vector<int> group;
    for (std::size_t k : ks) group.push_back(ids[k]);
    const std::vector<std::optional<std::int64_t>> v = policy_.Values(on[ks.front()], cluster_, group);
    for (std::size_t j = 0; j < ks.size(); ++j) {
      const std::size_t k = ks[j];
      const NodeState& n = cluster_.node(ids[k]);
      const GpuSet allowed = ApartGpus(*request, ids[k]);
      if (!v[j] || !FitsOn(on[k], n, allowed)) continue;
      values[k] = v[j];
      suits[k] = request->profile != nullptr &&
                 (!on[k].SharesGpu() ||
                  SuitingGpu(tenants_[static_cast<std::size_t>(ids[k])], n, on[k], *request, 0, allowed) >= 0);
    }
  }
  if (request->profile != nullptr) {
    // Nodes with a GPU that suits the pod's duty curve rank above the rest (extender.h), by an
    // offset larger than the values' span.
    std::optional<std::int64_t> vlo, vhi;
    for (const auto& v : values) {
      if (!v) continue;
      vlo = vlo ? std::min(*vlo, *v) : *v;
      vhi = vhi ? std::max(*vhi, *v) : *v;
    }
    for (std::size_t k = 0; k < values.size(); ++k)
      if (values[k] && suits[k]) *values[k] += *vhi - *vlo + 1;
  }
  // The policy's choice: the highest value, ties to the first in the seeded order.
  std::optional<std::size_t> choice;
  std::optional<std::int64_t> lo;
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (!values[k]) continue;
    lo = lo ? std::min(*lo, *values[k]) : *values[k];
    if (!choice || *values[k] > *values[*choice] ||
        (*values[k] == *values[*choice] &&
         order_pos_[static_cast<std::size_t>(ids[k])] < order_pos_[static_cast<std::size_t>(ids[*choice])])) {
      choice = k;
    }
  }
  std::vector<HostPriority> out;
  out.reserve(args.node_names.size());
  for (const std::string& name : args.node_names) out.push_back({.host = name, .score = kMinExtenderPriority});
  if (!choice) return out;
  const std::int64_t hi = *values[*choice];
  const std::int64_t span = hi - *lo;
  constexpr std::int64_t kBelowChoice = kMaxExtenderPriority - 1;
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (!values[k]) continue;
    out[at[k]].score =
        k == *choice ? kMaxExtenderPriority
        : span == 0  ? kBelowChoice
                     : kMinExtenderPriority + static_cast<std::int64_t>(std::llround(
                                                  static_cast<double>(*values[k] - *lo) / static_cast<double>(span) *
                                                  static_cast<double>(kBelowChoice - kMinExtenderPriority)));
  }
  return out;
}

void Extender::Remember(const KubePod& pod, const PodRequest& request) {
  const std::string key = BindKey(pod.uid, pod.namespace_name, pod.name);
  const auto [it, inserted] = filtered_.insert_or_assign(key, Filtered{.pod = pod.Key(), .request = request});
  if (!inserted) return;
  filtered_order_.push_back(key);
  if (filtered_order_.size() > kMaxRemembered) {
    filtered_.erase(filtered_order_.front());
    filtered_order_.pop_front();
  }
}

Result<Reservation> Extender::Reserve(const BindingArgs& args, ReserveFailure* why, const KubePod* from_api) {
  auto fail = [why](ReserveFailure f, Error e) -> Result<Reservation> {
    if (why != nullptr) *why = f;
    return e;
  };
  std::optional<PodRequest> api_request;  // the API server's pod's, outside the lock
  if (from_api != nullptr) {
    Result<PodRequest> r = RequestOf(*from_api, options_.profiles.get());
    if (!r) return fail(ReserveFailure::kUnknownPod, r.error());
    api_request = std::move(*r);
  }
  const std::string key = BindKey(args.pod_uid, args.pod_namespace, args.pod_name);
  const std::string pod = args.pod_namespace + "/" + args.pod_name;
  const std::lock_guard lock(mu_);
  const int id = NodeId(args.node);
  if (id < 0) {
    return fail(ReserveFailure::kUnknownNode,
                NotFound("bind {}: node {} is not in gpufit's snapshot of the cluster", pod, args.node));
  }
  if (const auto it = placed_.find(key); it != placed_.end()) {
    if (it->second.certain) {
      return fail(ReserveFailure::kAlreadyBound, FailedPrecondition("bind {}: already bound by gpufit to node {}", pod,
                                                                    cluster_.node_name(it->second.node)));
    }
    cluster_.Remove(it->second.node, it->second.workload, it->second.gpus);  // bound again: this bind decides
    CountTenant(tenants_[static_cast<std::size_t>(it->second.node)], it->second.workload, it->second.gpus,
                it->second.request, -1);
    declared_milli_ -= DeclaredMilli(it->second.request.declared);
    placed_.erase(it);
  }
  const auto it = filtered_.find(key);
  if (it == filtered_.end() || it->second.pod != pod) {
    return fail(ReserveFailure::kUnknownPod,
                FailedPrecondition("bind {}: no filter request named this pod{} since gpufit started, so its requests "
                                   "are unknown (kube-scheduler filters it again on its next attempt)",
                                   pod, args.pod_uid.empty() ? "" : " with UID " + args.pod_uid));
  }
  const PodRequest& request = api_request ? *api_request : it->second.request;
  if (const std::optional<Never> never = NeverOn(request, id))
    return fail(ReserveFailure::kNoRoom,
                FailedPrecondition("bind {}: node {} can never take the pod: {}", pod, args.node, never->detail));
  const Workload w = WorkloadOn(cluster_, facts_[static_cast<std::size_t>(id)], options_.profiles.get(), request);
  const NodeState& n = cluster_.node(id);
  if (const Verdict v = policy_.Check(w, n); !v.fits()) {
    return fail(ReserveFailure::kNoRoom,
                FailedPrecondition("bind {}: node {} can no longer take the pod: {}", pod, args.node, v.reason));
  }
  const GpuSet allowed = ApartGpus(request, id);
  if (!FitsOn(w, n, allowed)) {
    return fail(ReserveFailure::kNoRoom,
                FailedPrecondition("bind {}: node {} can no longer take the pod: {} ({})", pod, args.node,
                                   ApartReason(options_.replicas_apart), request.replica_of));
  }
  std::vector<GpuTenants>& tenants = tenants_[static_cast<std::size_t>(id)];
  const GpuSet gpus = PickFor(policy_, rng_, tenants, n, w, request, allowed);
  cluster_.Place(id, w, gpus);
  CountTenant(tenants, w, gpus, request, +1);
  declared_milli_ += DeclaredMilli(request.declared);
  placed_.emplace(key, Placed{.node = id, .pod = pod, .request = request, .workload = w, .gpus = gpus});
  return Reservation{.pod = pod, .node = args.node, .gpus = gpus};
}

Result<Reservation> Extender::Adopt(const KubePod& pod) {
  const Result<PodRequest> r = RequestOf(pod, options_.profiles.get());
  if (!r) return r.error();
  const PodRequest& request = *r;
  const std::string key = BindKey(pod.uid, pod.namespace_name, pod.name);
  const std::lock_guard lock(mu_);
  const int id = NodeId(pod.node_name);
  if (id < 0)
    return NotFound("pod {}: bound to {}, which is not in gpufit's snapshot of the cluster", pod.Key(), pod.node_name);
  if (placed_.contains(key)) return FailedPrecondition("pod {}: already bound by gpufit", pod.Key());
  const Workload w = WorkloadOn(cluster_, facts_[static_cast<std::size_t>(id)], options_.profiles.get(), request);
  const NodeState& n = cluster_.node(id);
  if (!FitsOn(w, n, kAllGpus))
    return FailedPrecondition("pod {}: bound to {}, where the snapshot leaves no room for it", pod.Key(),
                              pod.node_name);
  std::vector<GpuTenants>& tenants = tenants_[static_cast<std::size_t>(id)];
  const GpuSet gpus = PickFor(policy_, rng_, tenants, n, w, request, kAllGpus);
  cluster_.Place(id, w, gpus);
  CountTenant(tenants, w, gpus, request, +1);
  declared_milli_ += DeclaredMilli(request.declared);
  placed_.emplace(key, Placed{.node = id, .pod = pod.Key(), .request = request, .workload = w, .gpus = gpus});
  return Reservation{.pod = pod.Key(), .node = pod.node_name, .gpus = gpus};
}

void Extender::Release(const BindingArgs& args) {
  const std::lock_guard lock(mu_);
  const auto it = placed_.find(BindKey(args.pod_uid, args.pod_namespace, args.pod_name));
  if (it == placed_.end()) return;
  cluster_.Remove(it->second.node, it->second.workload, it->second.gpus);
  CountTenant(tenants_[static_cast<std::size_t>(it->second.node)], it->second.workload, it->second.gpus,
              it->second.request, -1);
  declared_milli_ -= DeclaredMilli(it->second.request.declared);
  placed_.erase(it);
}

void Extender::MarkUncertain(const BindingArgs& args) {
  const std::lock_guard lock(mu_);
  if (const auto it = placed_.find(BindKey(args.pod_uid, args.pod_namespace, args.pod_name)); it != placed_.end())
    it->second.certain = false;
}

Extender::Fragmentation Extender::GpuFragmentation() const {
  const std::lock_guard lock(mu_);
  Fragmentation f;
  for (const NodeState& n : cluster_.nodes()) f.milli += FragMilli(NodeFree::Of(n), *target_);
  const double free = static_cast<double>(cluster_.gpu_capacity().value - cluster_.gpu_allocated().value);
  f.ratio = free > 0 ? f.milli / free : 0.0;
  return f;
}

double Extender::GpuMemoryOvercommitRatio() const {
  const std::lock_guard lock(mu_);
  const double cap = static_cast<double>(cluster_.gpu_capacity().value);
  return cap > 0 ? static_cast<double>(declared_milli_) / cap : 0.0;
}

double Extender::GpuAllocationRatio() const {
  const std::lock_guard lock(mu_);
  const double cap = static_cast<double>(cluster_.gpu_capacity().value);
  return cap > 0 ? static_cast<double>(cluster_.gpu_allocated().value) / cap : 0.0;
}

}  // namespace gpufit::serve
