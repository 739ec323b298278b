// When the controller's loop counts as stuck, for GET /healthz (metrics_endpoint.h): a liveness
// probe restarts a pod whose loop stopped finishing runs (a hung read, a webhook or an API call
// that never ends), which /metrics alone would not show.
//
// Stale after 3 x --interval (one slow run and one missed run are tolerated; a second missed
// run is not) plus what one loop may legitimately wait on besides the plan: with --apply two
// soaks (the canary wave's and the rest's) and the pending timeout (300 s) that ends a soak
// early, the webhook's deadline, and 10 minutes for the plan of a large fleet (a week of a
// 5,000-pod fleet reads in minutes: docs/internals/performance.md).
#pragma once

#include <string>

namespace gpufit::controller {

struct LivenessBudget {
  double interval_s = 3600;
  double apply_soak_s = 0;  // 0 without --apply
  double webhook_timeout_s = 0;
};

// Seconds without a finished run after which the loop is stuck.
double StaleAfterS(const LivenessBudget& budget);

// "" while a run finished (or the loop started) within StaleAfterS of `now_s`; else
// "no run finished for N s (more than the M s allowed: 3 x --interval + ...)".
std::string Unhealthy(double now_s, double last_progress_s, const LivenessBudget& budget);

}  // namespace gpufit::controller
