// Checkpoint-interval formulas under exponential (Poisson) failures.
//
// Symbols (all Seconds): delta = time to write one checkpoint, mtbf = mean time between
// failures of the whole job, restart = R (reschedule + reload), tau = compute between
// checkpoints, work = failure-free solve time T_s. Worked examples in
// ../shared/reference/formulas.md section 1 are the unit tests.
#pragma once

#include "gpufit/core/units.h"

namespace gpufit {

// Young (1974), first order: sqrt(2 delta M). J. W. Young, "A first order approximation to
// the optimum checkpoint interval", CACM 17(9), 1974, doi:10.1145/361147.361115.
Seconds YoungInterval(Seconds delta, Seconds mtbf);

// Daly (2006) first order: sqrt(2 delta M) - delta.
Seconds DalyFirstOrderInterval(Seconds delta, Seconds mtbf);

// Daly (2006) higher-order optimum:
//   sqrt(2 delta M) [1 + (1/3) sqrt(delta/(2M)) + (1/9) delta/(2M)] - delta   (delta < 2M)
//   M                                                                       (delta >= 2M)
// J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
// dumps", FGCS 22(3), 2006, doi:10.1016/j.future.2004.11.016.
Seconds DalyInterval(Seconds delta, Seconds mtbf);

// Daly's expected wall time of the whole run with checkpoints every tau:
//   T_w = M e^(R/M) (e^((tau+delta)/M) - 1) T_s / tau
// Failures may strike during restarts and checkpoint writes; every segment, the last one
// included, ends with a checkpoint. An infinite mtbf gives T_s (1 + delta/tau).
Seconds DalyWallTime(Seconds work, Seconds tau, Seconds delta, Seconds restart, Seconds mtbf);

// Expected work lost when a failure strikes a segment of length T (formulas.md 1.3):
// E[X | X < T] = M - T / (e^(T/M) - 1).
Seconds ExpectedLostPerFailure(Seconds segment, Seconds mtbf);

// Job MTBF of n independent parts with MTBF m each: m / n (formulas.md 1.4).
Seconds JobMtbf(Seconds part_mtbf, int parts);

// The interruption rate (per hour) of a monthly interruption fraction f, read as "the
// share of instances interrupted within a 730-hour month" with exponential lifetimes:
// -ln(1 - f) / 730 h. An ASSUMPTION (formulas.md 1.4): AWS publishes only the band.
// f in [0, 1).
double RatePerHourFromMonthlyFraction(double fraction);

}  // namespace gpufit
