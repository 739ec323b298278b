#include "demo_cluster.h"

#include <cmath>
#include <numbers>

#include "gpufit/core/rng.h"

namespace gpufit::cli {
namespace {

// The demo's jobs (the fields of docs/training-jobs.md; storage speeds as the defaults).
constexpr const char* kDemoJobs = R"(nodes:
  - {name: h100-spot-0, gpus: 8, gpu_model: h100-80gb, capacity: spot}
  - {name: h100-spot-1, gpus: 8, gpu_model: h100-80gb, capacity: spot}
  - {name: h100-od-0, gpus: 8, gpu_model: h100-80gb, capacity: on-demand}
jobs:
  - name: llm-finetune
    gpus: 8
    gpu_model: h100-80gb
    work_h: 36
    checkpoint_size_gib: 120
    checkpointing: application
  - name: pretrain-gang
    labels: {training.kubeflow.org/job-name: pretrain}
    owner: {kind: PyTorchJob, name: pretrain}
    gpus: 8
    pods: 2
    gpu_model: h100-80gb
    work_h: 80
    checkpoint_size_gib: 600
    deadline_h: 120
  - name: eval-sweep
    gpus: 1
    gpu_model: h100-80gb
    work_h: 4
    checkpoint_write_s: 0
    restore_s: 120
    checkpointing: none
interruptions:
  spot: {band: "5-10%", notice_s: 120}
  gpu_mtbf_h: 50000
)";

// One day of arrivals at rate peak_per_s x (0.55 + 0.45 cos(2 pi (t - 14 h) / 24 h)).
RequestTrace DayOfRequests(double peak_per_s, bool tokens, std::uint64_t seed, const std::string& source) {
  Rng rng(seed);
  RequestTrace trace;
  trace.source = source;
  trace.has_tokens = tokens;
  constexpr double kDay = 86400, kPeakAt = 14 * 3600.0;
  for (double t = rng.Exponential(peak_per_s); t < kDay; t += rng.Exponential(peak_per_s)) {
    const double rate = 0.55 + 0.45 * std::cos(2 * std::numbers::pi * (t - kPeakAt) / kDay);
    if (rng.Unit() >= rate) continue;  // thinning: kept with probability rate(t) / peak
    Request r{.arrival_s = t};
    if (tokens) {
      r.input_tokens = 200 + static_cast<int>(rng.Below(1800));
      r.output_tokens = 50 + static_cast<int>(rng.Below(450));
    }
    trace.requests.push_back(r);
  }
  if (!trace.requests.empty()) {  // arrivals count from the first request (model/request_trace.h)
    const double first = trace.requests.front().arrival_s;
    for (Request& r : trace.requests) r.arrival_s -= first;
    trace.origin_s = first;
  }
  return trace;
}

}  // namespace

Result<TrainingWorkload> DemoTrainingJobs() { return ParseTrainingWorkload(kDemoJobs, "demo training jobs"); }

Result<std::vector<PreparedService>> DemoServices(const GpuCatalog& catalog, std::uint64_t seed) {
  InferenceServiceSpec chat;
  chat.name = "chat";
  chat.kube_namespace = "llm";
  chat.deployment = "chat-vllm";
  chat.gpu = "h100-80gb";
  chat.llm_model = "llama-2-13b";
  chat.load_gb_per_s = 1;
  chat.init_s = 30;
  chat.slo = {.metric = SloMetric::kTtft, .seconds = 2, .target = 0.99};
  chat.window_s = 300;
  chat.seed = seed;
  InferenceServiceSpec image;  // image generation: seconds per request, one at a time
  image.name = "image-gen";
  image.kube_namespace = "genai";
  image.deployment = "image-gen";
  image.gpu = "h100-80gb";
  image.service_s = 5.0;
  image.concurrency = 1;
  image.cold_start_s = 20;
  image.slo = {.metric = SloMetric::kLatency, .seconds = 15, .target = 0.99};
  image.window_s = 300;
  image.seed = seed + 1;
  std::vector<PreparedService> out;
  for (auto& [spec, peak, tokens] :
       {std::tuple{image, 0.6, false}, std::tuple{chat, 1.0, true}}) {
    Result<PreparedService> p =
        PrepareServiceFromTrace(spec, DayOfRequests(peak, tokens, spec.seed, "demo (generated day of " + spec.name + " requests)"), catalog);
    if (!p) return p.error();
    out.push_back(std::move(*p));
  }
  return out;
}

}  // namespace gpufit::cli
