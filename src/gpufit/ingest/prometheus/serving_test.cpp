#include "gpufit/ingest/prometheus/serving.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufit {
namespace {

using Labels = std::map<std::string, std::string>;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

PromSeries Series(Labels labels, std::vector<double> t, std::vector<double> v) {
  return {.labels = std::move(labels), .time_s = std::move(t), .value = std::move(v)};
}
PromSeries Point(Labels labels, double v) { return Series(std::move(labels), {280}, {v}); }

// since 100, three steps of 60 s: (100, 160], (160, 220], (220, 280]; the baseline point at 100.
const GridSpec kGrid{.start_s = 160, .step_s = 60, .samples = 3};
const std::vector<double> kTimes = {100, 160, 220, 280};

Labels Vllm(const std::string& pod, const std::string& reason = "") {
  Labels l{{"namespace", "llm"}, {"pod", pod}, {"model_name", "meta-llama/Llama-2-13b-chat-hf"}, {"engine", "0"}};
  if (!reason.empty()) l["finished_reason"] = reason;
  return l;
}
Labels Pod(const std::string& pod) { return {{"namespace", "llm"}, {"pod", pod}}; }

// A Deployment's three vLLM pods: a counter reset, a pod born in the range (its first value
// counts from 0), a pod already running without a baseline point (its first value does not).
ServingAnswers DeploymentAnswers() {
  ServingAnswers a;
  a.vllm_success = {
      // chat-7d-a: 10 -> 15 -> 4 (restarted: +4) -> 9, increases 5, 4, 5; "length": 1, 0, 2.
      Series(Vllm("chat-7d-a", "stop"), kTimes, {10, 15, 4, 9}),
      Series(Vllm("chat-7d-a", "length"), kTimes, {0, 1, 1, 3}),
      // chat-7d-b, created at 150: first point 3 (from 0), then +2, +0.
      Series(Vllm("chat-7d-b", "stop"), {160, 220, 280}, {3, 5, 5}),
      // chat-7d-c, created at 10, first seen at 220 (a gap): 50 is not counted, then +2.
      Series(Vllm("chat-7d-c", "stop"), {220, 280}, {50, 52}),
  };
  a.vllm_prompt = {Series(Vllm("chat-7d-a"), kTimes, {1000, 1500, 1700, 2000})};
  a.vllm_ttft_bucket = {
      Point(
          {{"namespace", "llm"}, {"pod", "chat-7d-a"}, {"model_name", "meta-llama/Llama-2-13b-chat-hf"}, {"le", "0.5"}},
          4),
      Point({{"namespace", "llm"}, {"pod", "chat-7d-a"}, {"model_name", "meta-llama/Llama-2-13b-chat-hf"}, {"le", "1"}},
            8),
      Point({{"namespace", "llm"},
             {"pod", "chat-7d-a"},
             {"model_name", "meta-llama/Llama-2-13b-chat-hf"},
             {"le", "+Inf"}},
            10)};
  a.vllm_running = {Series(Vllm("chat-7d-a"), {160, 220, 280}, {3, 7, 5}),
                    Series(Vllm("chat-7d-b"), {160, 220}, {2, 4})};
  for (const char* p : {"chat-7d-a", "chat-7d-b", "chat-7d-c"}) {
    Labels owner = Pod(p);
    owner["owner_kind"] = "ReplicaSet";
    owner["owner_name"] = "chat-7d";
    owner["owner_is_controller"] = "true";
    a.pod_owner.push_back(Point(owner, 1));
  }
  a.replicaset_owner = {Point({{"namespace", "llm"},
                               {"replicaset", "chat-7d"},
                               {"owner_kind", "Deployment"},
                               {"owner_name", "chat"},
                               {"owner_is_controller", "true"}},
                              1)};
  // Created 50, 150, 10; ready 56, 60 and 70 s later: the median is 60.
  a.pod_created = {Point(Pod("chat-7d-a"), 50), Point(Pod("chat-7d-b"), 150), Point(Pod("chat-7d-c"), 10)};
  a.pod_ready_time = {Point(Pod("chat-7d-a"), 106), Point(Pod("chat-7d-b"), 210), Point(Pod("chat-7d-c"), 80)};
  a.deployment_replicas = {Series({{"namespace", "llm"}, {"deployment", "chat"}}, {160, 220, 280}, {2, 3, 3})};
  return a;
}

TEST(ServingFromSeries, VllmPodsOfADeploymentSummedPerStepWithResetsAndBirths) {
  const std::vector<ServingWorkload> w = ServingFromSeries(DeploymentAnswers(), {}, kGrid);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].engine, ServingEngine::kVllm);
  EXPECT_EQ(w[0].kube_namespace, "llm");
  EXPECT_EQ(w[0].owner_kind, "Deployment");
  EXPECT_EQ(w[0].owner_name, "chat");
  EXPECT_THAT(w[0].owner_basis, HasSubstr("kube_replicaset_owner"));
  EXPECT_THAT(w[0].pods, ElementsAre("llm/chat-7d-a", "llm/chat-7d-b", "llm/chat-7d-c"));
  // a: 5+1, 4+0, 5+2; b: 3, 2, 0; c: 0, 0, 2.
  EXPECT_THAT(w[0].requests, ElementsAre(9, 6, 9));
  EXPECT_EQ(w[0].counter_resets, 1);
  EXPECT_THAT(w[0].prompt_tokens, ElementsAre(500, 200, 300));
  EXPECT_THAT(w[0].running, ElementsAre(5, 11, 5));
  EXPECT_EQ(w[0].max_running_per_pod, 7);
  ASSERT_TRUE(w[0].cold_start_s.has_value());
  EXPECT_EQ(*w[0].cold_start_s, 60);
  EXPECT_THAT(w[0].cold_start_basis, HasSubstr("kube_pod_status_ready_time - kube_pod_created"));
  ASSERT_TRUE(w[0].current_replicas.has_value());
  EXPECT_EQ(*w[0].current_replicas, 3);
  // No TTFT _count was read: the buckets alone. Median: rank 5 of 10 in (0.5, 1] holding 4..8:
  // 0.5 + 0.5 * (5 - 4) / 4; p99 falls in +Inf: the highest finite bound.
  EXPECT_DOUBLE_EQ(w[0].ttft.Quantile(0.5), 0.625);
  EXPECT_DOUBLE_EQ(w[0].ttft.Quantile(0.99), 1.0);
  EXPECT_FALSE(w[0].e2e.present());
  EXPECT_TRUE(w[0].generation_tokens.empty());
}

TEST(ServingFromSeries, WithoutReadyTimeTheFirstReadyStepOfPodsCreatedInTheRange) {
  ServingAnswers a = DeploymentAnswers();
  a.pod_ready_time.clear();
  Labels ready = Pod("chat-7d-b");
  ready["condition"] = "true";
  a.pod_ready = {Series(ready, {160, 220, 280}, {0, 1, 1})};  // created 150, ready by 220
  const std::vector<ServingWorkload> w = ServingFromSeries(a, {}, kGrid);
  ASSERT_EQ(w.size(), 1u);
  ASSERT_TRUE(w[0].cold_start_s.has_value());
  EXPECT_EQ(*w[0].cold_start_s, 70);
  EXPECT_THAT(w[0].cold_start_basis, HasSubstr("upper bound"));
}

TEST(ServingFromSeries, TritonModelOfAStatefulSet) {
  ServingAnswers a;
  const Labels l{{"namespace", "vision"}, {"pod", "resnet-0"}, {"model", "resnet50"}, {"version", "1"}};
  a.triton_success = {Series(l, kTimes, {0, 10, 30, 60})};
  a.triton_request_us = {Series(l, kTimes, {0, 1e6, 3e6, 6e6})};
  a.triton_queue_us = {Series(l, kTimes, {0, 2e5, 6e5, 1.2e6})};
  a.triton_compute_us = {Series(l, kTimes, {0, 5e5, 1.5e6, 3e6})};
  a.pod_owner = {Point({{"namespace", "vision"},
                        {"pod", "resnet-0"},
                        {"owner_kind", "StatefulSet"},
                        {"owner_name", "resnet"},
                        {"owner_is_controller", "true"}},
                       1)};
  a.statefulset_replicas = {Series({{"namespace", "vision"}, {"statefulset", "resnet"}}, {280}, {4})};
  const std::vector<ServingWorkload> w = ServingFromSeries(a, {}, kGrid);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].engine, ServingEngine::kTriton);
  EXPECT_EQ(w[0].model, "resnet50");
  EXPECT_EQ(w[0].owner_kind, "StatefulSet");
  EXPECT_EQ(w[0].owner_name, "resnet");
  EXPECT_THAT(w[0].requests, ElementsAre(10, 20, 30));
  EXPECT_THAT(w[0].latency_sum_s, ElementsAre(1, 2, 3));
  EXPECT_DOUBLE_EQ(w[0].triton_requests, 60);
  EXPECT_DOUBLE_EQ(w[0].triton_request_s, 6);
  EXPECT_DOUBLE_EQ(w[0].triton_queue_s, 1.2);
  EXPECT_DOUBLE_EQ(w[0].triton_compute_s, 3);
  ASSERT_TRUE(w[0].current_replicas.has_value());
  EXPECT_EQ(*w[0].current_replicas, 4);
  EXPECT_THAT(w[0].replicas_basis, HasSubstr("kube_statefulset_status_replicas"));
  EXPECT_FALSE(w[0].cold_start_s.has_value());
}

TEST(ServingFromSeries, QueryRatesTimesTheStep) {
  ServingAnswers a;
  a.query_rates = {{Series({{"job", "x"}}, {160, 220, 280}, {0.5, 1, 0}), Series({{"job", "y"}}, {220}, {0.25})}};
  a.query_latencies = {{Series({}, {160, 220}, {0.2, 0.4})}};
  const std::vector<ServingWorkload> w = ServingFromSeries(
      a, {{.name = "shop/ranker", .requests_per_s = "sum(rate(x[1m]))", .latency_s = "avg(y)"}}, kGrid);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].engine, ServingEngine::kQuery);
  EXPECT_EQ(w[0].kube_namespace, "shop");
  EXPECT_EQ(w[0].owner_name, "ranker");
  EXPECT_THAT(w[0].requests, ElementsAre(30, 75, 0));
  EXPECT_THAT(w[0].latency_sum_s, ElementsAre(6, 30, 0));
}

TEST(ServingFromSeries, NoServingSeriesNoWorkloads) {
  ServingAnswers a;
  a.pod_owner = DeploymentAnswers().pod_owner;
  EXPECT_TRUE(ServingFromSeries(a, {}, kGrid).empty());
}

TEST(ParseNamedQuery, NeedsANameAndAQuery) {
  const auto ok = ParseNamedQuery("--serving-query", "shop/ranker=sum(rate(x{a=\"b\"}[1m]))");
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->first, "shop/ranker");
  EXPECT_EQ(ok->second, "sum(rate(x{a=\"b\"}[1m]))");
  for (const char* bad : {"noequals", "=q", "name="}) {
    SCOPED_TRACE(bad);
    const auto r = ParseNamedQuery("--serving-query", bad);
    ASSERT_FALSE(r.has_value());
    EXPECT_THAT(r.error().message, HasSubstr("--serving-query"));
  }
}

TEST(CheckServingAnswers, BadValuesAreErrorsNamingMetricLabelsAndTime) {
  const std::vector<double> t = {100, 160, 220, 280};
  EXPECT_TRUE(CheckServingAnswers(DeploymentAnswers(), {}).has_value());  // a decrease (reset) is allowed
  const auto error = [](const ServingAnswers& a, const std::vector<ServingQuery>& q = {}) {
    const Result<void> r = CheckServingAnswers(a, q);
    EXPECT_FALSE(r.has_value());
    if (r.has_value()) return std::string();
    EXPECT_EQ(r.error().code, Code::kInvalidArgument);
    return r.error().message;
  };
  ServingAnswers a;
  a.vllm_success = {Series(Vllm("p", "stop"), t, {1, 2, -5, 6})};
  std::string e = error(a);
  EXPECT_THAT(e, HasSubstr("vllm:request_success_total '{"));
  EXPECT_THAT(e, HasSubstr("pod=\"p\""));
  EXPECT_THAT(e, HasSubstr("1970-01-01T00:03:40Z"));  // t = 220
  EXPECT_THAT(e, HasSubstr("negative"));
  a.vllm_success = {Series(Vllm("p", "stop"), t, {1, 1e300, 2, 3})};
  EXPECT_THAT(error(a), HasSubstr("above 1e+18"));
  // 1e18 in 60 s is more than 1e6 requests a second; a reset to a small value is fine.
  a.vllm_success = {Series(Vllm("p", "stop"), t, {1, 2, 1e18, 3})};
  EXPECT_THAT(error(a), HasSubstr("rises by"));
  a.vllm_success = {Series(Vllm("p", "stop"), t, {1, 60e6 + 1, 2, 3})};  // 60e6 in 60 s: the bound itself
  EXPECT_TRUE(CheckServingAnswers(a, {}).has_value());
  a = {};
  a.triton_request_us = {Series(Pod("t"), t, {1, NAN, 3, 4})};
  EXPECT_THAT(error(a), HasSubstr("nv_inference_request_duration_us"));
  a = {};
  a.vllm_running = {Series(Vllm("p"), t, {1, 1e12, 3, 4})};
  EXPECT_THAT(error(a), HasSubstr("vllm:num_requests_running"));
  a = {};
  a.vllm_ttft_sum = {Series(Vllm("p"), t, {1, 2, -3, 4})};
  EXPECT_THAT(error(a), HasSubstr("vllm:time_to_first_token_seconds_sum"));
  const std::vector<ServingQuery> q = {{.name = "shop/ranker", .requests_per_s = "rate(x[1m])", .latency_s = "y"}};
  a = {};
  a.query_rates = {{Series({}, t, {1, -5, 1, 1})}};
  a.query_latencies = {{}};
  EXPECT_THAT(error(a, q), HasSubstr("--serving-query 'rate(x[1m])'"));
  a.query_rates = {{Series({}, t, {1, 1, 1, 1})}};
  a.query_latencies = {{Series({}, t, {0.1, 1e9, 0.1, 0.1})}};
  EXPECT_THAT(error(a, q), HasSubstr("--serving-latency 'y'"));
}

TEST(ServingFromSeries, AQueryWithoutSeriesIsMarked) {
  ServingAnswers a;
  a.query_rates = {{}};
  a.query_latencies = {{}};
  const std::vector<ServingWorkload> w =
      ServingFromSeries(a, {{.name = "ranker", .requests_per_s = "x", .latency_s = ""}}, kGrid);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_TRUE(w[0].no_series);
}

}  // namespace
}  // namespace gpufit
