// How the extender chooses GPUs and counts their tenants (extender.h's header comment states
// the rules): the pod's workload on a node, the GPUs a replica may take, the duty curves of a
// GPU's tenants, and the GPUs a bind takes. Private to serve/extender.cpp; `Tenants` is its
// Extender::GpuTenants (duty_pct, unknown, replicas_of).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "gpufit/core/rng.h"
#include "gpufit/placement/cluster_state.h"
#include "gpufit/placement/policy.h"
#include "gpufit/serve/extender.h"

namespace gpufit::serve::internal {

inline constexpr GpuSet kAllGpus = ~GpuSet{0};

// The lowest-numbered GPUs of `allowed` that can take `w` on `node` (a snapshot pod's, see
// extender.h); fewer than w.gpu_count when there are not enough.
inline GpuSet LowestGpus(const Workload& w, const NodeState& node, GpuSet allowed = kAllGpus) {
  GpuSet gpus = 0;
  int left = w.gpu_count;
  for (int g = 0; g < node.gpu_count && left > 0; ++g) {
    const GpuMilli free = node.gpu_free[static_cast<std::size_t>(g)];
    if ((allowed >> g & 1) != 0 && (w.SharesGpu() ? free >= w.gpu_per_gpu : free.value == 1000)) {
      gpus |= GpuSet{1} << g;
      --left;
    }
  }
  return gpus;
}

// The share of a GPU of node `f` that `milli` of its full memory takes of the memory left
// beside what is used outside pods, rounded up: above 1000 when it does not fit there.
inline std::int64_t ShareBesideOutside(std::int64_t milli, const NodeFacts& f) {
  if (f.outside_mib <= 0 || f.gpu_memory_mib <= 0) return milli;
  const double full = f.gpu_memory_mib + f.outside_mib;
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(milli) * full / f.gpu_memory_mib - 1e-9));
}

// The pod's workload on node `f` (extender.h): on a node that shares each GPU among replicas,
// a whole-GPU request is one replica's share (or the pod's annotated share, if larger); then a
// profile's share of the memory left beside what is used outside pods, or a declared share
// taken of that memory. A share that comes to a whole GPU is one.
inline Workload WorkloadOn(const ClusterState& cluster, const NodeFacts& f, const ProfileBook* book,
                           const PodRequest& r) {
  PodSpec spec = r.declared;
  if (f.replicas > 1 && spec.gpu_count >= 1 && !spec.SharesGpu()) {
    const std::int64_t replicas = std::max<std::int64_t>(1, std::int64_t{1000} / f.replicas) * spec.gpu_count;
    spec.gpu_per_gpu = GpuMilli{std::min<std::int64_t>(1000, std::max(r.annotated_milli, replicas))};
    spec.gpu_count = 1;
  }
  if (r.profile != nullptr && book != nullptr && f.gpu_memory_mib > 0) {
    spec.gpu_per_gpu = GpuMilli{book->MilliOn(r.profile->memory_peak_mib, f.gpu_memory_mib)};
  } else if (spec.SharesGpu()) {
    spec.gpu_per_gpu = GpuMilli{std::min<std::int64_t>(1000, ShareBesideOutside(spec.gpu_per_gpu.value, f))};
  }
  return cluster.WorkloadFor(spec);
}

// The GPUs of a node with these tenants that a replica of `key` may take (extender.h).
template <class Tenants>
GpuSet ApartOf(const std::vector<Tenants>& gpus, const std::string& key, ExtenderOptions::ReplicasApart mode) {
  if (key.empty() || mode == ExtenderOptions::ReplicasApart::kOff) return kAllGpus;
  GpuSet taken = 0;
  for (std::size_t g = 0; g < gpus.size(); ++g)
    if (std::find(gpus[g].replicas_of.begin(), gpus[g].replicas_of.end(), key) != gpus[g].replicas_of.end())
      taken |= GpuSet{1} << g;
  if (mode == ExtenderOptions::ReplicasApart::kNode) return taken != 0 ? 0 : kAllGpus;
  return ~taken;
}

// What of `w` node `n` still has room for, and where: its CPU and memory whole (they may go past
// the node's); a share of one GPU on the GPU with the most room, at most what is left there;
// whole GPUs on as many idle GPUs as there are, at most w's.
inline std::pair<Workload, GpuSet> WhatIsLeft(const Workload& w, const NodeState& n) {
  Workload held = w;
  GpuSet gpus = 0;
  if (w.SharesGpu()) {
    int most = -1;
    for (int g = 0; g < n.gpu_count; ++g)
      if (n.gpu_free[static_cast<std::size_t>(g)].value > 0 &&
          (most < 0 || n.gpu_free[static_cast<std::size_t>(g)] > n.gpu_free[static_cast<std::size_t>(most)]))
        most = g;
    if (most >= 0) {
      held.gpu_per_gpu = std::min(w.gpu_per_gpu, n.gpu_free[static_cast<std::size_t>(most)]);
      gpus = GpuSet{1} << most;
    }
  } else {
    gpus = LowestGpus(w, n);
  }
  held.gpu_count = std::popcount(gpus);
  if (held.gpu_count == 0) held.gpu_per_gpu = GpuMilli{};
  return {held, gpus};
}

// Whether `w` fits node `n` on the GPUs of `allowed` (the policy's filters passed).
inline bool FitsOn(const Workload& w, const NodeState& n, GpuSet allowed) {
  return w.gpu_count == 0 || allowed == kAllGpus || std::popcount(LowestGpus(w, n, allowed)) == w.gpu_count;
}

template <class Tenants>
bool DutyFits(const Tenants& t, const ServeProfile& p) {
  if (t.unknown > 0) return false;
  for (std::size_t h = 0; h < 24; ++h)
    if (t.duty_pct[h] + p.duty_pct[h] > 100.0 + 1e-9) return false;
  return true;
}

// Adds (sign +1) or takes away (-1) a placed pod on the GPUs it holds: its workload on each,
// and its duty on those it shares.
template <class Tenants>
void CountTenant(std::vector<Tenants>& gpus, const Workload& w, GpuSet held, const PodRequest& r, int sign) {
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    if ((held >> g & 1) == 0) continue;
    if (!r.replica_of.empty()) {
      std::vector<std::string>& of = gpus[g].replicas_of;
      if (sign > 0)
        of.push_back(r.replica_of);
      else if (const auto it = std::find(of.begin(), of.end(), r.replica_of); it != of.end())
        of.erase(it);
    }
    if (!w.SharesGpu()) continue;
    if (r.profile == nullptr) {
      gpus[g].unknown += sign;
      continue;
    }
    for (std::size_t h = 0; h < 24; ++h) gpus[g].duty_pct[h] += sign * r.profile->duty_pct[h];
  }
}

// A shared GPU of `allowed` with room for `w` whose tenants' curves leave room for the pod's,
// -1 if none (the pod must be placed by a profile).
template <class Tenants>
int SuitingGpu(const std::vector<Tenants>& gpus, const NodeState& n, const Workload& w, const PodRequest& r,
               GpuSet prefer, GpuSet allowed) {
  auto suits = [&](int g) {
    return (allowed >> g & 1) != 0 && n.gpu_free[static_cast<std::size_t>(g)] >= w.gpu_per_gpu &&
           DutyFits(gpus[static_cast<std::size_t>(g)], *r.profile);
  };
  if (prefer != 0 && std::popcount(prefer) == 1 && suits(std::countr_zero(prefer))) return std::countr_zero(prefer);
  for (int g = 0; g < n.gpu_count; ++g)
    if (suits(g)) return g;
  return -1;
}

// The GPUs a bind takes (`w` fits on `allowed`): the policy's picker's when they are all
// allowed; for a pod placed by its profile the GPU the header comment names; else the
// lowest-numbered allowed GPUs with room.
template <class Tenants>
GpuSet PickFor(Policy& policy, Rng& rng, const std::vector<Tenants>& gpus, const NodeState& n, const Workload& w,
               const PodRequest& r, GpuSet allowed) {
  const GpuSet picked = policy.PickGpus(w, n, rng);
  if (r.profile != nullptr && w.SharesGpu()) {
    if (const int g = SuitingGpu(gpus, n, w, r, picked, allowed); g >= 0) return GpuSet{1} << g;
  }
  return (picked & ~allowed) == 0 ? picked : LowestGpus(w, n, allowed);
}

}  // namespace gpufit::serve::internal
