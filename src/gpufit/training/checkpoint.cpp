#include "gpufit/training/checkpoint.h"

#include <cassert>
#include <cmath>
#include <limits>

namespace gpufit {

Seconds YoungInterval(Seconds delta, Seconds mtbf) { return Seconds{std::sqrt(2 * delta.count() * mtbf.count())}; }

Seconds DalyFirstOrderInterval(Seconds delta, Seconds mtbf) { return YoungInterval(delta, mtbf) - delta; }

Seconds DalyInterval(Seconds delta, Seconds mtbf) {
  if (delta >= 2 * mtbf) return mtbf;
  const double x = delta.count() / (2 * mtbf.count());
  return YoungInterval(delta, mtbf) * (1 + std::sqrt(x) / 3 + x / 9) - delta;
}

Seconds DalyWallTime(Seconds work, Seconds tau, Seconds delta, Seconds restart, Seconds mtbf) {
  assert(tau.count() > 0);
  const double m = mtbf.count();
  if (!std::isfinite(m)) return work * (1 + delta / tau);
  // expm1 keeps precision when (tau + delta) << M.
  return Seconds{m * std::exp(restart.count() / m) * std::expm1((tau + delta).count() / m) * (work / tau)};
}

Seconds ExpectedLostPerFailure(Seconds segment, Seconds mtbf) {
  const double t = segment.count(), m = mtbf.count();
  if (t <= 0) return Seconds{0};
  if (!std::isfinite(m)) return segment / 2;
  return Seconds{m - t / std::expm1(t / m)};
}

Seconds JobMtbf(Seconds part_mtbf, int parts) {
  assert(parts >= 1);
  return part_mtbf / parts;
}

double RatePerHourFromMonthlyFraction(double fraction) {
  assert(fraction >= 0 && fraction < 1);
  return -std::log1p(-fraction) / kHoursPerMonth;
}

}  // namespace gpufit
