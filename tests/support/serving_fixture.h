// Test fixture for serving metrics: the real Azure LLM conversation trace
// (../shared/data/azure-llm-2023, 19,366 requests over 58 minutes) written as the series a
// cluster's Prometheus holds for a vLLM Deployment (ingest/prometheus/serving.h), in
// OpenMetrics text for `promtool tsdb create-blocks-from openmetrics`, on a 15 s scrape grid.
//
// What the trace becomes:
//  * request i (in arrival order) arrives at since_s + 1 + (its time - the first request's)
//    and is served by pod i % 2 of Deployment llm/chat-vllm (ReplicaSet chat-vllm-7d4b9c, pods
//    chat-vllm-7d4b9c-x2k4p and chat-vllm-7d4b9c-q8m3z; model_name
//    "meta-llama/Llama-2-13b-chat-hf", engine "0");
//  * each request is counted at its arrival (vLLM counts at its end; seconds against steps of
//    a minute): vllm:request_success_total (finished_reason "length" for every 7th request,
//    else "stop"), vllm:prompt_tokens_total and vllm:generation_tokens_total by its tokens;
//  * its latencies from the service model gpufit uses for the services YAML of the same trace
//    (RooflineLlmService: Llama-2-13B on an A100-SXM4-80GB with the trace's mean tokens per
//    sequence, vLLM defaults), with no queueing: TTFT = prefill, e2e = prefill + output x TPOT,
//    and output - 1 observations of TPOT (vLLM V1 observes each inter-token interval), into
//    the histograms with vLLM's buckets (vllm/v1/metrics/loggers.py);
//  * vllm:num_requests_running = the pod's requests arrived and not yet finished at the scrape;
//    vllm:num_requests_waiting 0;
//  * kube-state-metrics: kube_pod_owner (ReplicaSet), kube_replicaset_owner (Deployment),
//    kube_pod_created (an hour before since_s), kube_pod_status_ready_time (created + 56 s, the
//    services example's 26 GB at 1 GB/s + 30 s), kube_pod_status_ready{condition="true"} 1,
//    kube_deployment_status_replicas 2;
//  * every series scraped every 15 s from since_s - 300 (counters 0 there) to until_s.
// No "# EOF": append the text to another fixture's before its own, or add one.
#pragma once

#include <cstddef>
#include <string>

#include "gpufit/core/result.h"

namespace gpufit::testing {

struct ServingFixture {
  std::string openmetrics;
  std::size_t requests = 0;
  double cold_start_s = 56;
  std::string services_yaml;  // the same service as a services file naming the trace
};

// Reads the Azure conversation trace `azure_csv`; series from since_s - 300 to until_s.
Result<ServingFixture> MakeVllmFixture(const std::string& azure_csv, double since_s, double until_s);

}  // namespace gpufit::testing
