// Per-workload telemetry profiles: what one more replica of a workload will use, written to
// plan.json ("workload_profiles") for `gpufit serve --profiles` (serve/profiles.h) to place
// new pods by what they do rather than by what they declare (issue 22).
//
// A workload is a key of plan/workload_keys.h (deployment/ml/web, pod/ml/x, ...); its series
// are its telemetry pods, and its profile is taken from its one-slot envelope (SlotEnvelope
// with k = 1: per sample, the largest value among its replicas alive then), because serve
// places one replica at a time and cannot know which replica it is:
//  * memory_peak_mib: the envelope's peak DCGM_FI_DEV_FB_USED over the window, MiB. Serve
//    adds the plan's learned margin (optimize/memory_envelope.h) once per GPU, as the packer
//    keeps it free once per GPU.
//  * duty_pct: the nearest-rank q quantile of the envelope's duty cycle (percent) over its
//    running samples, q = 1 - PlanOptions::max_collision_share: the plan lets a GPU's summed
//    duty pass 100% in that share of samples, so q is the level one tenant stays under then.
//  * duty_pct_by_hour[h]: the same quantile over the running samples in hour h of the day
//    (h = floor((t mod 86400) / 3600), t in seconds on the telemetry's clock: UTC for
//    Prometheus, whose timestamps are Unix seconds), over every day of the window; null for an
//    hour with fewer running samples than half the median hour's (one stray sample cannot
//    vouch for an hour; the rule of optimize/time_multiplex.h).
//
// Walk-forward check (every recommendation is judged on data it was not fitted to): the same
// profile fitted on the first half of the window [0, m), m = samples / 2, and replayed on
// the second half, counting the envelope's running samples there whose memory passed the
// fitted peak plus `margin_mib`, and those whose duty passed the fitted quantile of their
// hour (the overall one where the fitted hour was not observed).
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/model/telemetry.h"

namespace gpufit {

struct WorkloadProfile {
  std::string workload;        // workload key
  std::size_t replicas = 0;    // most series alive at one sample (WorkloadReplicas::replicas)
  std::size_t samples = 0;     // running samples of the envelope (some replica alive)
  double memory_peak_mib = 0;  // MiB
  double duty_pct = 0;         // percent, 0..100
  std::array<std::optional<double>, 24> duty_pct_by_hour{};
  // Walk-forward (header comment): later-half running samples, those over the earlier half's
  // peak + margin, and those over the earlier half's quantile of their hour. Zero later-half
  // samples when the workload does not run in both halves.
  std::size_t later_samples = 0, later_memory_over = 0, later_duty_over = 0;
};

struct WorkloadProfiles {
  double duty_quantile = 0.99;             // q above
  double margin_mib = 0;                   // the plan's learned margin the walk-forward memory check adds
  std::vector<WorkloadProfile> workloads;  // sorted by workload key
};

// The profiles of the workloads of `telemetry`, keys[i] the workload key of telemetry.pods[i]
// (see above). duty_quantile in (0, 1]; margin_mib >= 0.
WorkloadProfiles ProfileWorkloads(const Telemetry& telemetry, const std::vector<std::string>& keys,
                                  double duty_quantile, double margin_mib);

}  // namespace gpufit
