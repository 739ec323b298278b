// Inference services built from serving metrics (ingest/prometheus/serving.h): per discovered
// workload, the requests rebuilt from its per-step counts, its service model and cold start,
// ready for the replica study (inference_study.h). Every figure carries where it came from
// (PreparedService::sources): the metric names, or the assumption taken.
//
// Arrivals. Step k's finished-request count N_k (the counter's increase, rounded; a
// --serving-query rate r_k gives r_k * step, rounded down and up at random with the fraction as
// the chance, so the expected count is kept) becomes N_k arrivals drawn independently and
// uniformly within the step, seeded. Given its count, a Poisson process of constant rate puts
// its arrivals exactly so (uniform order statistics), so this assumes the rate is constant
// within a step; bursts shorter than a step are smoothed. vLLM and Triton count a request when
// it finishes: the rebuilt arrivals lag the real ones by the request's latency (seconds against
// steps of a minute).
//
// Tokens (vLLM). The step's increases of vllm:prompt_tokens_total and
// vllm:generation_tokens_total are shared among the step's requests as evenly as whole tokens
// allow (the remainder one token each to the first requests), so each step's token totals, and
// with them the roofline's service time summed over the step, are kept exactly. Tokens counted
// in a step without finished requests carry to the next step that has some (vLLM counts tokens
// as it processes them, a request's count when it ends); tokens after the last finished request
// are dropped. Per-request sizes within a step are lost: the step's mean stands for each.
//
// Service model. vLLM whose model_name names an architecture gpufit knows (llm_service.h:
// the last path component, lower case, without a leading "meta-", starting with the
// architecture's name followed by its end, '-' or '_'; e.g. meta-llama/Llama-2-13b-chat-hf ->
// llama-2-13b): the roofline on the plan's GPU, as the services YAML would. Otherwise the
// measured histograms: prefill tokens per second = the range's prompt tokens / the sum of its
// times to first token (which include queueing, so a lower bound), TPOT = the mean of
// vllm:time_per_output_token_seconds, sequences per replica = the most
// vllm:num_requests_running one pod reported (what it was seen to hold, not its limit).
// Triton: service time = (request - queue duration) / requests over the range, else compute
// duration / requests; one request per replica (an assumption: Triton's instance count is not
// in its metrics). --serving-latency: the request-weighted mean of the query. A workload
// without what its model needs is skipped, with the reason.
//
// Cold start: kube-state-metrics' created-to-ready median (ingest/prometheus/serving/kube.h); else, for a
// known architecture, its weights at `load_gb_per_s` plus `init_s` (the services example's
// assumption); else `cold_start_s` (an assumption). SLO: `slo` for LLMs; for other services
// the same bound on the wait (a TTFT needs an LLM). Window: 60 s, or for other services at
// least twice the mean service time, in whole minutes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpufit/catalog/gpu_catalog.h"
#include "gpufit/core/result.h"
#include "gpufit/inference/inference_study.h"
#include "gpufit/ingest/prometheus/serving.h"

namespace gpufit {

struct ServingStudyOptions {
  std::string gpu = "a100-80gb";  // catalog id: roofline and prices
  InferenceSlo slo;               // ttft <= 2 s for 99%
  std::uint64_t seed = 1;
  double load_gb_per_s = 1, init_s = 30;  // cold start of a known architecture without kube-state-metrics
  double cold_start_s = 60;               // cold start of the rest without kube-state-metrics
};

struct ServingServices {
  std::vector<PreparedService> services;
  std::vector<std::string> skipped;  // "namespace/name: why"
};

// Errors: an unknown GPU; a service time or a replica count past the bounds below
// (kInvalidArgument naming the workload and where the service time came from); those of
// PrepareServiceFromTrace other than a service's own data (a service whose data cannot make a
// study is skipped with the reason instead).
Result<ServingServices> PrepareServingServices(const std::vector<ServingWorkload>& workloads,
                                               const ServingStudyOptions& options,
                                               const GpuCatalog& catalog = GpuCatalog::Embedded());

// Bounds. At most kMaxReplayedRequests requests are rebuilt (about 16 bytes each, and the
// study's simulations take time in proportion): a range holding more is replayed from
// FirstReplayedStep, the earliest step from which the rest of the range holds at most that many
// (each step's count rounded up), and the service's "requests" source says so. A service time
// above kMaxServiceTimeS (prometheus_serving.h: an hour; also a measured vLLM TPOT or TTFT
// mean), Triton queueing longer than its request duration (which includes it), or a busiest step needing more than
// kMaxServingReplicas replicas busy at once (requests per second x service time) is bad input.
inline constexpr double kMaxReplayedRequests = 5e6;
inline constexpr double kMaxServingReplicas = 10000;
std::size_t FirstReplayedStep(const ServingWorkload& workload);  // requests.size() when the last step alone is over

// The requests of a workload rebuilt from its per-step counts (header comment), from
// FirstReplayedStep on. Times are seconds since the first arrival; origin_s the first arrival's
// Unix time.
RequestTrace ArrivalsFromCounts(const ServingWorkload& workload, std::uint64_t seed);

// The built-in architecture a served model name names, if any (header comment).
std::optional<std::string> ArchitectureOfModelName(std::string_view served_model_name);

}  // namespace gpufit
