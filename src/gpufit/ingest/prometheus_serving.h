// Inference services discovered from the metrics their serving engines export, read per step
// from a Prometheus server, with the Kubernetes workload each one runs as (kube-state-metrics).
//
// Engines and the metrics read (names, types, units and labels checked against the sources):
//  * vLLM, labels model_name (the served model name) and engine (engine index); the V1
//    engine's PrometheusStatLogger (vllm/v1/metrics/loggers.py; the V0 engine's
//    vllm/engine/metrics.py has the same names with labels model_name only):
//      vllm:request_success_total          counter, requests finished (+ label finished_reason:
//                                          stop, length, abort); counted when a request ends
//      vllm:prompt_tokens_total            counter, prefill (prompt) tokens
//      vllm:generation_tokens_total        counter, generated (output) tokens
//      vllm:e2e_request_latency_seconds    histogram, seconds, one observation per finished
//                                          request; buckets 0.3 0.5 0.8 1 1.5 2 2.5 5 10 15 20 30
//                                          40 50 60 120 240 480 960 1920 7680
//      vllm:time_to_first_token_seconds    histogram, seconds, one per request; buckets 0.001
//                                          0.005 0.01 0.02 0.04 0.06 0.08 0.1 0.25 0.5 0.75 1 2.5 5
//                                          7.5 10 20 40 80 160 640 2560
//      vllm:time_per_output_token_seconds  histogram, seconds, one per output token after the
//                                          first (the inter-token interval); buckets 0.01 0.025
//                                          0.05 0.075 0.1 0.15 0.2 0.3 0.4 0.5 0.75 1 2.5 5 7.5 10
//                                          20 40 80
//      vllm:num_requests_running           gauge, requests in the running batch
//      vllm:num_requests_waiting           gauge, requests queued
//    (Buckets as vllm/v1/metrics/loggers.py, commit 005a810b, defines them; older V0 releases
//    used shorter lists: the reader takes the `le` labels it is given.)
//  * NVIDIA Triton Inference Server, labels model and version (docs/user_guide/metrics.md of
//    triton-inference-server/server: "Inference Request Metrics"; the latency counters are on
//    by default, `--metrics-config counter_latencies`):
//      nv_inference_request_success            counter, successful requests (a batch counts 1)
//      nv_inference_request_duration_us        counter, microseconds, end-to-end handling
//      nv_inference_queue_duration_us          counter, microseconds, in the scheduling queue
//      nv_inference_compute_infer_duration_us  counter, microseconds, executing the model
//  * Any other engine: a user's PromQL (ServingQuery) giving its requests per second, and
//    optionally a second one giving the mean seconds per request.
//
// Queries (range queries on the grid of prometheus_telemetry.h's GridFor, W = step - 1 ms so
// that each point is the last raw sample of its step): last_over_time(COUNTER[W]) for every
// counter and histogram _sum/_count, evaluated from `since` (a baseline point) to the end of
// the last step; max_over_time(GAUGE[W]) for the two vLLM gauges; the histograms' buckets once
// over the whole range, increase(X_bucket[D]) at `until` with D = until - since. Discovery
// runs first (vllm:request_success_total, nv_inference_request_success and the user's
// queries); a server with none of them costs two queries and yields no services. The
// kube-state-metrics queries are restricted to the serving namespaces ({namespace=~"a|b"}),
// or read the whole cluster when kube_pod_owner has nothing there (kube-state-metrics scraped
// without honorLabels: its labels are exported_namespace / exported_pod).
//
// Counters: the increase of each series over step k is its point at k minus its point at
// k - 1 (the last earlier point across a gap), with Prometheus's reset rule (a decrease means
// the process restarted from 0, so the increase is the new value; counted in
// ServingWorkload::counter_resets). A series' first point counts from 0 only when its pod was
// created within the range (kube_pod_created): a new process starts its counters at 0; a
// series already running at `since` without a baseline point (a gap) is not counted there.
//
// Workloads (kube-state-metrics, docs/metrics/workload/*.md of kubernetes/kube-state-metrics):
//  * pod and namespace: the scrape's `pod`/`namespace` labels (`exported_*` first, as
//    PodKeyFromLabels reads them);
//  * owner: kube_pod_owner{owner_kind, owner_name} (the controller's), and for a ReplicaSet
//    kube_replicaset_owner{replicaset, owner_kind, owner_name}: a Deployment, else the
//    ReplicaSet; a StatefulSet (or any other kind) as named. Without kube_pod_owner the pods
//    of one model in one namespace are one service named after the model;
//  * replicas today: the last kube_deployment_status_replicas{deployment} (or
//    kube_statefulset_status_replicas{statefulset}) in the range;
//  * cold start: the median over the workload's pods of kube_pod_status_ready_time (the Ready
//    condition's lastTransitionTime; kube-state-metrics v2.8.0 and later, PR #1938, only while
//    Ready is true since PR #1971) minus kube_pod_created; without ready_time, for pods
//    created within the range, the end of the first step at which
//    kube_pod_status_ready{condition="true"} is 1 (an upper bound, one step coarse); without
//    either, none (the caller states its assumption).
// Errors: those of QueryRange. Malformed values (negative or non-finite counters) are skipped.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpufit/core/result.h"
#include "gpufit/ingest/align.h"
#include "gpufit/ingest/prometheus_client.h"
#include "gpufit/ingest/prometheus_telemetry.h"

namespace gpufit {

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
  double TotalRequests() const;
};

// Every answer the mapping needs (names as in the header comment; grid answers start with the
// baseline point at `since`). The query answers pair with `queries` by index.
struct ServingAnswers {
  std::vector<PromSeries> vllm_success, vllm_prompt, vllm_generation;
  std::vector<PromSeries> vllm_e2e_sum, vllm_e2e_count, vllm_ttft_sum, vllm_ttft_count, vllm_tpot_sum, vllm_tpot_count;
  std::vector<PromSeries> vllm_e2e_bucket, vllm_ttft_bucket, vllm_tpot_bucket;  // one point each
  std::vector<PromSeries> vllm_running, vllm_waiting;
  std::vector<PromSeries> triton_success, triton_request_us, triton_queue_us, triton_compute_us;
  std::vector<std::vector<PromSeries>> query_rates, query_latencies;
  // kube-state-metrics: one point each (over the range) except the grid answers pod_ready
  // and the replicas.
  std::vector<PromSeries> pod_owner, replicaset_owner, pod_created, pod_ready_time, pod_ready;
  std::vector<PromSeries> deployment_replicas, statefulset_replicas;
};

// The mapping alone (exposed for tests). `grid` is GridFor's; workloads ordered by namespace,
// owner and model.
std::vector<ServingWorkload> ServingFromSeries(const ServingAnswers& answers, const std::vector<ServingQuery>& queries,
                                               const GridSpec& grid);

// Queries the server and maps the answers; empty when it has no serving metrics.
Result<std::vector<ServingWorkload>> ReadPrometheusServing(const PrometheusOptions& options,
                                                           const TelemetryRange& range,
                                                           const std::vector<ServingQuery>& queries = {});

// Parses `NAME=PROMQL` (--serving-query, --serving-latency). Errors (kInvalidArgument) quote it.
Result<std::pair<std::string, std::string>> ParseNamedQuery(const std::string& flag, const std::string& text);

}  // namespace gpufit
