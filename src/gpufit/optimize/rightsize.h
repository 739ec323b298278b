// Memory-based right-sizing: the cheapest catalog GPU whose memory holds the pod's
// observed peak GPU memory times (1 + headroom), and its peak plus the learned surprise
// margin (optimize/memory_envelope.h: how far pods outgrew their past peak in the data),
// whichever is larger.
//
// Shrinking memory needs evidence: HoldShrink keeps the current GPU (and says why) when the
// recommendation has less memory than it and the window is shorter than min_window_hours
// (default 24 h: one daily cycle, since load and memory follow the hour of day), or when a
// memory sample is missing within 10 minutes of the peak (the gap was filled from its
// neighbours, ingest/align.h: a larger value may have gone unseen).
//
// Cheapest = lowest on-demand USD per GPU-hour (catalog prices); ties go to less memory,
// then to the catalog id, among the models `refuse` lets through (empty: every model).
// BuildPlan refuses by optimize/throughput_scaling.h AdmitPod: a busy pod is judged by cost
// per unit of work (its duty cycle, scaled by the slowdown, must fit the new model) and a
// serving pod keeps its latency; the reason names the cheaper models refused and why. With no
// pick the current GPU is kept: the reason says "no catalog GPU has that much memory" only
// when none has; when some have and every one refused, it names each and its refusal.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "gpufit/analyze/profile.h"
#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/model/telemetry.h"

namespace gpufit {

struct RightSizing {
  std::string current_gpu;                     // catalog id
  std::optional<std::string> recommended_gpu;  // nullopt: no catalog GPU is large enough
  MiB required;                                // ceil(peak x (1 + headroom))
  std::string reason;                          // for humans
  double usd_per_month_current = 0;            // on-demand, one GPU for a 730-hour month
  double usd_per_month_recommended = 0;        // equals current when nothing fits
};

// Why a model may not take the pod (empty: it may).
using RefuseModel = std::function<std::string(const GpuModel&)>;

// Precondition: headroom >= 0, margin_mib >= 0.
RightSizing RightSize(const PodProfile& profile, const GpuModel& current, const GpuCatalog& catalog, double headroom,
                      double margin_mib = 0, const RefuseModel& refuse = {});

struct ShrinkEvidence {
  double window_hours = 0;
  double min_window_hours = 24;
  bool gap_near_peak = false;
};

// Whether a memory gap of `pod` lies within 10 minutes of its (first) memory peak.
bool GapNearPeak(const PodSeries& pod, double step_s);

// Keeps the current GPU when `r` would shrink memory on too little evidence (see above).
void HoldShrink(RightSizing& r, const GpuModel& current, const GpuCatalog& catalog, const ShrinkEvidence& evidence);

}  // namespace gpufit
