// CheckServingAnswers (ingest/prometheus/serving.h): every serving series' value must be a
// finite number >= 0 and within the bounds stated there; the first one that is not is bad input,
// named by its metric, labels and time. kube-state-metrics' answers are not checked here.
#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "gpufit/core/rfc3339.h"
#include "gpufit/core/text.h"
#include "gpufit/ingest/prometheus/serving.h"

namespace gpufit {
namespace {

// " '{k="v",...}'" (without __name__, quoted for a message: the labels come from the server);
// "" without labels.
std::string LabelText(const PromSeries& s) {
  std::string out;
  for (const auto& [k, v] : s.labels)
    if (k != "__name__") out += fmt::format("{}{}=\"{}\"", out.empty() ? "" : ",", k, v);
  return out.empty() ? "" : " " + QuoteForMessage("{" + out + "}", 400);
}

Error Bad(const std::string& metric, const PromSeries& s, std::size_t i, const std::string& why) {
  return InvalidArgument("serving series {}{} at {}: value {} {}", metric, LabelText(s), FormatRfc3339(s.time_s[i]),
                         s.value[i], why);
}

// Each value finite, >= 0 and <= `most`; for a counter (`per_s` > 0) each rise between points
// at most `per_s` per second of the time between them (a decrease is a reset: the new value is
// the rise).
Result<void> Check(const std::vector<PromSeries>& series, const std::string& metric, double most, double per_s = 0,
                   const char* unit = "") {
  for (const PromSeries& s : series)
    for (std::size_t i = 0; i < s.value.size() && i < s.time_s.size(); ++i) {
      const double v = s.value[i];
      if (!std::isfinite(v)) return Bad(metric, s, i, "is not a finite number");
      if (v < 0) return Bad(metric, s, i, "is negative");
      if (v > most) return Bad(metric, s, i, fmt::format("is above {:g}{}, the most gpufit accepts", most, unit));
      if (per_s > 0 && i > 0) {
        const double rise = v >= s.value[i - 1] ? v - s.value[i - 1] : v;
        const double dt = std::max(1.0, s.time_s[i] - s.time_s[i - 1]);
        if (rise > per_s * dt)
          return Bad(metric, s, i,
                     fmt::format("rises by {:g} in {:g} s: more than {:g}{} per second, the most gpufit accepts", rise,
                                 dt, per_s, unit));
      }
    }
  return {};
}

}  // namespace

Result<void> CheckServingAnswers(const ServingAnswers& a, const std::vector<ServingQuery>& queries) {
  const double kAny = kMaxServingCounter;
  struct Item {
    const std::vector<PromSeries>* series;
    const char* metric;
    double most, per_s;
    const char* unit;
  };
  const Item items[] = {
      {&a.vllm_success, "vllm:request_success_total", kAny, kMaxServingRequestsPerS, " requests"},
      {&a.vllm_prompt, "vllm:prompt_tokens_total", kAny, kMaxServingTokensPerS, " tokens"},
      {&a.vllm_generation, "vllm:generation_tokens_total", kAny, kMaxServingTokensPerS, " tokens"},
      {&a.vllm_e2e_sum, "vllm:e2e_request_latency_seconds_sum", kAny, 0, ""},
      {&a.vllm_e2e_count, "vllm:e2e_request_latency_seconds_count", kAny, kMaxServingRequestsPerS, " requests"},
      {&a.vllm_ttft_sum, "vllm:time_to_first_token_seconds_sum", kAny, 0, ""},
      {&a.vllm_ttft_count, "vllm:time_to_first_token_seconds_count", kAny, kMaxServingRequestsPerS, " requests"},
      {&a.vllm_tpot_sum, "vllm:time_per_output_token_seconds_sum", kAny, 0, ""},
      {&a.vllm_tpot_count, "vllm:time_per_output_token_seconds_count", kAny, kMaxServingTokensPerS, " tokens"},
      {&a.vllm_e2e_bucket, "vllm:e2e_request_latency_seconds_bucket", kAny, 0, ""},
      {&a.vllm_ttft_bucket, "vllm:time_to_first_token_seconds_bucket", kAny, 0, ""},
      {&a.vllm_tpot_bucket, "vllm:time_per_output_token_seconds_bucket", kAny, 0, ""},
      {&a.vllm_running, "vllm:num_requests_running", kMaxServingConcurrent, 0, " requests"},
      {&a.vllm_waiting, "vllm:num_requests_waiting", kMaxServingConcurrent, 0, " requests"},
      {&a.triton_success, "nv_inference_request_success", kAny, kMaxServingRequestsPerS, " requests"},
      {&a.triton_request_us, "nv_inference_request_duration_us", kAny, 0, ""},
      {&a.triton_queue_us, "nv_inference_queue_duration_us", kAny, 0, ""},
      {&a.triton_compute_us, "nv_inference_compute_infer_duration_us", kAny, 0, ""},
  };
  for (const Item& it : items)
    if (Result<void> r = Check(*it.series, it.metric, it.most, it.per_s, it.unit); !r) return r;
  for (std::size_t q = 0; q < queries.size(); ++q) {
    if (q < a.query_rates.size())
      if (Result<void> r = Check(a.query_rates[q], "--serving-query " + QuoteForMessage(queries[q].requests_per_s),
                                 kMaxServingRequestsPerS, 0, " requests per second");
          !r)
        return r;
    if (q < a.query_latencies.size())
      if (Result<void> r = Check(a.query_latencies[q], "--serving-latency " + QuoteForMessage(queries[q].latency_s),
                                 kMaxServiceTimeS, 0, " s per request");
          !r)
        return r;
  }
  return {};
}

}  // namespace gpufit
