// Drift: how the cluster has moved since the last plan, the three rules of issue 42's
// continuous mode. Pure functions of the last plan's facts (plan_facts.h) and what was observed
// since; the controller computes them after each run and exports them (exposition.h) and sends
// them in the webhook summary (webhook.h).
//
//  * over envelope: a pod whose GPU memory peak in the recent window (MiB) is above its
//    workload's planned cap: with a back end that caps memory it would be killed, without one it
//    eats into a co-located neighbour's share. Pods of workloads the plan does not know are not
//    judged here (they are new workloads).
//  * new workloads: workloads observed now (the current plan's, from the live cluster or the
//    telemetry) that the last plan does not have; the plan has no cap for them.
//  * peak drift: per workload the plan knows and observed now, recent peak / the peak the plan
//    was fitted on. Above 1 + `peak_drift_tolerance` the backtest's input no longer describes
//    the workload (its verdict may not hold): "drifted". A workload with no fitted peak (0) is
//    not judged.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpufit/controller/plan_facts.h"
#include "gpufit/model/telemetry.h"

namespace gpufit::controller {

struct PodOverEnvelope {
  std::string pod, workload;
  double peak_mib = 0;       // recent peak
  std::int64_t cap_mib = 0;  // the workload's planned cap
};

struct PeakDrift {
  std::string workload;
  double fitted_peak_mib = 0, recent_peak_mib = 0;
  double ratio = 0;      // recent / fitted
  bool drifted = false;  // ratio > 1 + tolerance
};

struct DriftReport {
  std::vector<PodOverEnvelope> over_envelope;  // by pod
  std::vector<std::string> new_workloads;      // sorted
  std::vector<PeakDrift> peaks;                // by workload, every one judged
  std::size_t drifted() const;                 // peaks with drifted
};

struct DriftOptions {
  double peak_drift_tolerance = 0.2;  // 20% above the fitted peak counts as drift
};

// `planned`: the last plan. `recent_peak_mib`: pod (as the plan's pods[].pod) -> its GPU memory
// peak in the recent window. `observed_workloads`: the workload keys present now.
DriftReport FindDrift(const PlanFacts& planned, const std::map<std::string, double>& recent_peak_mib,
                      const std::vector<std::string>& observed_workloads, const DriftOptions& options);

// Each pod's GPU memory peak (MiB) over the last `window_s` seconds of `telemetry` (its grid's
// last samples, at least one), as PodSeries::pod. Pods not alive then are left out.
std::map<std::string, double> RecentPeaks(const Telemetry& telemetry, double window_s);

}  // namespace gpufit::controller
