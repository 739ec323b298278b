// vLLM: labels model_name (the served model name) and engine (engine index); the V1 engine's
// PrometheusStatLogger (vllm/v1/metrics/loggers.py; the V0 engine's vllm/engine/metrics.py has
// the same names with labels model_name only). Metrics read (names, types, units and labels
// checked against those sources):
//   vllm:request_success_total          counter, requests finished (+ label finished_reason:
//                                       stop, length, abort); counted when a request ends.
//                                       Discovers the services; every finished_reason summed.
//   vllm:prompt_tokens_total            counter, prefill (prompt) tokens
//   vllm:generation_tokens_total        counter, generated (output) tokens
//   vllm:e2e_request_latency_seconds    histogram, seconds, one observation per finished
//                                       request; buckets 0.3 0.5 0.8 1 1.5 2 2.5 5 10 15 20 30
//                                       40 50 60 120 240 480 960 1920 7680
//   vllm:time_to_first_token_seconds    histogram, seconds, one per request; buckets 0.001
//                                       0.005 0.01 0.02 0.04 0.06 0.08 0.1 0.25 0.5 0.75 1 2.5 5
//                                       7.5 10 20 40 80 160 640 2560
//   vllm:time_per_output_token_seconds  histogram, seconds, one per output token after the
//                                       first (the inter-token interval); buckets 0.01 0.025
//                                       0.05 0.075 0.1 0.15 0.2 0.3 0.4 0.5 0.75 1 2.5 5 7.5 10
//                                       20 40 80
//   vllm:num_requests_running           gauge, requests in the running batch
//   vllm:num_requests_waiting           gauge, requests queued
// (Buckets as vllm/v1/metrics/loggers.py, commit 005a810b, defines them; older V0 releases
// used shorter lists: the reader takes the `le` labels it is given.)
//
// Into ServingWorkload: requests (request_success_total), prompt_tokens, generation_tokens,
// latency_sum_s / latency_count (the e2e histogram's _sum / _count) per step; e2e, ttft, tpot
// (each histogram's _sum, _count and buckets over the range); running and waiting (gauges,
// per step the sum over pods of each pod's step maximum) and max_running_per_pod.
// Queries: engine.h's shapes; the counters and _sum/_count with last_over_time, the buckets
// with increase over the range, the gauges with max_over_time.
#include <string>

#include "gpufit/ingest/prometheus/serving/engine.h"
#include "gpufit/ingest/prometheus/serving/workloads.h"

namespace gpufit::serving {
namespace {

constexpr ServingEngine kEngine = ServingEngine::kVllm;
constexpr const char* kModel = "model_name";
constexpr const char* kSuccess = "vllm:request_success_total";

struct Query {
  enum class Shape { kCounter, kRangeIncrease, kGaugeMax } shape;
  const char* metric;
  std::vector<PromSeries> ServingAnswers::*answer;
};

// Asked in this order after discovery.
const Query kQueries[] = {
    {Query::Shape::kCounter, "vllm:prompt_tokens_total", &ServingAnswers::vllm_prompt},
    {Query::Shape::kCounter, "vllm:generation_tokens_total", &ServingAnswers::vllm_generation},
    {Query::Shape::kCounter, "vllm:e2e_request_latency_seconds_sum", &ServingAnswers::vllm_e2e_sum},
    {Query::Shape::kCounter, "vllm:e2e_request_latency_seconds_count", &ServingAnswers::vllm_e2e_count},
    {Query::Shape::kCounter, "vllm:time_to_first_token_seconds_sum", &ServingAnswers::vllm_ttft_sum},
    {Query::Shape::kCounter, "vllm:time_to_first_token_seconds_count", &ServingAnswers::vllm_ttft_count},
    {Query::Shape::kCounter, "vllm:time_per_output_token_seconds_sum", &ServingAnswers::vllm_tpot_sum},
    {Query::Shape::kCounter, "vllm:time_per_output_token_seconds_count", &ServingAnswers::vllm_tpot_count},
    {Query::Shape::kRangeIncrease, "vllm:e2e_request_latency_seconds_bucket", &ServingAnswers::vllm_e2e_bucket},
    {Query::Shape::kRangeIncrease, "vllm:time_to_first_token_seconds_bucket", &ServingAnswers::vllm_ttft_bucket},
    {Query::Shape::kRangeIncrease, "vllm:time_per_output_token_seconds_bucket", &ServingAnswers::vllm_tpot_bucket},
    {Query::Shape::kGaugeMax, "vllm:num_requests_running", &ServingAnswers::vllm_running},
    {Query::Shape::kGaugeMax, "vllm:num_requests_waiting", &ServingAnswers::vllm_waiting},
};

Result<bool> Discover(const Asker& ask, const std::vector<ServingQuery>&, ServingAnswers& a) {
  auto r = ask.Counter(kSuccess);
  if (!r) return r.error();
  a.vllm_success = std::move(*r);
  return !a.vllm_success.empty();
}

void Namespaces(const ServingAnswers& a, const std::vector<ServingQuery>&, std::set<std::string>& into) {
  PodNamespaces(a.vllm_success, into);
}

Result<void> Read(const Asker& ask, ServingAnswers& a) {
  for (const Query& q : kQueries) {
    auto r = q.shape == Query::Shape::kCounter         ? ask.Counter(q.metric)
             : q.shape == Query::Shape::kRangeIncrease ? ask.IncreaseOverRange(q.metric)
                                                       : ask.GaugeMax(q.metric);
    if (!r) return r.error();
    a.*q.answer = std::move(*r);
  }
  return {};
}

void Map(const ServingAnswers& a, const std::vector<ServingQuery>&, Mapper& m) {
  using W = ServingWorkload;
  m.Counters(a.vllm_success, kEngine, kModel, kSuccess, [](W& w, const Steps& x) { AddTo(w.requests, x); });
  m.Existing(a.vllm_prompt, kEngine, kModel, "vllm:prompt_tokens_total",
             [](W& w, const Steps& x) { AddTo(w.prompt_tokens, x); });
  m.Existing(a.vllm_generation, kEngine, kModel, "vllm:generation_tokens_total",
             [](W& w, const Steps& x) { AddTo(w.generation_tokens, x); });
  m.Existing(a.vllm_e2e_sum, kEngine, kModel, "vllm:e2e_request_latency_seconds_sum", [](W& w, const Steps& x) {
    AddTo(w.latency_sum_s, x);
    w.e2e.sum += Sum(x);
  });
  m.Existing(a.vllm_e2e_count, kEngine, kModel, "vllm:e2e_request_latency_seconds_count", [](W& w, const Steps& x) {
    AddTo(w.latency_count, x);
    w.e2e.count += Sum(x);
  });
  m.Existing(a.vllm_ttft_sum, kEngine, kModel, "vllm:time_to_first_token_seconds_sum",
             [](W& w, const Steps& x) { w.ttft.sum += Sum(x); });
  m.Existing(a.vllm_ttft_count, kEngine, kModel, "vllm:time_to_first_token_seconds_count",
             [](W& w, const Steps& x) { w.ttft.count += Sum(x); });
  m.Existing(a.vllm_tpot_sum, kEngine, kModel, "vllm:time_per_output_token_seconds_sum",
             [](W& w, const Steps& x) { w.tpot.sum += Sum(x); });
  m.Existing(a.vllm_tpot_count, kEngine, kModel, "vllm:time_per_output_token_seconds_count",
             [](W& w, const Steps& x) { w.tpot.count += Sum(x); });
  m.Buckets(a.vllm_e2e_bucket, kEngine, kModel, &W::e2e, "vllm:e2e_request_latency_seconds_bucket");
  m.Buckets(a.vllm_ttft_bucket, kEngine, kModel, &W::ttft, "vllm:time_to_first_token_seconds_bucket");
  m.Buckets(a.vllm_tpot_bucket, kEngine, kModel, &W::tpot, "vllm:time_per_output_token_seconds_bucket");
  m.Gauges(a.vllm_running, kEngine, kModel, &W::running, "vllm:num_requests_running", &W::max_running_per_pod);
  m.Gauges(a.vllm_waiting, kEngine, kModel, &W::waiting, "vllm:num_requests_waiting");
}

}  // namespace

extern const ServingEngineReader kVllmReader{kEngine, "vllm", Discover, Namespaces, Read, Map};

}  // namespace gpufit::serving
