// Container right-sizing, sidecars included: CPU and memory requests and limits from the
// container's own usage (cAdvisor), priced at its node's per-core and per-GiB rates
// (optimize/node_rates.h), so that waste on GPU nodes ranks first.
//
// Defaults follow Robusta KRR's "simple" strategy (github.com/robusta-dev/krr,
// robusta_krr/strategies/simple.py: cpu_percentile 95, memory_buffer_percentage 15,
// points_required 100, CPU limit unset, memory limit = memory request):
//  * CPU request = the cpu_percentile (95) of usage over the samples with data, in whole
//    millicores rounded up; KRR: p95 keeps 95% of samples within the request while the
//    rest burst into the node's idle cores;
//  * no CPU limit: a limit throttles the container even when the node has idle cores (the
//    CFS quota), which is the GPU starvation of optimize/cpu_starvation.h; KRR recommends
//    none, and so does this;
//  * memory request = memory limit = peak working set x (1 + memory_buffer) (buffer 15%, as
//    KRR's --memory_buffer_percentage and VPA's 15% safety margin): memory cannot be
//    throttled, only OOM-killed, so the limit equals the request (Guaranteed memory);
//  * at least min_samples samples of each (KRR's points_required), else no recommendation;
//  * floors: 10 m CPU and 100 MiB memory (gpufit's choice: no request rounds to nothing).
// Memory is shrunk only on evidence, by the rule of GPU right-sizing (optimize/rightsize.h
// HoldShrink): a memory request or limit is never lowered when the window is shorter than
// min_window_hours (24 h by default, PlanOptions::min_window_hours: one daily cycle, as load
// and memory follow the hour of day), or when a memory sample is missing within 10 minutes
// of the (first) peak inside the container's life (its first to last sample): the gap may
// hide a higher peak. Such a container keeps max(recommended, now) for its request and its
// limit, and no limit when it has none now (a new limit lowers it from unbounded); the
// evidence says why. Memory is what OOM-kills: a request too low evicts the pod, a limit too
// low kills it. CPU is right-sized on any window with min_samples: it is compressible (a
// request too low only slows the container, throttled within the node's idle cores, and
// there is no CPU limit), so a short window costs speed at worst, never the container.
// Containers whose usage is capped (the p95 of their CFS throttling ratio >= throttled_ratio)
// are never lowered below their current CPU request or limit: their usage shows the cap,
// not the need. In a CPU-starved pod (optimize/cpu_starvation.h) the most-throttled
// container gets the pod's recommended CPU less its other containers' requests.
// Cost: requests x node rates x 730 h; the saving is now minus recommended (negative when
// the container asks for too little). A container without a request costs 0 now.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/analyze/container_kind.h"
#include "gpufit/core/units.h"
#include "gpufit/model/telemetry.h"
#include "gpufit/optimize/cpu_starvation.h"
#include "gpufit/optimize/node_rates.h"

namespace gpufit {

struct ContainerRightsizeOptions {
  double cpu_percentile = 95;   // in (0, 100]
  double memory_buffer = 0.15;  // in [0, 10]
  MilliCpu min_cpu{10};
  MiB min_memory{100};
  double throttled_ratio = 0.25;  // as StarvationOptions::throttled_ratio
  std::size_t min_samples = 100;
  double min_window_hours = 24;  // as PlanOptions::min_window_hours; Telemetry::window_hours()
};

struct ContainerRecommendation {
  std::string pod, container, image;
  ContainerKind kind = ContainerKind::kApplication;
  NodeRates rates;
  std::size_t cpu_samples = 0, memory_samples = 0;
  double cpu_cores_percentile = 0;  // at options.cpu_percentile
  double cpu_throttled_p95 = 0;     // 0-1
  double memory_peak_mib = 0;       // working set
  std::optional<MilliCpu> cpu_request_now, cpu_limit_now;
  std::optional<MiB> memory_request_now, memory_limit_now;
  MilliCpu cpu_request{0};
  std::optional<MilliCpu> cpu_limit;  // nullopt = no limit
  MiB memory_request{0};
  std::optional<MiB> memory_limit;  // = memory_request, or as now when memory is held (nullopt: no limit)
  bool memory_held = false;         // memory kept from shrinking (short window or a gap at the peak)
  double usd_per_month_now = 0, usd_per_month_recommended = 0;
  std::string evidence;
  double usd_per_month_saving() const { return usd_per_month_now - usd_per_month_recommended; }
};

// One recommendation per container with CPU and memory samples, ordered by saving
// (largest first), then pod and container. `rates` gives a pod's node rates ("ns/pod");
// `holds_gpu(pod, container)`, when given, says which containers hold a GPU (applications,
// whatever their image).
std::vector<ContainerRecommendation> RightsizeContainers(
    const Telemetry& telemetry, const std::function<NodeRates(const std::string&)>& rates,
    const std::vector<CpuStarvation>& starved, const ContainerRightsizeOptions& options = {},
    const std::function<bool(const std::string&, const std::string&)>& holds_gpu = {});

}  // namespace gpufit
