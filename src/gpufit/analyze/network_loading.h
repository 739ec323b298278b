// Network-bound model and data loading: per pod, how fast it receives over the network while
// it loads a model onto its GPU (and while its GPU waits on data), against its node's link,
// and what a node-local cache, a peer-to-peer distribution or a faster link would save.
//
// Inputs: the GPU telemetry (DCGM_FI_DEV_FB_USED, duty cycle), each pod's receive rate on
// the same grid (cAdvisor container_network_receive_bytes_total, ingest/prometheus/network.h)
// and its node's link speed (node-exporter node_network_speed_bytes, model/node_prices.h).
//
// A model load (per pod series, inside its life): a run of steps in which GPU memory rises
// by >= min_step_mib each step, starting from a sample at or below near_zero_mib (the CUDA
// context alone holds a few hundred MiB), that raises memory by >= min_load_mib in all.
// Its duration is its steps x the step (a load shorter than one step counts as one step:
// judging a load needs a step well below its duration, use --step), its size the rise.
// The receive rate of step k is the counter's increase from sample k-1 to k over the step.
//
// Network-bound load: in at least half of its steps (most of the load) the pod receives at
// >= 80% of its node's link. Why 80%: the step mean includes the load's partial first and
// last steps and TCP's ramp-up; Ethernet and TCP/IP headers take about 2.5-5% of a 1,500-byte
// frame; so a link-limited transfer reads 80-98% of line rate, while a transfer limited by
// its source (storage, a registry) sits well below it (a 25 Gbit/s node loading from an
// object store at 1-2 GB/s reads 30-60%).
//
// What each remedy saves, per network-bound load (model bytes B = rise in MiB x 2^20):
//  * node-local model cache (a hostPath or local-SSD volume the model is copied to once,
//    e.g. by an init container or a DaemonSet): a load of a model the node has read before
//    takes B / cache_gb_per_s (1 GB = 1e9 bytes); saves duration - that;
//  * faster links: the fastest link among the cluster's nodes, when faster than this node's:
//    B / that link at line rate; saves duration - that (an upper bound: the source may then
//    limit);
//  * peer-to-peer distribution of images and models (nodes fetch layers from each other
//    instead of all from the origin: Dragonfly, CNCF, github.com/dragonflyoss/Dragonfly2;
//    Spegel, a cluster-local OCI registry mirror, github.com/spegel-org/spegel; Kraken, a
//    P2P Docker registry, github.com/uber/kraken): saves 0 s on a load bound by
//    the node's own link, as every byte still crosses that link; it helps when the origin's
//    egress is shared by many nodes pulling at once (not measured here).
// Savings are never negative.
//
// Data loading: outside loads, a running sample whose receive rate is >= 80% of the link
// while the GPU's duty cycle is < 50% (the CPU-starvation rule's activity threshold,
// optimize/cpu_starvation.h) is network-bound; a pod with >= 10% such samples is flagged.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/model/node_prices.h"
#include "gpufit/model/telemetry.h"

namespace gpufit {

struct NetworkOptions {
  double near_zero_mib = 1024;
  double min_step_mib = 256;  // as model loading (analyze/model_loading.h)
  double min_load_mib = 1024;
  double link_share = 0.8;        // "at the link": rate >= this x link
  double bound_step_share = 0.5;  // a load is bound when >= this share of its steps is at the link
  double cache_gb_per_s = 2.0;    // ModelLoadingOptions::cache_gb_per_s
  double data_duty_pct = 50;
  double data_min_share = 0.10;
};

struct NetworkLoad {
  std::string pod{};  // the GPU series
  std::string node{};
  double start_s = 0;             // time of the sample before the first rising step
  std::size_t steps = 0;          // rising steps
  double seconds = 0;             // steps x step
  double model_mib = 0;           // the rise
  double received_bytes = 0;      // over its steps
  double mean_bytes_per_s = 0;    // received / seconds
  double link_bytes_per_s = 0;    // its node's link
  std::size_t steps_at_link = 0;  // steps at >= link_share x link
  bool network_bound = false;
  // Remedies, for network-bound loads (else 0): cold-start seconds each would take and save.
  double cache_s = 0, cache_saved_s = 0;
  double faster_link_bytes_per_s = 0, faster_link_s = 0, faster_link_saved_s = 0;
  double p2p_saved_s = 0;  // 0 by the rule above
};

struct PodNetworkFinding {
  std::string pod{}, node{};
  double link_bytes_per_s = 0;
  std::size_t loads = 0, network_bound_loads = 0;
  std::size_t data_samples = 0, data_bound_samples = 0;  // running samples outside loads with a rate
  bool data_bound = false;
  double cache_saved_s = 0, faster_link_saved_s = 0;  // over its bound loads
};

struct NetworkReport {
  std::vector<NetworkLoad> loads{};       // in pod, time order
  std::vector<PodNetworkFinding> pods{};  // pods with a rate and a link, by pod
  std::vector<std::string> not_judged{};  // "pod: reason" (no receive series, node or link)
  double fastest_link_bytes_per_s = 0;    // over the links given
  std::string fastest_link_node{};
  NetworkOptions options;
};

// Links by node (NodeLink::node). Pods of the telemetry without a PodNetwork entry, a node
// or that node's link are listed in not_judged. Preconditions: options' values > 0.
NetworkReport AnalyzeNetworkLoading(const Telemetry& telemetry, const std::vector<PodNetwork>& network,
                                    const std::vector<NodeLink>& links, const NetworkOptions& options = {});

}  // namespace gpufit
