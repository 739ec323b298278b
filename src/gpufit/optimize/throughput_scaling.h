// Moving a busy pod to another GPU model: how much longer its work takes there, and whether
// the model may take it at all. Right-sizing (optimize/rightsize.h) and the mixed-fleet plan
// (plan/fleet_plan.h) both ask AdmitPod.
//
// Slowdown factor of `from` -> `to` (dimensionless; > 1 slower, < 1 faster):
//   max(bf16_tflops(from) / bf16_tflops(to), memory_bandwidth(from) / memory_bandwidth(to))
// from the catalog's datasheet figures (data/gpu_catalog.yaml). A kernel is bound by its
// arithmetic or by its memory traffic (the roofline model: Williams, Waterman and Patterson,
// "Roofline", CACM 52(4), 2009); telemetry does not say which, so the pod is assumed bound by
// whichever of the two the new model has relatively less of. The estimate is conservative in
// both directions: a move to a faster model is credited with the smaller of the two speedups.
// Factors within 1% of 1 count as 1 (datasheet rounding: the H200 and the H100 SXM are the
// same GH100 die, 989 vs 989.4 TFLOPS). Unknown (nullopt) when either model lacks either
// figure or lists 0 (the T4 has no BF16).
//
// The duty cycle (DCGM_FI_DEV_GPU_UTIL: the share of time a kernel runs) of the same work on
// `to` is taken as duty x factor. Admission of a pod on `to`:
//  * the same model: always;
//  * a pod never active (duty <= 0 or missing at every sample of its life): any model, its
//    memory is all it needs;
//  * the factor is unknown: refused (nothing says how long its work would take);
//  * latency-bound pods (serving; the default for a pod not known to be batch work): refused
//    when factor > 1. A request's service time scales with the factor (prefill is compute
//    bound, decode bandwidth bound), so a slower model raises latency even when the duty
//    fits; a faster one does not.
//  * every pod: duty x factor > 100% at more than `collision_limit` samples is refused: the
//    GPU would fall behind the pod's work (the same allowance as two pods colliding,
//    optimize/colocate.h), so it costs more per unit of work than its price per hour shows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/model/telemetry.h"

namespace gpufit {

std::optional<double> SlowdownFactor(const GpuModel& from, const GpuModel& to);

// Whether a pod never ran a kernel (duty <= 0 or NaN at every sample of its life).
bool NeverActive(const PodSeries& pod);

struct Admission {
  bool admitted = false;
  double factor = 1;     // slowdown factor applied to its duty (1 when unknown and never active)
  std::string reason{};  // why not, for humans; empty when admitted
};

// `pod` measured on `from`, considered for `to` (rules above).
Admission AdmitPod(const PodSeries& pod, const GpuModel& from, const GpuModel& to, bool latency_bound,
                   std::int64_t collision_limit);

}  // namespace gpufit
