#include "gpufit/inference/serving_services.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufit {
namespace {

using ::testing::HasSubstr;

// Ten steps of 60 s from Unix time 1000 (step k covers (1000 + 60 k, 1060 + 60 k]).
ServingWorkload Vllm(const std::string& model, double per_step, double prompt_per_request, double out_per_request) {
  ServingWorkload w;
  w.engine = ServingEngine::kVllm;
  w.kube_namespace = "llm";
  w.owner_kind = "Deployment";
  w.owner_name = "chat";
  w.owner_basis = "kube_pod_owner";
  w.model = model;
  w.pods = {"llm/chat-a"};
  w.grid = {.start_s = 1060, .step_s = 60, .samples = 10};
  w.requests.assign(10, per_step);
  w.prompt_tokens.assign(10, per_step * prompt_per_request);
  w.generation_tokens.assign(10, per_step * out_per_request);
  w.metrics = {"vllm:request_success_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total"};
  return w;
}

TEST(ArrivalsFromCounts, EachStepsCountUniformlyWithinItAndItsTokensSharedEvenly) {
  ServingWorkload w = Vllm("m", 0, 0, 0);
  w.grid.samples = 3;
  w.requests = {2, 0, 3};
  w.prompt_tokens = {11, 5, 7};      // step 1's 5 carry to step 2: 12 over 3
  w.generation_tokens = {4, 0, 10};  // 10 over 3: 4, 3, 3
  const RequestTrace t = ArrivalsFromCounts(w, 7);
  ASSERT_EQ(t.requests.size(), 5u);
  ASSERT_TRUE(t.has_tokens);
  for (std::size_t i = 0; i < 5; ++i) {
    const double at = t.origin_s + t.requests[i].arrival_s;
    const double from = i < 2 ? 1000 : 1120;
    EXPECT_GE(at, from) << i;
    EXPECT_LT(at, from + 60) << i;
  }
  EXPECT_EQ(t.requests[0].arrival_s, 0);
  EXPECT_EQ(t.requests[0].input_tokens, 6);
  EXPECT_EQ(t.requests[1].input_tokens, 5);
  EXPECT_EQ(t.requests[0].output_tokens, 2);
  EXPECT_EQ(t.requests[1].output_tokens, 2);
  for (std::size_t i = 2; i < 5; ++i) EXPECT_EQ(t.requests[i].input_tokens, 4);
  EXPECT_EQ(t.requests[2].output_tokens, 4);
  EXPECT_EQ(t.requests[3].output_tokens, 3);
  EXPECT_EQ(t.requests[4].output_tokens, 3);
}

TEST(ArchitectureOfModelName, ServedNamesOfKnownArchitectures) {
  EXPECT_EQ(ArchitectureOfModelName("meta-llama/Llama-2-13b-chat-hf"), "llama-2-13b");
  EXPECT_EQ(ArchitectureOfModelName("meta-llama/Meta-Llama-3.1-8B-Instruct"), "llama-3.1-8b");
  EXPECT_EQ(ArchitectureOfModelName("llama-3.1-70b"), "llama-3.1-70b");
  EXPECT_EQ(ArchitectureOfModelName("llama-3.1-80b"), std::nullopt);
  EXPECT_EQ(ArchitectureOfModelName("mistralai/Mistral-7B-Instruct-v0.3"), std::nullopt);
}

TEST(PrepareServingServices, KnownModelIsTheRooflineAndSaysWhereEachFigureCameFrom) {
  ServingWorkload w = Vllm("meta-llama/Llama-2-13b-chat-hf", 30, 300, 100);
  w.cold_start_s = 56;
  w.cold_start_basis = "median over 1 of 1 pods of kube_pod_status_ready_time - kube_pod_created";
  w.current_replicas = 2;
  w.replicas_basis = "kube_deployment_status_replicas";
  w.counter_resets = 1;
  const Result<ServingServices> s = PrepareServingServices({w}, {});
  ASSERT_TRUE(s.has_value()) << s.error().message;
  ASSERT_EQ(s->services.size(), 1u);
  const PreparedService& p = s->services[0];
  EXPECT_EQ(p.spec.name, "chat");
  EXPECT_EQ(p.spec.kube_namespace, "llm");
  EXPECT_EQ(p.demand.trace.requests.size(), 300u);
  EXPECT_EQ(p.spec.llm_model, "llama-2-13b");
  EXPECT_EQ(p.cold_start_s, 56);
  ASSERT_TRUE(p.llm.has_value());
  // The roofline the services YAML would give for the same tokens (mean 400 per sequence).
  const Result<LlmServiceModel> m =
      RooflineLlmService(*FindLlmArchitecture("llama-2-13b"), *GpuCatalog::Embedded().Find("a100-80gb"), {}, 400);
  ASSERT_TRUE(m.has_value());
  EXPECT_DOUBLE_EQ(p.llm->tpot_s, m->tpot_s);
  EXPECT_EQ(p.current_replicas, 2);
  std::map<std::string, std::string> from(p.sources.begin(), p.sources.end());
  EXPECT_THAT(from["requests"], HasSubstr("vllm:request_success_total"));
  EXPECT_THAT(from["requests"], HasSubstr("1 counter resets"));
  EXPECT_THAT(from["tokens"], HasSubstr("vllm:prompt_tokens_total (90000)"));
  EXPECT_THAT(from["service model"], HasSubstr("roofline of llama-2-13b"));
  EXPECT_THAT(from["cold start"], HasSubstr("kube_pod_status_ready_time"));
  EXPECT_THAT(from["slo"], HasSubstr("assumption"));
  EXPECT_THAT(from["replicas today"], HasSubstr("kube_deployment_status_replicas"));
}

TEST(PrepareServingServices, UnknownModelWithoutItsTtftHistogramIsSkippedNamingIt) {
  ServingWorkload w = Vllm("acme/custom-llm", 30, 300, 100);
  w.tpot = {.buckets = {}, .sum = 10, .count = 500};
  const Result<ServingServices> s = PrepareServingServices({w}, {});
  ASSERT_TRUE(s.has_value());
  EXPECT_TRUE(s->services.empty());
  ASSERT_EQ(s->skipped.size(), 1u);
  EXPECT_THAT(s->skipped[0], HasSubstr("llm/chat"));
  EXPECT_THAT(s->skipped[0], HasSubstr("vllm:time_to_first_token_seconds"));
}

TEST(PrepareServingServices, UnknownModelFromItsMeasuredHistograms) {
  ServingWorkload w = Vllm("acme/custom-llm", 30, 300, 100);
  w.ttft = {.buckets = {}, .sum = 600, .count = 300};    // 90,000 prompt tokens over 600 s of TTFT
  w.tpot = {.buckets = {}, .sum = 600, .count = 30000};  // 20 ms
  w.max_running_per_pod = 12;
  const Result<ServingServices> s = PrepareServingServices({w}, {});
  ASSERT_TRUE(s.has_value());
  ASSERT_EQ(s->services.size(), 1u) << (s->skipped.empty() ? "" : s->skipped[0]);
  const PreparedService& p = s->services[0];
  ASSERT_TRUE(p.llm.has_value());
  EXPECT_DOUBLE_EQ(p.llm->prefill_tokens_per_s, 150);
  EXPECT_DOUBLE_EQ(p.llm->tpot_s, 0.02);
  EXPECT_EQ(p.llm->max_concurrent_sequences, 12);
  EXPECT_THAT(p.service_basis, HasSubstr("measured"));
  // No kube-state-metrics cold start and no known weights: the stated assumption.
  EXPECT_EQ(p.cold_start_s, 60);
  EXPECT_THAT(p.cold_start_basis, HasSubstr("assumption"));
}

TEST(PrepareServingServices, TritonServiceTimeIsRequestMinusQueuePerRequest) {
  ServingWorkload w;
  w.engine = ServingEngine::kTriton;
  w.kube_namespace = "vision";
  w.owner_kind = "StatefulSet";
  w.owner_name = "resnet";
  w.model = "resnet50";
  w.pods = {"vision/resnet-0"};
  w.grid = {.start_s = 1060, .step_s = 60, .samples = 3};
  w.requests = {10, 20, 30};
  w.triton_requests = 60;
  w.triton_request_s = 6;
  w.triton_queue_s = 1.2;
  w.triton_compute_s = 3;
  w.metrics = {"nv_inference_request_success", "nv_inference_request_duration_us"};
  const Result<ServingServices> s = PrepareServingServices({w}, {});
  ASSERT_TRUE(s.has_value());
  ASSERT_EQ(s->services.size(), 1u) << (s->skipped.empty() ? "" : s->skipped[0]);
  const PreparedService& p = s->services[0];
  EXPECT_DOUBLE_EQ(p.spec.service_s, (6 - 1.2) / 60);
  EXPECT_EQ(p.concurrency, 1);
  EXPECT_EQ(p.spec.slo.metric, SloMetric::kWait);  // a TTFT needs an LLM
  EXPECT_EQ(p.spec.workload_kind, "StatefulSet");  // the autoscaler's target
  EXPECT_FALSE(p.llm.has_value());
  EXPECT_EQ(p.demand.trace.requests.size(), 60u);
  std::map<std::string, std::string> from(p.sources.begin(), p.sources.end());
  EXPECT_THAT(from["service model"], HasSubstr("nv_inference_queue_duration_us"));
  EXPECT_THAT(from["requests"], HasSubstr("nv_inference_request_success"));
}

// A --serving-query workload: `rate` requests per second in each of three 60 s steps, `latency`
// seconds per request.
ServingWorkload Query(double rate, double latency) {
  ServingWorkload w;
  w.engine = ServingEngine::kQuery;
  w.kube_namespace = "shop";
  w.owner_name = w.model = "ranker";
  w.grid = {.start_s = 1060, .step_s = 60, .samples = 3};
  w.requests.assign(3, rate * 60);
  w.latency_sum_s.assign(3, latency * rate * 60);
  w.latency_count.assign(3, rate * 60);
  w.metrics = {"vector(1)", "vector(2)"};
  return w;
}

TEST(FirstReplayedStep, TheMostRecentStepsHoldingAtMostTheBound) {
  ServingWorkload w = Query(0, 0);
  w.requests = {3e6, 3e6, 1e6, 0.5};  // from the end: 1, 1 + 1e6, + 3e6 = 4000001, + 3e6 > 5e6
  EXPECT_EQ(FirstReplayedStep(w), 1u);
  w.requests = {1, 2, 3};
  EXPECT_EQ(FirstReplayedStep(w), 0u);
  w.requests = {1, 2, 6e6};  // the last step alone is over: nothing
  EXPECT_EQ(FirstReplayedStep(w), 3u);
  EXPECT_TRUE(ArrivalsFromCounts(w, 1).requests.empty());
  w.requests = {1e300, 2, 3};  // was std::length_error
  EXPECT_EQ(FirstReplayedStep(w), 1u);
  EXPECT_EQ(ArrivalsFromCounts(w, 1).requests.size(), 5u);
}

TEST(PrepareServingServices, ALastStepOverTheReplayBoundIsSkippedSayingSo) {
  ServingWorkload w = Query(0, 0.1);
  w.requests = {1, 1, 6e6};
  const Result<ServingServices> s = PrepareServingServices({w}, {});
  ASSERT_TRUE(s.has_value());
  ASSERT_EQ(s->skipped.size(), 1u);
  EXPECT_THAT(s->skipped[0], HasSubstr("more than 5000000 requests"));
}

TEST(PrepareServingServices, AServiceTimeOverAnHourIsBadInputNamingItsSource) {
  const Result<ServingServices> s = PrepareServingServices({Query(0.01, 3601)}, {});
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code, Code::kInvalidArgument);
  EXPECT_THAT(s.error().message, HasSubstr("shop/ranker"));
  EXPECT_THAT(s.error().message, HasSubstr("--serving-latency 'vector(2)'"));
  EXPECT_THAT(s.error().message, HasSubstr("3600"));
}

TEST(PrepareServingServices, MoreThanTenThousandReplicasBusyIsRefused) {
  // 5 requests per second x 2001 s = 10005 replicas busy at once > 10000; 1999 s -> 9995 is sized.
  const Result<ServingServices> s = PrepareServingServices({Query(5, 2001)}, {});
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code, Code::kInvalidArgument);
  EXPECT_THAT(s.error().message, HasSubstr("10005 replicas"));
}

TEST(PrepareServingServices, AQueryWithoutSeriesSaysSo) {
  ServingWorkload w = Query(0, 0);
  w.no_series = true;
  const Result<ServingServices> s = PrepareServingServices({w}, {});
  ASSERT_TRUE(s.has_value());
  ASSERT_EQ(s->skipped.size(), 1u);
  EXPECT_THAT(s->skipped[0], HasSubstr("--serving-query 'vector(1)' returned no series"));
}

TEST(PrepareServingServices, AMeasuredTpotOverAnHourIsBadInput) {
  ServingWorkload w = Vllm("acme/unknown-model", 4, 100, 50);
  w.ttft = {.buckets = {}, .sum = 40, .count = 40};
  w.tpot = {.buckets = {}, .sum = 2 * 3601, .count = 2};
  const Result<ServingServices> s = PrepareServingServices({w}, {});
  ASSERT_FALSE(s.has_value());
  EXPECT_THAT(s.error().message, HasSubstr("vllm:time_per_output_token_seconds mean 3601 s"));
}

TEST(PrepareServingServices, TritonQueueingLongerThanTheRequestsIsBadInput) {
  ServingWorkload w;
  w.engine = ServingEngine::kTriton;
  w.kube_namespace = "vision";
  w.owner_name = w.model = "resnet";
  w.pods = {"vision/resnet-0"};
  w.grid = {.start_s = 1060, .step_s = 60, .samples = 1};
  w.requests = {10};
  w.triton_requests = 10;
  w.triton_request_s = 1;
  w.triton_queue_s = 2;  // queueing is part of a request's duration: it cannot be longer
  w.triton_compute_s = 0.5;
  const Result<ServingServices> s = PrepareServingServices({w}, {});
  ASSERT_FALSE(s.has_value());
  EXPECT_THAT(s.error().message, HasSubstr("nv_inference_queue_duration_us rose by 2 s"));
}

}  // namespace
}  // namespace gpufit
