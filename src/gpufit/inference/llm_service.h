// Service time of an LLM request on one replica, from a roofline model of the GPU.
//
// A request's time on a replica has two phases (Patel et al., "Splitwise", ISCA 2024):
//  * prefill (prompt) is compute-bound: about 2 FLOPs per parameter per prompt token, so
//      prefill_s = input_tokens * 2 * params / (peak dense BF16 FLOP/s * MFU);
//  * decode is memory-bandwidth-bound: every step reads the weights and the KV cache of the
//    batch, so the time per output token (TPOT) at a full batch is
//      tpot_s = (weight bytes + max_seqs * tokens_per_sequence * kv_bytes_per_token)
//               / (peak bandwidth * bandwidth efficiency (MBU)).
//  * A replica holds at most max_seqs sequences at once: the KV memory left after the
//    weights (vLLM's default gpu_memory_utilization 0.9 of the GPU) divided by the KV bytes
//    of a mean sequence, capped by vLLM's default max_num_seqs 256.
//      kv_bytes_per_token = 2 (K and V) * layers * kv_heads * head_dim * bytes per element.
//  * service_s = prefill_s + output_tokens * tpot_s; time to first token = wait + prefill_s.
//
// Defaults and their sources:
//  * MBU 0.77: vLLM decoding Llama-3.1-8B alone on an A100 reached about 77% of the
//    bandwidth ceiling (johnmusgrave.com/p/vllm-throughput-latency-sweep-on); real serving
//    stacks land at 60-85% (open-source-ai.tech glossary, "model bandwidth utilization").
//  * MFU 0.5 for prefill: an assumption (no measurement verified here); override it.
//  * Peak bandwidth and BF16 TFLOPS: data/gpu_catalog.yaml (datasheets).
//  * Architectures: the models' Hugging Face config.json (layers, KV heads, head size).
// Simplifications, stated: TPOT is taken at a full batch for every request (conservative
// when the replica is not full), prefill ignores attention's quadratic term and the
// interference of prefills with running decodes, weights are BF16 (2 bytes).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/model/request_trace.h"

namespace gpufit {

struct LlmArchitecture {
  std::string name;
  double params_billion = 0;
  int layers = 0;
  int kv_heads = 0;  // key/value heads (grouped-query attention); = attention heads without GQA
  int head_dim = 0;
  double bytes_per_param = 2;  // BF16
  double bytes_per_kv = 2;     // BF16 KV cache
  double KvBytesPerToken() const { return 2.0 * layers * kv_heads * head_dim * bytes_per_kv; }
};

// Built-in architectures: llama-2-13b, llama-3.1-8b, llama-3.1-70b. kNotFound lists them.
Result<LlmArchitecture> FindLlmArchitecture(std::string_view name);

struct LlmServingParams {
  double prefill_mfu = 0.5;
  double decode_mbu = 0.77;
  double memory_utilization = 0.9;  // vLLM gpu_memory_utilization default
  int max_num_seqs = 256;           // vLLM max_num_seqs default
};

struct LlmServiceModel {
  double prefill_tokens_per_s = 0;
  double tpot_s = 0;  // seconds per output token
  int max_concurrent_sequences = 1;
  double PrefillSeconds(int input_tokens) const { return input_tokens / prefill_tokens_per_s; }
  double ServiceSeconds(int input_tokens, int output_tokens) const {
    return PrefillSeconds(input_tokens) + output_tokens * tpot_s;
  }
};

// The roofline model of `arch` on one `gpu` for sequences of `tokens_per_sequence` (prompt
// plus output) on average. Errors (kInvalidArgument): the GPU lacks bandwidth or BF16
// figures, the weights do not fit in the memory budget, not one sequence fits, a parameter
// out of range (MFU, MBU, memory utilization in (0, 1]; tokens_per_sequence > 0).
Result<LlmServiceModel> RooflineLlmService(const LlmArchitecture& arch, const GpuModel& gpu,
                                           const LlmServingParams& params, double tokens_per_sequence);

// Mean prompt plus output tokens of a trace's requests (0 for an empty trace).
double MeanTokensPerSequence(const RequestTrace& trace);

// Per request of `trace`: service seconds and prefill seconds under `model`.
struct ServiceTimes {
  std::vector<double> service_s;
  std::vector<double> prefill_s;  // empty for services without a prefill phase
};
ServiceTimes LlmServiceTimes(const RequestTrace& trace, const LlmServiceModel& model);

}  // namespace gpufit
