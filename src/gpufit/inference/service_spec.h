// The inference services file: what `gpufit inference` and `gpufit plan --inference` read.
//
//   services:
//     - name: chat                      # required; deployment defaults to it
//       namespace: llm                  # default "default"
//       deployment: chat-vllm           # the scaleTargetRef of the emitted HPA / ScaledObject
//       requests: {format: azure-llm, path: conv.csv}      # or generic, or gentd26-qps
//                                        # (+ request_type, default "Generative Requests")
//       seed: 1                          # Poisson draws (gentd26-qps, service samples, holdout)
//       gpu: a100-80gb                   # catalog id: prices and the LLM roofline
//       llm: {model: llama-2-13b}        # + prefill_mfu, decode_mbu, memory_utilization,
//                                        #   max_num_seqs; or prefill_tokens_per_s, tpot_ms and
//                                        #   max_concurrent_sequences given directly
//       service_time: {samples_path: model_predict.csv}    # non-LLM: measured ms, or {seconds: S}
//       concurrency: 1                   # non-LLM: requests per replica at once
//       cold_start: {load_gb_per_s: 1, init_s: 30}          # LLM: weights / bandwidth + init;
//                                        # or {seconds: S}, or {samples_path: F} (median of ms)
//       slo: {metric: ttft, seconds: 2, target: 0.99}       # metric ttft | latency | wait
//       window_s: 60                     # gpufit's decision window: >= 60 s and >= twice the
//                                        # mean service time
//       hpa: {target_utilization: 0.7, stabilization_s: 300}
//
// Relative paths are taken from the file's folder; a path starting with `$GPUFIT_DATA/` from
// the environment variable GPUFIT_DATA (default ../shared/data). Errors (kInvalidArgument)
// name the file, the service and the field; unknown fields are errors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/inference/llm_service.h"
#include "gpufit/inference/policies.h"

namespace gpufit {

enum class RequestFormat { kAzureLlm, kGeneric, kGenTd26Qps };

struct InferenceServiceSpec {
  std::string name, kube_namespace = "default", deployment;
  std::string workload_kind = "Deployment";  // the autoscaler's scaleTargetRef kind (StatefulSet from serving metrics)
  RequestFormat format = RequestFormat::kAzureLlm;
  std::string requests_path;
  std::string request_type = "Generative Requests";
  std::uint64_t seed = 1;
  std::string gpu = "a100-80gb";
  // LLM services: an architecture and roofline parameters, or the three figures directly.
  std::optional<std::string> llm_model;
  LlmServingParams llm_params;
  std::optional<LlmServiceModel> llm_direct;
  // Other services: measured service times (ms samples) or one constant.
  std::string service_samples_path;
  double service_s = 0;
  int concurrency = 1;
  // Cold start: a constant, the median of measured load times, or weights / bandwidth + init.
  double cold_start_s = 0;
  std::string cold_start_samples_path;
  double load_gb_per_s = 0, init_s = 0;
  InferenceSlo slo;
  double window_s = 60;
  HpaSettings hpa;
  bool IsLlm() const { return llm_model.has_value() || llm_direct.has_value(); }
};

Result<std::vector<InferenceServiceSpec>> ReadInferenceServices(const std::string& path);

}  // namespace gpufit
