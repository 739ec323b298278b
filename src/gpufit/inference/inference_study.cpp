#include "gpufit/inference/inference_study.h"

#include <fmt/format.h>

#include <cassert>
#include <cmath>

#include "gpufit/ingest/files/gentd26_serving_reader.h"
#include "gpufit/ingest/files/request_trace_reader.h"

namespace gpufit {

namespace {

constexpr double kLongestTraceS = 400 * 86400.0;
constexpr double kMostRequests = 50e6;

// `e` from what the field `field` names (a file, a GPU id), said so.
Error Field(std::string_view field, const Error& e) {
  return Error{.code = e.code, .message = fmt::format("{}: {}", field, e.message)};
}

// The service from its arrivals in p.demand.trace (p.spec set).
Result<PreparedService> PrepareRest(PreparedService p, const GpuCatalog& catalog);

Result<PreparedService> Prepare(const InferenceServiceSpec& spec, const GpuCatalog& catalog) {
  PreparedService p;
  p.spec = spec;
  if (Result<GpuModel> gpu = catalog.Find(spec.gpu); !gpu) return Field("gpu", gpu.error());

  // Arrivals.
  if (spec.format == RequestFormat::kGenTd26Qps) {
    Result<RateSeries> series = ReadGenTd26Qps(spec.requests_path, spec.request_type);
    if (!series) return Field("requests.path", series.error());
    double expected = 0;  // requests the rates imply
    for (std::size_t i = 0; i < series->t_s.size(); ++i) {
      const double to = i + 1 < series->t_s.size() ? std::min(series->t_s[i] + series->sample_s, series->t_s[i + 1])
                                                   : series->t_s[i] + series->sample_s;
      expected += series->per_s[i] * (to - series->t_s[i]);
    }
    if (expected > kMostRequests || series->t_s.back() > kLongestTraceS) {
      return InvalidArgument(
          "requests.path {}: the rates imply {:.3g} requests over {:.3g} days; at most {:.0f} million requests and 400 "
          "days are read",
          spec.requests_path, expected, series->t_s.back() / 86400, kMostRequests / 1e6);
    }
    p.demand.trace = PoissonArrivals(*series, spec.seed);
  } else {
    Result<RequestTrace> trace = spec.format == RequestFormat::kAzureLlm ? ReadAzureLlmTrace(spec.requests_path)
                                                                         : ReadGenericRequestTrace(spec.requests_path);
    if (!trace) return Field("requests.path", trace.error());
    p.demand.trace = *std::move(trace);
  }
  return PrepareRest(std::move(p), catalog);
}

Result<PreparedService> PrepareRest(PreparedService p, const GpuCatalog& catalog) {
  const InferenceServiceSpec& spec = p.spec;
  Result<GpuModel> gpu = catalog.Find(spec.gpu);
  if (!gpu) return Field("gpu", gpu.error());
  p.gpu = *gpu;
  if (p.demand.trace.requests.empty()) return InvalidArgument("requests.path {}: no requests", spec.requests_path);
  if (p.demand.trace.Duration() > kLongestTraceS) {
    return InvalidArgument("requests.path {} spans {:.6g} days (a stray timestamp?); at most 400 are read",
                           spec.requests_path, p.demand.trace.Duration() / 86400);
  }

  // Service times.
  if (spec.IsLlm()) {
    if (!p.demand.trace.has_tokens) {
      return InvalidArgument("requests.path {}: an LLM service needs token counts (input_tokens, output_tokens)",
                             spec.requests_path);
    }
    const double tokens = MeanTokensPerSequence(p.demand.trace);
    if (spec.llm_direct) {
      p.llm = *spec.llm_direct;
      p.service_basis = "prefill, TPOT and concurrency as given";
    } else {
      Result<LlmServiceModel> m =
          RooflineLlmService(*FindLlmArchitecture(*spec.llm_model), p.gpu, spec.llm_params, tokens);
      if (!m) return m.error();
      p.llm = *m;
      p.service_basis = fmt::format("roofline of {} on {} (MFU {}, MBU {}, memory {}, mean {:.0f} tokens per sequence)",
                                    *spec.llm_model, spec.gpu, spec.llm_params.prefill_mfu, spec.llm_params.decode_mbu,
                                    spec.llm_params.memory_utilization, tokens);
    }
    p.demand.times = LlmServiceTimes(p.demand.trace, *p.llm);
    p.concurrency = p.llm->max_concurrent_sequences;
  } else {
    const std::size_t n = p.demand.trace.requests.size();
    if (!spec.service_samples_path.empty()) {
      Result<std::vector<double>> samples = ReadGenTd26LatencySeconds(spec.service_samples_path);
      if (!samples) return Field("service_time.samples_path", samples.error());
      p.demand.times.service_s = BootstrapSamples(*samples, n, spec.seed + 2);
      p.service_basis = fmt::format("bootstrap of {} measured service times (median {:.1f} s) from {}", samples->size(),
                                    Median(*samples), spec.service_samples_path);
    } else {
      p.demand.times.service_s.assign(n, spec.service_s);
      p.service_basis = fmt::format("constant {} s", spec.service_s);
    }
    p.concurrency = spec.concurrency;
  }

  // Cold start.
  if (!spec.cold_start_samples_path.empty()) {
    Result<std::vector<double>> samples = ReadGenTd26LatencySeconds(spec.cold_start_samples_path);
    if (!samples) return Field("cold_start.samples_path", samples.error());
    p.cold_start_s = Median(*samples);
    p.cold_start_basis =
        fmt::format("median of {} measured load times from {}", samples->size(), spec.cold_start_samples_path);
  } else if (spec.load_gb_per_s > 0) {
    const LlmArchitecture arch = *FindLlmArchitecture(*spec.llm_model);
    const double weights_gb = arch.params_billion * arch.bytes_per_param;
    p.cold_start_s = weights_gb / spec.load_gb_per_s + spec.init_s;
    p.cold_start_basis = fmt::format("{:.1f} GB of weights at {} GB/s + {} s initialization", weights_gb,
                                     spec.load_gb_per_s, spec.init_s);
  } else {
    p.cold_start_s = spec.cold_start_s;
    p.cold_start_basis = "as given";
  }
  double total = 0;
  for (const double x : p.demand.times.service_s) total += x;
  const double mean_service = total / static_cast<double>(p.demand.times.service_s.size());
  if (!(mean_service >= 1e-6)) {
    return InvalidArgument("{} {}: service times average {:.3g} s, below a microsecond",
                           spec.service_samples_path.empty() ? "requests.path" : "service_time.samples_path",
                           spec.service_samples_path.empty() ? spec.requests_path : spec.service_samples_path,
                           mean_service);
  }
  // A count per window only makes sense when requests end within a window or two.
  if (spec.window_s < 2 * mean_service) {
    return InvalidArgument("window_s {} s is shorter than twice the mean service time ({:.1f} s): use at least {:.0f}",
                           spec.window_s, mean_service, std::ceil(2 * mean_service));
  }
  const std::size_t alone = RequestsMissingAlone(p.demand, spec.slo);
  const double reachable = 1 - static_cast<double>(alone) / static_cast<double>(p.demand.trace.requests.size());
  if (reachable < spec.slo.target) {
    return InvalidArgument(
        "slo: the SLO cannot be met: {} of {} requests ({:.2f}%) miss it even without waiting (their {} alone exceeds "
        "{} "
        "s), "
        "so at most {:.2f}% can meet it, below the target {:.2f}%",
        alone, p.demand.trace.requests.size(), 100 * (1 - reachable),
        spec.slo.metric == SloMetric::kTtft ? "prefill" : "service time", spec.slo.seconds, 100 * reachable,
        100 * spec.slo.target);
  }
  // Blocks of a quarter window, each from at most one block away: bursts kept as they came,
  // the load moved by up to a quarter of a decision window.
  p.holdout = LocalBlockBootstrap(p.demand, spec.window_s / 4, 1, spec.seed + 1);
  p.window_mean_to_peak = WindowMeanToPeak(p.demand.trace, spec.window_s);
  return p;
}

}  // namespace

Result<PreparedService> PrepareService(const InferenceServiceSpec& spec, const GpuCatalog& catalog) {
  Result<PreparedService> p = Prepare(spec, catalog);
  if (!p)
    return Unexpected{
        Error{.code = p.error().code, .message = fmt::format("service '{}': {}", spec.name, p.error().message)}};
  return p;
}

Result<PreparedService> PrepareServiceFromTrace(const InferenceServiceSpec& spec, RequestTrace trace,
                                                const GpuCatalog& catalog) {
  PreparedService p;
  p.spec = spec;
  p.demand.trace = std::move(trace);
  Result<PreparedService> r = PrepareRest(std::move(p), catalog);
  if (!r)
    return Unexpected{
        Error{.code = r.error().code, .message = fmt::format("service '{}': {}", spec.name, r.error().message)}};
  return r;
}

ReplicaPolicyInput PolicyInput(const PreparedService& service) {
  return {.demand = &service.demand,
          .concurrency = service.concurrency,
          .cold_start_s = service.cold_start_s,
          .slo = service.spec.slo,
          .window_s = service.spec.window_s,
          .step_s = 5,
          .max_replicas = 100000,
          .hold_s = -1};
}

ReplicaPolicyInput InferenceStudy::Input() const { return PolicyInput(service); }

const PolicyOutcome& InferenceStudy::Policy(std::string_view name) const {
  for (const PolicyOutcome& p : policies) {
    if (p.policy == name) return p;
  }
  assert(false && "unknown policy");
  return policies.front();
}

InferenceStudy RunInferenceStudy(PreparedService service) {
  InferenceStudy study;
  study.service = std::move(service);
  const ReplicaPolicyInput in = study.Input();
  study.policies.push_back(Clairvoyant(in));
  study.policies.push_back(StaticPeak(in));
  PolicyOutcome hpa = HpaLike(in, study.service.spec.hpa);
  hpa.policy = fmt::format("hpa-like (target {:.0f}%)", 100 * study.service.spec.hpa.target_utilization);
  study.policies.push_back(hpa);
  // The highest HPA target that meets the SLO: what tuning the autoscaler by hand finds.
  HpaSettings tuned = study.service.spec.hpa;
  PolicyOutcome best = hpa;
  for (int percent = 95; percent >= 5; percent -= 5) {
    tuned.target_utilization = percent / 100.0;
    PolicyOutcome h = HpaLike(in, tuned);
    if (h.replay.slo_attainment >= ReachableSloTarget(in)) {
      study.tuned_utilization = tuned.target_utilization;
      best = std::move(h);
      break;
    }
  }
  best.policy = study.tuned_utilization > 0
                    ? fmt::format("hpa-like tuned (target {:.0f}%)", 100 * study.tuned_utilization)
                    : "hpa-like tuned (no target meets the SLO)";
  study.policies.push_back(std::move(best));
  PolicyOutcome gpufit = GpufitSchedule(in);
  // A constant count is a schedule too: never recommend one dearer than static peak.
  const PolicyOutcome& peak = study.Policy("static peak");
  if (gpufit.replay.gpu_hours > peak.replay.gpu_hours) {
    gpufit.schedule = peak.schedule;
    gpufit.replay = peak.replay;
    gpufit.fell_back_to_static = true;
  }
  study.policies.push_back(std::move(gpufit));
  const PolicyOutcome& g = study.policies.back();
  ReplicaPolicyInput fresh = in;
  fresh.demand = &study.service.holdout;
  study.gpufit_holdout = g;
  study.gpufit_holdout.policy = "gpufit, block bootstrap";
  study.gpufit_holdout.replay = ReplayRequests(fresh.demand->trace, fresh.demand->times.service_s,
                                               fresh.demand->times.prefill_s, g.schedule, ReplayOptionsFor(fresh));
  return study;
}

}  // namespace gpufit
