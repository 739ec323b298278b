// A finite model cache on every node of an inference service, least recently used out,
// replayed request by request: how often a request finds its model already on the node
// (a hit) and how many model loads (misses) the nodes make.
//
// Rules (stated simplifications):
//  * Nodes: the replicas of a schedule (`ReplicaSchedule`, one replica = one node serving
//    one request at a time). At a request's arrival the live nodes are 0 .. n-1, n = the
//    schedule's count then (at least 1: a request that finds none is served by one started
//    for it). When the count drops, the highest-numbered nodes leave and their caches are
//    lost; a node that (re)starts begins empty.
//  * Routing (least loaded, model aware): a free node that holds the request's model
//    (lowest number), else the lowest-numbered free node, else the node that frees first
//    (the holder of the model on a tie). A node is busy for the request's service time
//    after the later of its arrival and the node's previous request's end.
//  * Cache: `capacity_models` models per node, least recently used evicted. A miss loads
//    the model (counted; the load's time is not added to the node's busy time: the
//    trace's execution times are taken as logged).
//  * Requests with an unknown model (model < 0) are routed but neither hits nor misses.
// Cost: O(N * (n + capacity)) for N requests.
#pragma once

#include <cstddef>
#include <vector>

#include "gpufit/sim/request_replay.h"

namespace gpufit {

struct CacheRequest {
  double arrival_s = 0;  // by arrival, same clock as the schedule's windows
  double service_s = 0;
  int model = -1;  // index of the model it needs; < 0: unknown
};

struct CacheOutcome {
  std::size_t requests = 0;  // requests with a known model
  std::size_t hits = 0, misses = 0;
  double HitRate() const { return requests ? static_cast<double>(hits) / static_cast<double>(requests) : 0; }
  CacheOutcome& operator+=(const CacheOutcome& o) {
    requests += o.requests;
    hits += o.hits;
    misses += o.misses;
    return *this;
  }
};

// Precondition (asserted): capacity_models >= 1, requests sorted by arrival, nodes.window_s > 0.
CacheOutcome SimulateModelCache(const std::vector<CacheRequest>& requests, const ReplicaSchedule& nodes,
                                int capacity_models);

// The knee of a hit-rate curve: the smallest capacity (1-based: by_capacity[c - 1] is
// capacity c) whose hit rate reaches `share` of the last (largest) capacity's. Beyond it,
// each model slot buys less than the remaining (1 - share) of what caching can. 1 when the
// curve is empty or never hits.
int KneeCapacity(const std::vector<CacheOutcome>& by_capacity, double share);

}  // namespace gpufit
