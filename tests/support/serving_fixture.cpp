#include "serving_fixture.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/inference/llm_service.h"
#include "gpufit/ingest/files/request_trace_reader.h"

namespace gpufit::testing {
namespace {

// vLLM's buckets (vllm/v1/metrics/loggers.py).
constexpr std::array kE2eBuckets = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
                                    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
constexpr std::array kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                                     1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
constexpr std::array kTpotBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                     0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
constexpr const char* kPods[] = {"chat-vllm-7d4b9c-x2k4p", "chat-vllm-7d4b9c-q8m3z"};
constexpr const char* kModel = "meta-llama/Llama-2-13b-chat-hf";

struct Histogram {
  std::vector<double> bounds, counts;  // counts per bucket, not cumulative; +Inf last
  double sum = 0, count = 0;
  explicit Histogram(std::vector<double> b) : bounds(std::move(b)), counts(bounds.size() + 1, 0.0) {}
  void Observe(double v, double times = 1) {
    const auto at = std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin();  // le: v <= bound
    counts[static_cast<std::size_t>(at)] += times;
    sum += v * times;
    count += times;
  }
  void Write(std::string& out, const char* name, const std::string& labels, const std::string& t) const {
    double cumulative = 0;
    for (std::size_t i = 0; i <= bounds.size(); ++i) {
      cumulative += counts[i];
      out += fmt::format("{}_bucket{{{},le=\"{}\"}} {} {}\n", name, labels,
                         i < bounds.size() ? fmt::format("{}", bounds[i]) : "+Inf", cumulative, t);
    }
    out += fmt::format("{}_sum{{{}}} {} {}\n{}_count{{{}}} {} {}\n", name, labels, sum, t, name, labels, count, t);
  }
};

struct PodState {
  double stop = 0, length = 0, prompt = 0, generation = 0;
  Histogram e2e{{kE2eBuckets.begin(), kE2eBuckets.end()}}, ttft{{kTtftBuckets.begin(), kTtftBuckets.end()}},
      tpot{{kTpotBuckets.begin(), kTpotBuckets.end()}};
  std::vector<double> ends;  // finish times of its requests so far
};

}  // namespace

Result<ServingFixture> MakeVllmFixture(const std::string& azure_csv, double since_s, double until_s) {
  const Result<RequestTrace> trace = ReadAzureLlmTrace(azure_csv);
  if (!trace) return trace.error();
  const Result<GpuModel> gpu = GpuCatalog::Embedded().Find("a100-80gb");
  if (!gpu) return gpu.error();
  const Result<LlmServiceModel> model =
      RooflineLlmService(*FindLlmArchitecture("llama-2-13b"), *gpu, {}, MeanTokensPerSequence(*trace));
  if (!model) return model.error();

  ServingFixture out;
  out.requests = trace->requests.size();
  out.services_yaml = fmt::format(
      "services:\n  - name: chat\n    namespace: llm\n    deployment: chat-vllm\n"
      "    requests: {{format: azure-llm, path: {}}}\n    gpu: a100-80gb\n    llm: {{model: llama-2-13b}}\n"
      "    cold_start: {{load_gb_per_s: 1.0, init_s: 30}}\n    slo: {{metric: ttft, seconds: 2, target: 0.99}}\n"
      "    window_s: 60\n",
      azure_csv);
  std::string success = "# TYPE vllm:request_success counter\n", prompt = "# TYPE vllm:prompt_tokens counter\n",
              generation = "# TYPE vllm:generation_tokens counter\n",
              e2e = "# TYPE vllm:e2e_request_latency_seconds histogram\n",
              ttft = "# TYPE vllm:time_to_first_token_seconds histogram\n",
              tpot = "# TYPE vllm:time_per_output_token_seconds histogram\n",
              running = "# TYPE vllm:num_requests_running gauge\n",
              waiting = "# TYPE vllm:num_requests_waiting gauge\n", owner = "# TYPE kube_pod_owner gauge\n",
              rs_owner = "# TYPE kube_replicaset_owner gauge\n", created = "# TYPE kube_pod_created gauge\n",
              ready_time = "# TYPE kube_pod_status_ready_time gauge\n", ready = "# TYPE kube_pod_status_ready gauge\n",
              replicas = "# TYPE kube_deployment_status_replicas gauge\n";
  std::array<PodState, 2> pods;
  const double created_s = since_s - 3600;
  std::size_t next = 0;
  for (double s = since_s - 300; s <= until_s; s += 15) {
    const std::string t = fmt::format("{}", static_cast<long long>(s));
    for (; next < trace->requests.size() && since_s + 1 + trace->requests[next].arrival_s <= s; ++next) {
      const Request& r = trace->requests[next];
      PodState& p = pods[next % 2];
      (next % 7 == 6 ? p.length : p.stop) += 1;
      p.prompt += r.input_tokens;
      p.generation += r.output_tokens;
      const double prefill = model->PrefillSeconds(r.input_tokens);
      p.ttft.Observe(prefill);
      p.e2e.Observe(prefill + r.output_tokens * model->tpot_s);
      if (r.output_tokens > 1) p.tpot.Observe(model->tpot_s, r.output_tokens - 1);
      p.ends.push_back(since_s + 1 + r.arrival_s + prefill + r.output_tokens * model->tpot_s);
    }
    for (std::size_t i = 0; i < 2; ++i) {
      PodState& p = pods[i];
      const std::string l = fmt::format(R"(namespace="llm",pod="{}",model_name="{}",engine="0")", kPods[i], kModel);
      success += fmt::format("vllm:request_success_total{{{},finished_reason=\"stop\"}} {} {}\n", l, p.stop, t);
      success += fmt::format("vllm:request_success_total{{{},finished_reason=\"length\"}} {} {}\n", l, p.length, t);
      prompt += fmt::format("vllm:prompt_tokens_total{{{}}} {} {}\n", l, p.prompt, t);
      generation += fmt::format("vllm:generation_tokens_total{{{}}} {} {}\n", l, p.generation, t);
      p.e2e.Write(e2e, "vllm:e2e_request_latency_seconds", l, t);
      p.ttft.Write(ttft, "vllm:time_to_first_token_seconds", l, t);
      p.tpot.Write(tpot, "vllm:time_per_output_token_seconds", l, t);
      const auto busy = std::count_if(p.ends.begin(), p.ends.end(), [&](double end) { return end > s; });
      running += fmt::format("vllm:num_requests_running{{{}}} {} {}\n", l, busy, t);
      waiting += fmt::format("vllm:num_requests_waiting{{{}}} 0 {}\n", l, t);
      const std::string k = fmt::format(R"(namespace="llm",pod="{}",uid="uid-chat-{}")", kPods[i], i);
      owner += fmt::format(
          "kube_pod_owner{{{},owner_kind=\"ReplicaSet\",owner_name=\"chat-vllm-7d4b9c\",owner_is_controller=\"true\"}} "
          "1 {}\n",
          k, t);
      created += fmt::format("kube_pod_created{{{}}} {} {}\n", k, static_cast<long long>(created_s), t);
      ready_time += fmt::format("kube_pod_status_ready_time{{{}}} {} {}\n", k,
                                static_cast<long long>(created_s + out.cold_start_s), t);
      ready += fmt::format("kube_pod_status_ready{{{},condition=\"true\"}} 1 {}\n", k, t);
      ready += fmt::format("kube_pod_status_ready{{{},condition=\"false\"}} 0 {}\n", k, t);
    }
    rs_owner += fmt::format(
        "kube_replicaset_owner{{namespace=\"llm\",replicaset=\"chat-vllm-7d4b9c\",owner_kind=\"Deployment\","
        "owner_name=\"chat-vllm\",owner_is_controller=\"true\"}} 1 {}\n",
        t);
    replicas += fmt::format("kube_deployment_status_replicas{{namespace=\"llm\",deployment=\"chat-vllm\"}} 2 {}\n", t);
  }
  out.openmetrics = success + prompt + generation + e2e + ttft + tpot + running + waiting + owner + rs_owner + created +
                    ready_time + ready + replicas;
  return out;
}

}  // namespace gpufit::testing
