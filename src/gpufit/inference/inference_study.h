// One inference service end to end: its demand (trace, service and cold-start times) and
// every replica policy replayed on it, plus gpufit's schedule replayed on a local block
// bootstrap of the trace (demand.h: blocks of a quarter decision window of real arrivals,
// each from at most one block away; an out-of-sample check that keeps the trace's bursts,
// where a Poisson redraw at each window's mean rate smooths them away, and moves the load by
// up to a quarter window, as a later day moves it). For traces of several days,
// walk_forward.h replays later real days instead.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/inference/service_spec.h"

namespace gpufit {

struct PreparedService {
  InferenceServiceSpec spec;
  GpuModel gpu;
  Demand demand;
  Demand holdout;  // LocalBlockBootstrap(demand, window_s / 4, 1, seed + 1)
  int concurrency = 1;
  double cold_start_s = 0;
  std::optional<LlmServiceModel> llm;
  std::string service_basis, cold_start_basis;  // how each figure was obtained, in words
  double window_mean_to_peak = 0;               // arrivals per decision window, mean / peak
  // Services found in serving metrics (inference/serving_services.h): where each figure came
  // from (figure, metric names or assumption), and the replicas running today.
  std::vector<std::pair<std::string, std::string>> sources;
  std::optional<int> current_replicas;
};

// Reads the files the spec names and builds the demand, pricing and sizing the GPU from
// `catalog` (default: the embedded one). Errors name the service: those of the readers, an
// unknown GPU, an LLM that does not fit the GPU, service times that are all zero, a trace
// spanning more than 400 days (a stray timestamp), an SLO that more than (1 - target) of
// the requests miss even without waiting.
Result<PreparedService> PrepareService(const InferenceServiceSpec& spec,
                                       const GpuCatalog& catalog = GpuCatalog::Embedded());

// The same from a trace already built (services from serving metrics): the spec's format and
// requests path are not read. Errors as PrepareService's, naming the service.
Result<PreparedService> PrepareServiceFromTrace(const InferenceServiceSpec& spec, RequestTrace trace,
                                                const GpuCatalog& catalog = GpuCatalog::Embedded());

// The policies' input for a prepared service: its demand, concurrency, cold start, SLO and
// window, schedule steps of 5 s. Points into `service`, which must outlive it.
ReplicaPolicyInput PolicyInput(const PreparedService& service);

struct InferenceStudy {
  PreparedService service;
  // clairvoyant, static peak, hpa-like at the spec's target, hpa-like at the highest target
  // (in steps of 0.05) that meets the SLO, gpufit.
  std::vector<PolicyOutcome> policies;
  PolicyOutcome gpufit_holdout;  // gpufit's schedule replayed on service.holdout ("gpufit, block bootstrap")
  double tuned_utilization = 0;  // the tuned HPA's target (0 when none meets the SLO)
  const PolicyOutcome& Policy(std::string_view name) const;  // precondition: present
  ReplicaPolicyInput Input() const;
};

InferenceStudy RunInferenceStudy(PreparedService service);

}  // namespace gpufit
