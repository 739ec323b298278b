// The demand an inference service sees, as every replica policy gets it: the requests,
// each with its service and prefill time, and helpers that build it from rate samples and
// measured latencies (services without per-request traces, such as GenTD26's).
#pragma once

#include <cstdint>
#include <vector>

#include "gpufit/inference/llm_service.h"
#include "gpufit/model/request_trace.h"

namespace gpufit {

struct Demand {
  RequestTrace trace;
  ServiceTimes times;  // one entry per request (prefill_s empty without a prefill phase)
};

// Arrivals of a non-homogeneous Poisson process whose rate is piecewise constant as the
// series gives it (each sample holds for sample_s or until the next one). Seeded.
RequestTrace PoissonArrivals(const RateSeries& series, std::uint64_t seed);

// `n` draws, uniformly and with replacement, from measured samples (bootstrap). Seeded.
// Precondition: samples not empty.
std::vector<double> BootstrapSamples(const std::vector<double>& samples, std::size_t n, std::uint64_t seed);

// Local block bootstrap of real arrivals (Paparoditis and Politis, "The local bootstrap
// for periodogram statistics", J. Time Series Analysis 2002; here of blocks, as in their
// local block bootstrap for non-stationary series): the trace cut into blocks of `block_s`
// from 0; block j of the copy is block j + u of the trace, u drawn uniformly from
// -reach..reach (clipped to the trace's blocks), its requests (tokens and times) kept as
// they came and shifted by -u * block_s. Keeps the bursts within a block and the load's
// profile at the scale of `reach` blocks, where a Poisson redraw at each window's mean
// rate smooths the bursts away (the check this replaced). Seeded. Preconditions: block_s > 0, reach >= 0.
Demand LocalBlockBootstrap(const Demand& demand, double block_s, int reach, std::uint64_t seed);

// Mean over the windows of `window_s` of the request rate, divided by the highest window
// mean (the burstiness figure of a trace; 1 for a constant rate). Windows tile
// [0, end of the last sample); missing samples count as no requests.
double WindowMeanToPeak(const RateSeries& series, double window_s);
// The same for a request trace, counting arrivals per window over [0, duration].
double WindowMeanToPeak(const RequestTrace& trace, double window_s);

double Median(std::vector<double> values);  // 0 for none

}  // namespace gpufit
