#include "gpufit/controller/liveness.h"

#include <fmt/format.h>

namespace gpufit::controller {

namespace {
constexpr double kPendingTimeoutS = 300;  // apply's default --pending-timeout (apply_run.h)
constexpr double kPlanAllowanceS = 600;
}  // namespace

double StaleAfterS(const LivenessBudget& b) {
  const double apply = b.apply_soak_s > 0 ? 2 * b.apply_soak_s + kPendingTimeoutS : 0;
  return 3 * b.interval_s + apply + b.webhook_timeout_s + kPlanAllowanceS;
}

std::string Unhealthy(double now_s, double last_progress_s, const LivenessBudget& b) {
  const double since = now_s - last_progress_s, limit = StaleAfterS(b);
  if (since <= limit) return "";
  return fmt::format(
      "no run finished for {:.0f} s (more than the {:.0f} s allowed: 3 x --interval {:.0f} s, {:.0f} s of --apply "
      "soaks, the webhook's {:.0f} s and {:.0f} s for the plan)",
      since, limit, b.interval_s, b.apply_soak_s > 0 ? 2 * b.apply_soak_s + kPendingTimeoutS : 0.0,
      b.webhook_timeout_s, kPlanAllowanceS);
}

}  // namespace gpufit::controller
