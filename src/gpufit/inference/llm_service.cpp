#include "gpufit/inference/llm_service.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace gpufit {
namespace {

// Hugging Face config.json of each model: num_hidden_layers, num_key_value_heads,
// hidden_size / num_attention_heads; parameter counts from the model cards.
const std::array<LlmArchitecture, 3> kArchitectures = {{
    {.name = "llama-2-13b", .params_billion = 13.0, .layers = 40, .kv_heads = 40, .head_dim = 128},
    {.name = "llama-3.1-8b", .params_billion = 8.03, .layers = 32, .kv_heads = 8, .head_dim = 128},
    {.name = "llama-3.1-70b", .params_billion = 70.6, .layers = 80, .kv_heads = 8, .head_dim = 128},
}};

bool InUnit(double x) { return x > 0 && x <= 1; }

}  // namespace

Result<LlmArchitecture> FindLlmArchitecture(std::string_view name) {
  std::string known;
  for (const LlmArchitecture& a : kArchitectures) {
    if (a.name == name) return a;
    known += (known.empty() ? "" : ", ") + a.name;
  }
  return NotFound("unknown LLM '{}' (known: {})", name, known);
}

Result<LlmServiceModel> RooflineLlmService(const LlmArchitecture& arch, const GpuModel& gpu,
                                           const LlmServingParams& params, double tokens_per_sequence) {
  if (!InUnit(params.prefill_mfu) || !InUnit(params.decode_mbu) || !InUnit(params.memory_utilization)) {
    return InvalidArgument("LLM service model: MFU, MBU and memory utilization must be in (0, 1]");
  }
  if (!(tokens_per_sequence > 0) || params.max_num_seqs < 1) {
    return InvalidArgument("LLM service model: tokens per sequence and max_num_seqs must be > 0");
  }
  if (!gpu.memory_bandwidth_gb_s || !gpu.bf16_tflops) {
    return InvalidArgument("GPU '{}' has no memory bandwidth or BF16 figure in the catalog", gpu.id);
  }
  const double weights = arch.params_billion * 1e9 * arch.bytes_per_param;
  const double budget = static_cast<double>(gpu.memory.value) * 1024 * 1024 * params.memory_utilization;
  if (weights >= budget) {
    return InvalidArgument("{} needs {:.1f} GB of weights; {} offers {:.1f} GB at memory utilization {}", arch.name,
                           weights / 1e9, gpu.id, budget / 1e9, params.memory_utilization);
  }
  const double kv_per_sequence = tokens_per_sequence * arch.KvBytesPerToken();
  const double fit = std::floor((budget - weights) / kv_per_sequence);
  if (fit < 1) {
    return InvalidArgument("{} on {}: the KV cache left after the weights holds no sequence of {:.0f} tokens",
                           arch.name, gpu.id, tokens_per_sequence);
  }
  LlmServiceModel m;
  m.max_concurrent_sequences = static_cast<int>(std::min<double>(fit, params.max_num_seqs));
  m.prefill_tokens_per_s = *gpu.bf16_tflops * 1e12 * params.prefill_mfu / (2 * arch.params_billion * 1e9);
  m.tpot_s =
      (weights + m.max_concurrent_sequences * kv_per_sequence) / (*gpu.memory_bandwidth_gb_s * 1e9 * params.decode_mbu);
  return m;
}

double MeanTokensPerSequence(const RequestTrace& trace) {
  if (trace.requests.empty()) return 0;
  double sum = 0;
  for (const Request& r : trace.requests) sum += r.input_tokens + r.output_tokens;
  return sum / static_cast<double>(trace.requests.size());
}

ServiceTimes LlmServiceTimes(const RequestTrace& trace, const LlmServiceModel& model) {
  ServiceTimes t;
  t.service_s.reserve(trace.requests.size());
  t.prefill_s.reserve(trace.requests.size());
  for (const Request& r : trace.requests) {
    t.prefill_s.push_back(model.PrefillSeconds(r.input_tokens));
    t.service_s.push_back(model.ServiceSeconds(r.input_tokens, r.output_tokens));
  }
  return t;
}

}  // namespace gpufit
