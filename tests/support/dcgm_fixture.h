// Test fixtures for the Prometheus source: a slice of the real GenTD26 trace written as the
// series a Kubernetes cluster's Prometheus holds (dcgm-exporter, kube-state-metrics,
// cAdvisor) in OpenMetrics text for `promtool tsdb create-blocks-from openmetrics`, and the
// same GPU samples as a long CSV (docs/telemetry-formats.md) for the file reader.
//
// What the slice becomes (GenTD26 pods are anonymous container IPs):
//  * the first `pods` pods of the trace alive at its start, over `hours` hours, re-timed
//    onto a 60 s scrape grid from 2026-01-01T00:00:00Z: grid sample k of the trace -> T0 + 60 k;
//  * pod i is genai/sd-<i> on GPU UUID GPU-0000...<i>, host gpu-node-<i/4>; even hosts carry
//    dcgm-exporter's `Hostname` label, odd ones the newer `hostname`; pod 0's series switch
//    from `Hostname` to `hostname` half-way (an exporter upgrade: two series, one GPU);
//  * pods with i % 5 == 4 are MIG instances (GPU_I_PROFILE 3g.40gb, GPU_I_ID 1) that report
//    DCGM_FI_PROF_GR_ENGINE_ACTIVE (duty / 100) instead of DCGM_FI_DEV_GPU_UTIL, in the CSV
//    too (its device and GPU_I_ID columns carry the UUID and GPU_I_ID labels);
//  * pods with i % 3 == 0 also report DCGM_FI_PROF_SM_ACTIVE = 0.8 duty / 100;
//  * kube_pod_created per pod, sampled over its life; pods with i % 6 == 1 end two thirds
//    into the slice and keep DCGM samples, still attributed to them, for 5 minutes after (a
//    stale attribution the lifetime clipping must drop; the CSV does not hold them);
//  * pods with i % 6 == 3 are Job pods that complete at the same point but whose objects
//    stay (kube_pod_created sampled to the end of the slice): kube_pod_completion_time =
//    their last sample's time and kube_pod_status_phase{phase="Succeeded"} 1 from the next
//    sample on (0 before, with phase="Running" the other way round); dcgm-exporter keeps
//    reporting their idle GPU (0 MiB, 0 %) under their name for 30 minutes (its
//    pod-resources cache) or to the end of the slice; the CSV does not hold those samples;
//  * two GPUs no pod holds (pod=""): the first idle, the second with 6,000 MiB used by a
//    process outside any pod (6,144 MiB in the middle sample of the slice);
//  * cAdvisor series per pod (container "sd"): CPU usage growing by 60 (0.5 + duty / 50)
//    CPU-seconds a minute (so 0.5 + duty / 50 cores), 600 CFS periods a minute of which
//    1.5 x duty throttled (ratio duty / 400, under the starvation threshold: no pod is
//    CPU-starved, so the plan equals the CSV's), working set (4096 + MiB / 8) MiB; and
//    kube-state-metrics requests cpu 4 cores, memory 32 GiB, limit memory 48 GiB.
// The CSV holds exactly the samples the clipped Prometheus answer must give.
#pragma once

#include <string>

#include "gpufit/core/result.h"

namespace gpufit::testing {

inline constexpr double kFixtureT0 = 1767225600;  // 2026-01-01T00:00:00Z
inline constexpr double kFixtureStep = 60;

struct DcgmFixture {
  std::string openmetrics;
  std::string long_csv;
  double since_s = kFixtureT0;
  double until_s = kFixtureT0;          // the last grid time of the slice
  int pods = 0;                         // pods written (attributed)
  double outside_pods_peak_mib = 6144;  // the second unattributed GPU's peak
};

// Reads the GenTD26 directory `gentd26_dir` and writes the fixture.
Result<DcgmFixture> MakeDcgmFixture(const std::string& gentd26_dir, int pods, double hours);

}  // namespace gpufit::testing
