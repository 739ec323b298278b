// NVIDIA Triton Inference Server: labels model and version (docs/user_guide/metrics.md of
// triton-inference-server/server: "Inference Request Metrics"; the latency counters are on by
// default, `--metrics-config counter_latencies`). Metrics read:
//   nv_inference_request_success            counter, successful requests (a batch counts 1);
//                                           discovers the services
//   nv_inference_request_duration_us        counter, microseconds, end-to-end handling
//   nv_inference_queue_duration_us          counter, microseconds, in the scheduling queue
//   nv_inference_compute_infer_duration_us  counter, microseconds, executing the model
//
// Into ServingWorkload: requests and latency_count (request_success), latency_sum_s (request
// duration, in seconds) per step; triton_requests, triton_request_s, triton_queue_s and
// triton_compute_s (their increases over the range, seconds).
// Queries: last_over_time(COUNTER[W]) on the grid (engine.h).
#include <string>
#include <utility>

#include "gpufit/ingest/prometheus/serving/engine.h"
#include "gpufit/ingest/prometheus/serving/workloads.h"

namespace gpufit::serving {
namespace {

constexpr ServingEngine kEngine = ServingEngine::kTriton;
constexpr const char* kModel = "model";
constexpr const char* kSuccess = "nv_inference_request_success";
constexpr double kSecondsPerMicrosecond = 1e-6;

// Asked in this order after discovery.
const std::pair<const char*, std::vector<PromSeries> ServingAnswers::*> kCounters[] = {
    {"nv_inference_request_duration_us", &ServingAnswers::triton_request_us},
    {"nv_inference_queue_duration_us", &ServingAnswers::triton_queue_us},
    {"nv_inference_compute_infer_duration_us", &ServingAnswers::triton_compute_us},
};

Result<bool> Discover(const Asker& ask, const std::vector<ServingQuery>&, ServingAnswers& a) {
  auto r = ask.Counter(kSuccess);
  if (!r) return r.error();
  a.triton_success = std::move(*r);
  return !a.triton_success.empty();
}

void Namespaces(const ServingAnswers& a, const std::vector<ServingQuery>&, std::set<std::string>& into) {
  PodNamespaces(a.triton_success, into);
}

Result<void> Read(const Asker& ask, ServingAnswers& a) {
  for (const auto& [metric, answer] : kCounters) {
    auto r = ask.Counter(metric);
    if (!r) return r.error();
    a.*answer = std::move(*r);
  }
  return {};
}

void Map(const ServingAnswers& a, const std::vector<ServingQuery>&, Mapper& m) {
  using W = ServingWorkload;
  m.Counters(a.triton_success, kEngine, kModel, kSuccess, [](W& w, const Steps& x) {
    AddTo(w.requests, x);
    AddTo(w.latency_count, x);
    w.triton_requests += Sum(x);
  });
  m.Existing(
      a.triton_request_us, kEngine, kModel, "nv_inference_request_duration_us",
      [](W& w, const Steps& x) {
        AddTo(w.latency_sum_s, x);
        w.triton_request_s += Sum(x);
      },
      kSecondsPerMicrosecond);
  m.Existing(
      a.triton_queue_us, kEngine, kModel, "nv_inference_queue_duration_us",
      [](W& w, const Steps& x) { w.triton_queue_s += Sum(x); }, kSecondsPerMicrosecond);
  m.Existing(
      a.triton_compute_us, kEngine, kModel, "nv_inference_compute_infer_duration_us",
      [](W& w, const Steps& x) { w.triton_compute_s += Sum(x); }, kSecondsPerMicrosecond);
}

}  // namespace

extern const ServingEngineReader kTritonReader{kEngine, "triton", Discover, Namespaces, Read, Map};

}  // namespace gpufit::serving
