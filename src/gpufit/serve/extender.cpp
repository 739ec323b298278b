#include "gpufit/serve/extender.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <utility>

#include "gpufit/placement/fragmentation.h"
#include "gpufit/placement/registry.h"

namespace gpufit::serve {
namespace {

std::string Label(const std::map<std::string, std::string>& labels, const std::string& key) {
  const auto it = labels.find(key);
  return it == labels.end() ? std::string() : it->second;
}

int Count(const std::map<std::string, int>& devices, const std::string& key) {
  const auto it = devices.find(key);
  return it == devices.end() ? 0 : it->second;
}

Result<std::int64_t> IntAnnotation(const KubePod& pod, const std::string& key, std::int64_t absent) {
  const auto it = pod.annotations.find(key);
  if (it == pod.annotations.end()) return absent;
  std::int64_t v = 0;
  const std::string& s = it->second;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) {
    return InvalidArgument("pod {}: .metadata.annotations[\"{}\"]: expected an integer, got '{}'", pod.Key(), key, s);
  }
  return v;
}

// The lowest-numbered GPUs that can take `w` on `node` as a snapshot pod (see extender.h).
GpuSet SnapshotGpus(const Workload& w, const NodeState& node) {
  GpuSet gpus = 0;
  int left = w.gpu_count;
  for (int g = 0; g < node.gpu_count && left > 0; ++g) {
    const GpuMilli free = node.gpu_free[static_cast<std::size_t>(g)];
    if (w.SharesGpu() ? free >= w.gpu_per_gpu : free.value == 1000) {
      gpus |= GpuSet{1} << g;
      --left;
    }
  }
  return gpus;
}

}  // namespace

NodeSpec NodeSpecOf(const KubeNode& node) {
  // Allocatable nvidia.com/gpu when the node reports it (0 when every device is unhealthy),
  // else the GFD count label, else open-gpu-share's count.
  int gpus = node.devices_allocatable.contains("nvidia.com/gpu") ? Count(node.devices_allocatable, "nvidia.com/gpu")
             : node.gpu_count > 0                                ? node.gpu_count
                                  : Count(node.devices_allocatable, "alibabacloud.com/gpu-count");
  std::string model = node.gpu_product;
  if (model.empty()) model = Label(node.labels, "alibabacloud.com/gpu-card-model");
  return NodeSpec{.name = node.name,
                  .cpu = node.cpu_allocatable,
                  .memory = node.memory_allocatable,
                  .gpu_count = std::min(gpus, kMaxGpusPerNode),
                  .gpu_model = gpus > 0 ? model : std::string()};
}

Result<PodSpec> DeclaredRequest(const KubePod& pod) {
  PodSpec spec;
  spec.name = pod.Key();
  spec.cpu = pod.CpuRequest();
  spec.memory = pod.MemoryRequest();
  if (const int whole = pod.Devices("nvidia.com/gpu"); whole > 0) {
    spec.gpu_count = whole;
    spec.gpu_per_gpu = GpuMilli{1000};
  } else {
    const Result<std::int64_t> milli = IntAnnotation(pod, "alibabacloud.com/gpu-milli", 0);
    if (!milli) return milli.error();
    const Result<std::int64_t> count = IntAnnotation(pod, "alibabacloud.com/gpu-count", *milli > 0 ? 1 : 0);
    if (!count) return count.error();
    if (*count < 0 || *count > kMaxGpusPerNode) {
      return InvalidArgument("pod {}: alibabacloud.com/gpu-count: expected 0..{}, got {}", pod.Key(), kMaxGpusPerNode,
                             *count);
    }
    if (*count > 0) {
      if (*milli < 1 || *milli > 1000) {
        return InvalidArgument("pod {}: alibabacloud.com/gpu-milli: expected 1..1000 (milli-GPU per GPU), got {}",
                               pod.Key(), *milli);
      }
      if (*milli < 1000 && *count > 1) {
        return InvalidArgument(
            "pod {}: alibabacloud.com/gpu-milli {} below a whole GPU on {} GPUs: a pod shares "
            "one GPU at most",
            pod.Key(), *milli, *count);
      }
      spec.gpu_count = static_cast<int>(*count);
      spec.gpu_per_gpu = GpuMilli{*milli};
    }
  }
  for (const char* key : {"nvidia.com/gpu.product", "alibabacloud.com/gpu-card-model"}) {
    if (const std::string m = Label(pod.node_selector, key); !m.empty()) spec.gpu_models.push_back(m);
  }
  return spec;
}

namespace {

std::string BindKey(const std::string& uid, const std::string& ns, const std::string& name) {
  return uid.empty() ? ns + "/" + name : uid;
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
  std::vector<const KubePod*> bound;
  for (const KubePod& p : pods) {
    const bool ended = p.phase == "Succeeded" || p.phase == "Failed";
    if (ended || !p.node_name.empty()) {
      shown.insert(p.Key());
      if (!p.uid.empty()) shown.insert(p.uid);
    }
    uid_of.emplace(p.Key(), p.uid);
    if (ended) continue;
    Result<PodSpec> r = DeclaredRequest(p);
    if (!r) return r.error();
    requests.push_back(std::move(*r));
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
             .uid_of = std::move(uid_of)};
  for (std::size_t k = 0; k < order.size(); ++k) s.order_pos[static_cast<std::size_t>(order[k])] = static_cast<int>(k);
  for (std::size_t i = 0; i < s.cluster.nodes().size(); ++i) {
    s.node_ids.emplace(s.cluster.node_name(static_cast<int>(i)), static_cast<int>(i));
  }
  s.stats.nodes = static_cast<int>(nodes.size());
  for (std::size_t i = 0; i < bound.size(); ++i) {
    const KubePod& p = *bound[i];
    if (p.node_name.empty()) continue;  // pending: kube-scheduler will ask about it
    const auto found = s.node_ids.find(p.node_name);
    const int id = found == s.node_ids.end() ? -1 : found->second;
    const Workload w = s.cluster.WorkloadFor(requests[i]);
    if (id >= 0 && s.policy.Check(w, s.cluster.node(id)).fits()) {
      s.cluster.Place(id, w, SnapshotGpus(w, s.cluster.node(id)));
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
  for (auto it = placed_.begin(); it != placed_.end();) {
    Placed& p = it->second;
    if (s->shown.contains(it->first)) {  // the snapshot has it, bound or ended: it is counted there
      ++s->stats.reservations_in_snapshot;
      it = placed_.erase(it);
      continue;
    }
    const auto node = s->node_ids.find(cluster_.node_name(p.node));
    const Workload w = s->cluster.WorkloadFor(p.request);
    const auto same_name = s->uid_of.find(p.pod);
    std::string drop;
    if (same_name != s->uid_of.end() && it->first != p.pod && same_name->second != it->first)
      drop = fmt::format("the snapshot has a pod of that name with another UID ({})", same_name->second);
    else if (++p.unseen >= 2)
      drop = "two snapshots taken after its bind do not show it bound (deleted, or its Binding never took)";
    else if (node == s->node_ids.end())
      drop = "the node is not in the new snapshot";
    else if (!s->policy.Check(w, s->cluster.node(node->second)).fits())
      drop = "the node has no room for it now";
    if (!drop.empty()) {
      ++s->stats.reservations_dropped;
      if (s->stats.warnings.size() < 20)
        s->stats.warnings.push_back(
            fmt::format("reservation of {} on node {} dropped: {}", p.pod, cluster_.node_name(p.node), drop));
      it = placed_.erase(it);
      continue;
    }
    const NodeState& n = s->cluster.node(node->second);
    // The same GPUs when the node still has them all idle enough; else the picker's.
    bool same_gpus_free = std::popcount(p.gpus) == w.gpu_count && (p.gpus >> n.gpu_count) == 0;
    for (int g = 0; g < n.gpu_count && same_gpus_free; ++g) {
      if ((p.gpus >> g & 1) == 0) continue;
      const GpuMilli free = n.gpu_free[static_cast<std::size_t>(g)];
      same_gpus_free = w.SharesGpu() ? free >= w.gpu_per_gpu : free.value == 1000;
    }
    const GpuSet gpus = same_gpus_free ? p.gpus : s->policy.PickGpus(w, n, s->rng);
    s->cluster.Place(node->second, w, gpus);
    p.node = node->second;
    p.workload = w;
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

Result<FilterResult> Extender::Filter(const ExtenderArgs& args) {
  const Result<PodSpec> request = DeclaredRequest(args.pod);
  if (!request) return request.error();
  FilterResult out;
  const std::lock_guard lock(mu_);
  Remember(args.pod, *request);
  const Workload w = cluster_.WorkloadFor(*request);
  std::vector<char> seen(cluster_.nodes().size(), 0);  // a node named twice is answered once
  for (std::size_t i = 0; i < args.node_names.size(); ++i) {
    const int id = NodeId(args.node_names[i]);
    if (id >= 0 && std::exchange(seen[static_cast<std::size_t>(id)], 1) != 0) continue;
    if (id < 0) {
      out.failed_and_unresolvable.push_back({.node = i, .reason = "not in gpufit's snapshot of the cluster"});
      continue;
    }
    const Verdict v = policy_.Check(w, cluster_.node(id));
    if (v.fits()) {
      out.kept.push_back(i);
    } else {
      (v.kind == Verdict::Kind::kNever ? out.failed_and_unresolvable : out.failed)
          .push_back({.node = i, .reason = v.reason});
    }
  }
  return out;
}

Result<std::vector<HostPriority>> Extender::Prioritize(const ExtenderArgs& args) {
  const Result<PodSpec> request = DeclaredRequest(args.pod);
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
  const std::vector<std::optional<std::int64_t>> values = policy_.Values(cluster_.WorkloadFor(*request), cluster_, ids);
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

void Extender::Remember(const KubePod& pod, const PodSpec& request) {
  const std::string key = BindKey(pod.uid, pod.namespace_name, pod.name);
  const auto [it, inserted] = filtered_.insert_or_assign(key, Filtered{.pod = pod.Key(), .request = request});
  if (!inserted) return;
  filtered_order_.push_back(key);
  if (filtered_order_.size() > kMaxRemembered) {
    filtered_.erase(filtered_order_.front());
    filtered_order_.pop_front();
  }
}

Result<Reservation> Extender::Reserve(const BindingArgs& args, ReserveFailure* why) {
  auto fail = [why](ReserveFailure f, Error e) -> Result<Reservation> {
    if (why != nullptr) *why = f;
    return e;
  };
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
    placed_.erase(it);
  }
  const auto it = filtered_.find(key);
  if (it == filtered_.end() || it->second.pod != pod) {
    return fail(ReserveFailure::kUnknownPod,
                FailedPrecondition("bind {}: no filter request named this pod{} since gpufit started, so its requests "
                                   "are unknown (kube-scheduler filters it again on its next attempt)",
                                   pod, args.pod_uid.empty() ? "" : " with UID " + args.pod_uid));
  }
  const Workload w = cluster_.WorkloadFor(it->second.request);
  if (const Verdict v = policy_.Check(w, cluster_.node(id)); !v.fits()) {
    return fail(ReserveFailure::kNoRoom,
                FailedPrecondition("bind {}: node {} can no longer take the pod: {}", pod, args.node, v.reason));
  }
  const GpuSet gpus = policy_.PickGpus(w, cluster_.node(id), rng_);
  cluster_.Place(id, w, gpus);
  placed_.emplace(key, Placed{.node = id, .pod = pod, .request = it->second.request, .workload = w, .gpus = gpus});
  return Reservation{.pod = pod, .node = args.node, .gpus = gpus};
}

void Extender::Release(const BindingArgs& args) {
  const std::lock_guard lock(mu_);
  const auto it = placed_.find(BindKey(args.pod_uid, args.pod_namespace, args.pod_name));
  if (it == placed_.end()) return;
  cluster_.Remove(it->second.node, it->second.workload, it->second.gpus);
  placed_.erase(it);
}

void Extender::MarkUncertain(const BindingArgs& args) {
  const std::lock_guard lock(mu_);
  if (const auto it = placed_.find(BindKey(args.pod_uid, args.pod_namespace, args.pod_name)); it != placed_.end())
    it->second.certain = false;
}

double Extender::GpuAllocationRatio() const {
  const std::lock_guard lock(mu_);
  const double cap = static_cast<double>(cluster_.gpu_capacity().value);
  return cap > 0 ? static_cast<double>(cluster_.gpu_allocated().value) / cap : 0.0;
}

}  // namespace gpufit::serve
