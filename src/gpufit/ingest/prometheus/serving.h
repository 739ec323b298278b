// Inference services discovered from the metrics their serving engines export, read per step
// from a Prometheus server, with the Kubernetes workload each one runs as (kube-state-metrics).
//
// The engines (vLLM, NVIDIA Triton, a user's PromQL) are one file each under ingest/serving/,
// behind serving/engine.h (the overview, the query shapes) and its registry; each engine's
// file documents the metrics it reads (names, types, units, labels and their sources).
// Shared by all: serving/workloads.h (per-step counter increases with Prometheus's reset
// rule, gauges, histogram buckets, summed per workload) and serving/kube.h (owners, replicas
// and cold starts from kube-state-metrics). Discovery runs first, for every engine; a server
// where none finds services costs those queries (two without --serving-query) and yields none.
// Errors: those of QueryRange. Malformed values (negative or non-finite counters) are skipped.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/ingest/align.h"
#include "gpufit/ingest/prometheus/client.h"
#include "gpufit/ingest/prometheus/telemetry.h"

namespace gpufit {

// One per engine of serving/registry.cpp.
enum class ServingEngine { kVllm, kTriton, kQuery };
const char* ServingEngineName(ServingEngine e);  // "vllm", "triton", "query"

// A user's PromQL for an engine gpufit does not know (`--serving-query NAME=PROMQL`):
// `requests_per_s` evaluates to requests per second (all series summed), `latency_s` (may be
// empty) to mean seconds per request. `name` is "namespace/deployment" or a deployment name.
struct ServingQuery {
  std::string name;
  std::string requests_per_s;
  std::string latency_s;
};

// A histogram's increase over the range, summed over a workload's series.
struct HistogramTotal {
  std::vector<std::pair<double, double>> buckets;  // (upper bound `le`, cumulative count), ascending; +Inf last
  double sum = 0, count = 0;                       // of _sum and _count
  bool present() const { return count > 0; }
  // The q-quantile as Prometheus's histogram_quantile computes it (linear within a bucket, the
  // highest finite bound when it falls in +Inf); 0 without buckets. Precondition: q in [0, 1].
  double Quantile(double q) const;
  double Mean() const { return count > 0 ? sum / count : 0; }
};

// One serving workload (one model served by one Kubernetes workload), per step of the grid:
// step k covers (grid.start_s + (k - 1) step, grid.start_s + k step].
struct ServingWorkload {
  ServingEngine engine = ServingEngine::kVllm;
  std::string kube_namespace;
  std::string owner_kind, owner_name;  // "Deployment", "StatefulSet", "ReplicaSet", ...; "" without KSM
  std::string owner_basis;             // how the owner was found, in words
  std::string model;                   // model_name (vLLM), model (Triton), the query's name
  std::vector<std::string> pods;       // "namespace/pod"
  GridSpec grid;
  std::vector<double> requests;                          // finished requests per step
  std::vector<double> prompt_tokens, generation_tokens;  // per step (vLLM; empty otherwise)
  std::vector<double> latency_sum_s, latency_count;      // per step: e2e latency (vLLM), request duration (Triton)
  std::vector<double> running, waiting;                  // per step: sum over pods of each pod's step maximum (vLLM)
  double max_running_per_pod = 0;                        // the most requests one pod ran at once (vLLM)
  HistogramTotal e2e, ttft, tpot;                        // vLLM, over the range
  double triton_requests = 0;                            // nv_inference_request_success increase over the range
  double triton_request_s = 0, triton_queue_s = 0, triton_compute_s = 0;  // increases, seconds
  int counter_resets = 0;
  std::optional<double> cold_start_s;
  std::string cold_start_basis;
  std::optional<int> current_replicas;
  std::string replicas_basis;
  std::vector<std::string> metrics;  // the metric names (or queries) read, for the output
  bool no_series = false;            // a --serving-query that returned no series
  double TotalRequests() const;
};

// Every answer the mapping needs (grid answers start with the baseline point at `since`), by
// engine; each engine's file names its metrics and query shapes.
struct ServingAnswers {
  // serving/vllm.cpp
  std::vector<PromSeries> vllm_success, vllm_prompt, vllm_generation;
  std::vector<PromSeries> vllm_e2e_sum, vllm_e2e_count, vllm_ttft_sum, vllm_ttft_count, vllm_tpot_sum, vllm_tpot_count;
  std::vector<PromSeries> vllm_e2e_bucket, vllm_ttft_bucket, vllm_tpot_bucket;  // one point each
  std::vector<PromSeries> vllm_running, vllm_waiting;
  // serving/triton.cpp
  std::vector<PromSeries> triton_success, triton_request_us, triton_queue_us, triton_compute_us;
  // serving/promql.cpp: they pair with `queries` by index.
  std::vector<std::vector<PromSeries>> query_rates, query_latencies;
  // kube-state-metrics (serving/kube.h): one point each (over the range) except the grid
  // answers pod_ready and the replicas.
  std::vector<PromSeries> pod_owner, replicaset_owner, pod_created, pod_ready_time, pod_ready;
  std::vector<PromSeries> deployment_replicas, statefulset_replicas;
};

// The mapping alone (exposed for tests). `grid` is GridFor's; workloads ordered by namespace,
// owner and model.
std::vector<ServingWorkload> ServingFromSeries(const ServingAnswers& answers, const std::vector<ServingQuery>& queries,
                                               const GridSpec& grid);

// Bounds on serving series (CheckServingAnswers): far above any real server, so that a value
// past them is a broken exporter or query, not traffic, and what follows stays finite and small.
inline constexpr double kMaxServingCounter = 1e18;      // any counter's value (below 2^63)
inline constexpr double kMaxServingRequestsPerS = 1e6;  // one series' requests per second
inline constexpr double kMaxServingTokensPerS = 1e9;    // one series' tokens per second
inline constexpr double kMaxServingConcurrent = 1e6;    // a running / waiting gauge
inline constexpr double kMaxServiceTimeS = 3600;        // one request's service time (an hour)

// Every serving series' value (and a --serving-query's, a --serving-latency's) must be finite,
// >= 0 and within the bounds above; a counter may not rise by more than its per-second bound
// times the seconds between two points (a decrease is a reset, Prometheus's rule, and allowed).
// Errors (kInvalidArgument): the first value that is not, naming the metric (or the flag's
// query), the series' labels and the time.
Result<void> CheckServingAnswers(const ServingAnswers& answers, const std::vector<ServingQuery>& queries);

// Queries the server, checks (CheckServingAnswers) and maps the answers; empty when it has no
// serving metrics.
Result<std::vector<ServingWorkload>> ReadPrometheusServing(const PrometheusOptions& options,
                                                           const TelemetryRange& range,
                                                           const std::vector<ServingQuery>& queries = {});

// Parses `NAME=PROMQL` (--serving-query, --serving-latency). Errors (kInvalidArgument) quote it.
Result<std::pair<std::string, std::string>> ParseNamedQuery(const std::string& flag, const std::string& text);

}  // namespace gpufit
