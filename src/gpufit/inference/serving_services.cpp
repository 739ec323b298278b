#include "gpufit/inference/serving_services.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>

#include "gpufit/core/rfc3339.h"
#include "gpufit/core/rng.h"

namespace gpufit {
namespace {

// A DNS-1123 label from any name: lower case, other characters '-', at most 63.
std::string DnsLabel(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out += (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9') ? l : '-';
  }
  if (out.size() > 63) out.resize(63);
  while (!out.empty() && out.front() == '-') out.erase(0, 1);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "service" : out;
}

double Sum(const std::vector<double>& x) {
  double s = 0;
  for (const double v : x) s += v;
  return s;
}

std::string Pods(const ServingWorkload& w) {
  return fmt::format("{} pod{}", w.pods.size(), w.pods.size() == 1 ? "" : "s");
}

// The first of `names` the workload read, else the first name.
std::string Read(const ServingWorkload& w, std::initializer_list<const char*> names) {
  std::string out;
  for (const char* n : names)
    if (std::find(w.metrics.begin(), w.metrics.end(), n) != w.metrics.end())
      out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

}  // namespace

std::optional<std::string> ArchitectureOfModelName(std::string_view served) {
  const std::size_t slash = served.rfind('/');
  std::string base;
  for (const char c : slash == std::string_view::npos ? served : served.substr(slash + 1))
    base += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (base.rfind("meta-", 0) == 0) base.erase(0, 5);
  for (std::size_t end = 1; end <= base.size(); ++end) {
    if (end < base.size() && base[end] != '-' && base[end] != '_') continue;
    if (Result<LlmArchitecture> a = FindLlmArchitecture(base.substr(0, end)); a) return a->name;
  }
  return std::nullopt;
}

std::size_t FirstReplayedStep(const ServingWorkload& w) {
  double held = 0;
  for (std::size_t k = w.requests.size(); k > 0; --k) {
    const double x = w.requests[k - 1];
    held += std::isfinite(x) && x > 0 ? std::ceil(x) : 0;
    if (held > kMaxReplayedRequests) return k;
  }
  return 0;
}

RequestTrace ArrivalsFromCounts(const ServingWorkload& w, std::uint64_t seed) {
  Rng rng(seed);
  const bool tokens = !w.prompt_tokens.empty() && !w.generation_tokens.empty();
  RequestTrace trace{.source = "", .requests = {}, .has_tokens = tokens, .origin_s = 0};
  double pending_in = 0, pending_out = 0;
  constexpr long long kMostTokens = std::numeric_limits<int>::max();
  for (std::size_t k = FirstReplayedStep(w); k < w.requests.size(); ++k) {
    const double from = w.grid.start_s + (static_cast<double>(k) - 1) * w.grid.step_s;
    double expected = std::isfinite(w.requests[k]) ? std::max(0.0, w.requests[k]) : 0.0;
    if (w.engine == ServingEngine::kQuery) {
      const double whole = std::floor(expected);
      expected = whole + (rng.Unit() < expected - whole ? 1 : 0);
    }
    const auto n = static_cast<std::size_t>(std::llround(expected));
    if (tokens) {
      pending_in += std::max(0.0, w.prompt_tokens[k]);
      pending_out += std::max(0.0, w.generation_tokens[k]);
    }
    if (n == 0) continue;
    std::vector<double> at(n);
    for (double& t : at) t = from + rng.Unit() * w.grid.step_s;
    std::sort(at.begin(), at.end());
    const auto in = static_cast<long long>(std::llround(std::min(pending_in, 1e15)));
    const auto out = static_cast<long long>(std::llround(std::min(pending_out, 1e15)));
    const auto count = static_cast<long long>(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto j = static_cast<long long>(i);
      trace.requests.push_back(
          {.arrival_s = at[i],
           .input_tokens = tokens ? static_cast<int>(std::min(kMostTokens, in / count + (j < in % count ? 1 : 0))) : 0,
           .output_tokens =
               tokens ? static_cast<int>(std::min(kMostTokens, out / count + (j < out % count ? 1 : 0))) : 0});
    }
    pending_in = pending_out = 0;
  }
  if (!trace.requests.empty()) {
    trace.origin_s = trace.requests.front().arrival_s;
    for (Request& r : trace.requests) r.arrival_s -= trace.origin_s;
  }
  return trace;
}

Result<ServingServices> PrepareServingServices(const std::vector<ServingWorkload>& workloads,
                                               const ServingStudyOptions& options, const GpuCatalog& catalog) {
  if (Result<GpuModel> gpu = catalog.Find(options.gpu); !gpu) return gpu.error();
  ServingServices out;
  std::set<std::string> names;
  for (const ServingWorkload& w : workloads) {
    std::string name = DnsLabel(w.owner_name.empty() ? w.model : w.owner_name);
    for (int i = 2; names.contains(name); ++i) name = DnsLabel(fmt::format("{}-{}", name.substr(0, 58), i));
    const std::string where = fmt::format("{}/{}", w.kube_namespace, name);
    const auto skip = [&](const std::string& why) { out.skipped.push_back(fmt::format("{}: {}", where, why)); };
    const double total = w.TotalRequests();
    if (w.engine == ServingEngine::kQuery && w.no_series) {
      skip(fmt::format("--serving-query '{}' returned no series in the range", w.metrics.front()));
      continue;
    }
    if (!(total >= 1)) {
      skip("no finished requests in the range");
      continue;
    }
    const std::size_t first = FirstReplayedStep(w);
    if (first == w.requests.size()) {
      skip(fmt::format("its last step alone holds more than {:.0f} requests, the most gpufit replays",
                       kMaxReplayedRequests));
      continue;
    }
    InferenceServiceSpec spec;
    spec.name = name;
    spec.kube_namespace = DnsLabel(w.kube_namespace.empty() ? "default" : w.kube_namespace);
    spec.deployment = name;
    if (w.owner_kind == "StatefulSet") spec.workload_kind = "StatefulSet";
    spec.requests_path = fmt::format("serving metrics of {}", where);
    spec.seed = options.seed;
    spec.gpu = options.gpu;
    spec.slo = options.slo;
    std::vector<std::pair<std::string, std::string>> sources;
    const std::string engine = ServingEngineName(w.engine);
    sources.emplace_back(
        "workload", fmt::format("{} {} serving '{}' on {} ({})", w.owner_kind.empty() ? "unowned pods" : w.owner_kind,
                                w.owner_name.empty() ? name : w.owner_name, w.model, Pods(w), w.owner_basis));
    const char* counter = w.engine == ServingEngine::kVllm     ? "vllm:request_success_total"
                          : w.engine == ServingEngine::kTriton ? "nv_inference_request_success"
                                                               : "";
    sources.emplace_back(
        "requests",
        fmt::format(
            "{:.0f} requests: {} per {:g} s step, summed over pods{}{}; each step's count placed uniformly at "
            "random within the step (a Poisson process given its count: a constant rate within the step), "
            "seed {}{}{}",
            total,
            w.engine == ServingEngine::kQuery ? "--serving-query '" + w.metrics.front() + "' x the step"
                                              : std::string(counter) + " increase",
            w.grid.step_s, w.engine == ServingEngine::kVllm ? " and finished_reason" : "",
            w.counter_resets > 0 ? fmt::format(" ({} counter resets: the restarted count taken)", w.counter_resets)
                                 : "",
            options.seed,
            first == 0
                ? ""
                : fmt::format("; only the last {:.0f} of them replayed, from {} (at most {:.0f} "
                              "requests are replayed: the most recent steps that hold no more)",
                              Sum(std::vector<double>(w.requests.begin() + static_cast<long>(first), w.requests.end())),
                              FormatRfc3339(w.grid.start_s + (static_cast<double>(first) - 1) * w.grid.step_s),
                              kMaxReplayedRequests),
            w.engine == ServingEngine::kQuery ? ""
                                              : "; counted when a request finishes, so arrivals lag by its "
                                                "latency"));
    const std::optional<std::string> arch =
        w.engine == ServingEngine::kVllm ? ArchitectureOfModelName(w.model) : std::nullopt;
    if (w.engine == ServingEngine::kVllm) {
      if (w.prompt_tokens.empty() || w.generation_tokens.empty()) {
        skip("no vllm:prompt_tokens_total or vllm:generation_tokens_total: an LLM needs token counts");
        continue;
      }
      sources.emplace_back("tokens",
                           fmt::format("vllm:prompt_tokens_total ({:.0f}) and vllm:generation_tokens_total ({:.0f}) "
                                       "increase per step, shared evenly among the step's requests",
                                       Sum(w.prompt_tokens), Sum(w.generation_tokens)));
      if (arch) {
        spec.llm_model = *arch;
        sources.emplace_back("service model", fmt::format("roofline of {} (from model_name '{}') on {}, vLLM defaults",
                                                          *arch, w.model, options.gpu));
      } else {
        if (!w.ttft.present() || !w.tpot.present()) {
          skip(fmt::format(
              "model_name '{}' is not a known architecture and {} is missing: give the service in the services YAML "
              "(--inference)",
              w.model, !w.ttft.present() ? "vllm:time_to_first_token_seconds" : "vllm:time_per_output_token_seconds"));
          continue;
        }
        if (!(w.tpot.Mean() <= kMaxServiceTimeS) || !(w.ttft.Mean() <= kMaxServiceTimeS))
          return InvalidArgument("{}: measured {} {:g} s is above {:g} s, the most gpufit accepts", where,
                                 w.tpot.Mean() > kMaxServiceTimeS ? "vllm:time_per_output_token_seconds mean"
                                                                  : "vllm:time_to_first_token_seconds mean",
                                 std::max(w.tpot.Mean(), w.ttft.Mean()), kMaxServiceTimeS);
        const double prompt = Sum(w.prompt_tokens);
        const int seqs = std::max(1, static_cast<int>(std::lround(w.max_running_per_pod)));
        if (!(prompt > 0) || !(w.ttft.sum > 0) || !(w.tpot.Mean() > 0)) {
          skip("no prompt tokens or zero measured latencies");
          continue;
        }
        spec.llm_direct = LlmServiceModel{
            .prefill_tokens_per_s = prompt / w.ttft.sum, .tpot_s = w.tpot.Mean(), .max_concurrent_sequences = seqs};
        sources.emplace_back(
            "service model",
            fmt::format("measured: prefill {:.0f} tokens/s = vllm:prompt_tokens_total / "
                        "vllm:time_to_first_token_seconds_sum (TTFT includes queueing: a lower bound); TPOT {:.1f} ms "
                        "= mean of vllm:time_per_output_token_seconds; {} sequences per replica = the most "
                        "vllm:num_requests_running one pod reported{}",
                        prompt / w.ttft.sum, 1000 * w.tpot.Mean(), seqs,
                        w.max_running_per_pod > 0 ? "" : " (none reported: 1)"));
      }
    } else {
      double service = 0;
      std::string basis;
      if (w.engine == ServingEngine::kTriton) {
        if (w.triton_queue_s > w.triton_request_s && w.triton_request_s > 0)
          return InvalidArgument(
              "{}: nv_inference_queue_duration_us rose by {:g} s, more than "
              "nv_inference_request_duration_us ({:g} s), which includes the queueing",
              where, w.triton_queue_s, w.triton_request_s);
        if (w.triton_request_s > w.triton_queue_s && w.triton_queue_s > 0) {
          service = (w.triton_request_s - w.triton_queue_s) / w.triton_requests;
          basis = "(nv_inference_request_duration_us - nv_inference_queue_duration_us) / nv_inference_request_success";
        } else if (w.triton_compute_s > 0) {
          service = w.triton_compute_s / w.triton_requests;
          basis = "nv_inference_compute_infer_duration_us / nv_inference_request_success";
        }
      } else {
        const double count = Sum(w.latency_count);
        if (count > 0) service = Sum(w.latency_sum_s) / count;
        basis = w.metrics.size() > 1 ? "--serving-latency '" + w.metrics[1] + "', request-weighted mean" : "";
      }
      if (!(service > 0)) {
        skip(w.engine == ServingEngine::kTriton
                 ? "no nv_inference_request_duration_us, nv_inference_queue_duration_us or "
                   "nv_inference_compute_infer_duration_us increase: no service time"
                 : "no service time: give --serving-latency NAME=PROMQL, or the service in the services YAML");
        continue;
      }
      if (!(service <= kMaxServiceTimeS))
        return InvalidArgument(
            "{}: service time {:g} s per request (from {}) is above {:g} s, the most gpufit "
            "accepts",
            where, service, basis, kMaxServiceTimeS);
      double peak = 0;  // the busiest step's offered load: replicas busy at once
      for (const double n : w.requests) peak = std::max(peak, n / w.grid.step_s * service);
      if (peak > kMaxServingReplicas)
        return InvalidArgument(
            "{}: its busiest step needs {:.0f} replicas busy at once ({}), more than {:g}, the "
            "most gpufit sizes",
            where, std::ceil(peak), basis, kMaxServingReplicas);
      spec.service_s = service;
      spec.concurrency = 1;
      if (spec.slo.metric == SloMetric::kTtft) spec.slo.metric = SloMetric::kWait;
      spec.window_s = std::max(60.0, 60 * std::ceil(2 * service / 60));
      sources.emplace_back("service model", fmt::format("{:.3f} s per request, measured: {}; one request per replica "
                                                        "at once (an assumption)",
                                                        service, basis));
    }
    if (w.cold_start_s) {
      spec.cold_start_s = *w.cold_start_s;
      sources.emplace_back("cold start", fmt::format("{:.1f} s, {}", *w.cold_start_s, w.cold_start_basis));
    } else if (arch) {
      spec.load_gb_per_s = options.load_gb_per_s;
      spec.init_s = options.init_s;
      sources.emplace_back("cold start",
                           fmt::format("assumption (no kube_pod_status_ready_time or kube_pod_status_ready for its "
                                       "pods): weights at {} GB/s + {} s initialization",
                                       options.load_gb_per_s, options.init_s));
    } else {
      spec.cold_start_s = options.cold_start_s;
      sources.emplace_back("cold start", fmt::format("assumption: {} s (no kube_pod_status_ready_time or "
                                                     "kube_pod_status_ready for its pods)",
                                                     options.cold_start_s));
    }
    sources.emplace_back("slo", fmt::format("assumption (--serving-slo): {} <= {} s for {:.1f}% of requests",
                                            SloMetricName(spec.slo.metric), spec.slo.seconds, 100 * spec.slo.target));
    if (w.current_replicas)
      sources.emplace_back("replicas today", fmt::format("{}: {}", *w.current_replicas, w.replicas_basis));
    if (w.e2e.present() && !w.e2e.buckets.empty())
      sources.emplace_back(
          "measured latency",
          fmt::format("p50 {:.2f} s, p99 {:.2f} s (vllm:e2e_request_latency_seconds_bucket){}", w.e2e.Quantile(0.5),
                      w.e2e.Quantile(0.99),
                      w.ttft.buckets.empty()
                          ? ""
                          : fmt::format("; TTFT p99 {:.2f} s (vllm:time_to_first_token_seconds_bucket)",
                                        w.ttft.Quantile(0.99))));
    else if (w.engine == ServingEngine::kTriton && w.triton_requests > 0 && w.triton_request_s > 0)
      sources.emplace_back("measured latency", fmt::format("mean {:.3f} s ({})", w.triton_request_s / w.triton_requests,
                                                           Read(w, {"nv_inference_request_duration_us"})));

    if (!w.waiting.empty())
      sources.emplace_back("queueing seen",
                           fmt::format("at most {:.0f} requests waiting in a step (vllm:num_requests_waiting, each "
                                       "pod's step maximum, summed), at most {:.0f} running in one pod "
                                       "(vllm:num_requests_running)",
                                       *std::max_element(w.waiting.begin(), w.waiting.end()), w.max_running_per_pod));
    RequestTrace trace = ArrivalsFromCounts(w, options.seed);
    trace.source = spec.requests_path;
    Result<PreparedService> p = PrepareServiceFromTrace(spec, std::move(trace), catalog);
    if (!p) {
      skip(p.error().message);
      continue;
    }
    p->sources = std::move(sources);
    p->current_replicas = w.current_replicas;
    for (const auto& [figure, text] : p->sources) {
      if (figure == "cold start")
        p->cold_start_basis = w.cold_start_s ? w.cold_start_basis : arch ? "assumption: " + p->cold_start_basis : text;
      if (figure == "service model" && !arch) p->service_basis = text;
    }
    names.insert(name);
    out.services.push_back(*std::move(p));
  }
  return out;
}

}  // namespace gpufit
