// Per-workload telemetry profiles: what one more replica of a workload will use, written to
// plan.json ("workload_profiles") for `gpufit serve --profiles` (serve/profiles.h) to place
// new pods by what they do rather than by what they declare (issue 22).
//
// A workload is a key of plan/workload_keys.h (deployment/ml/web, pod/ml/x, ...); its series
// are its telemetry pods, and its profile is taken from its one-replica envelope: per sample,
// the largest value among its replicas that have a real sample there (alive, and not a gap the
// grid filled: PodSeries::fb_gaps), because serve places one replica at a time and cannot know
// which replica it is. Samples where no replica was observed are not counted.
//  * memory_peak_mib: the envelope's peak DCGM_FI_DEV_FB_USED over the window, MiB. Serve
//    keeps the plan's learned margin (optimize/memory_envelope.h) free once per GPU, as the
//    packer does.
//  * duty_pct: the nearest-rank q quantile of the envelope's duty cycle (percent) over its
//    observed samples, q = 1 - PlanOptions::max_collision_share: the plan lets a GPU's summed
//    duty pass 100% in that share of samples, so q is the level one tenant stays under then.
//  * duty_pct_by_hour[h]: the same quantile over the observed samples in hour h of the day
//    (h = floor((t mod 86400) / 3600), t in seconds on the telemetry's clock: UTC for
//    Prometheus, whose timestamps are Unix seconds), over every day of the window. Null for an
//    hour whose samples cover less than half an hour in all, or number fewer than half the
//    median hour's: a few stray samples cannot vouch for an hour (the second rule is
//    optimize/time_multiplex.h's).
//
// A workload whose envelope reads 0 MiB throughout gets no profile (`unmeasured`): a CUDA
// context alone holds hundreds of MiB, so it was not measured, not idle.
//
// Walk-forward check (every recommendation is judged on data it was not fitted to): the same
// profile fitted on the first half of the window [0, m), m = samples / 2, and replayed on the
// second half. It counts the later observed samples whose memory passed the fitted peak plus a
// margin learned from the first half alone (PooledPeakSurprises over [0, m) at the plan's
// memory_risk; 0 without the robust envelope), and those whose duty passed the fitted quantile
// of their hour (the overall one where the fitted hour is null).
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
  std::size_t samples = 0;     // observed samples of the envelope (some replica alive and sampled)
  double memory_peak_mib = 0;  // MiB
  double duty_pct = 0;         // percent, 0..100
  std::array<std::optional<double>, 24> duty_pct_by_hour{};
  // Walk-forward (header comment): later-half observed samples, those over the earlier half's
  // peak + earlier margin, and those over the earlier half's quantile of their hour. Zero later-half
  // samples when the workload does not run in both halves.
  std::size_t later_samples = 0, later_memory_over = 0, later_duty_over = 0;
};

struct WorkloadProfiles {
  double duty_quantile = 0.99;             // q above
  double margin_mib = 0;                   // the plan's learned margin (whole window): serve keeps it free
  double earlier_margin_mib = 0;           // learned from the first half: the walk-forward check's
  std::vector<WorkloadProfile> workloads;  // sorted by workload key
  // Workloads whose memory read 0 MiB at every observed sample: unmeasured, so no profile.
  std::vector<std::string> unmeasured;
};

// The profiles of the workloads of `telemetry`, keys[i] the workload key of telemetry.pods[i]
// (see above). duty_quantile in (0, 1]; margin_mib >= 0; memory_risk in [0, 1) (PlanOptions::
// memory_risk), or nullopt without the robust envelope (no margin).
WorkloadProfiles ProfileWorkloads(const Telemetry& telemetry, const std::vector<std::string>& keys,
                                  double duty_quantile, double margin_mib, std::optional<double> memory_risk);

}  // namespace gpufit
