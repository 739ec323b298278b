#include "gpufit/inference/llm_service.h"

#include <gtest/gtest.h>

namespace gpufit {
namespace {

TEST(LlmServiceTest, RooflineOfLlama2On13bOnAnA100By80GB) {
  const GpuModel gpu = *GpuCatalog::Embedded().Find("a100-80gb");
  const auto m = RooflineLlmService(*FindLlmArchitecture("llama-2-13b"), gpu, LlmServingParams{}, 1366);
  ASSERT_TRUE(m) << m.error().message;
  // By hand: budget 81,920 MiB * 0.9 = 77.309 GB; weights 26.0 GB; KV per token
  // 2 * 40 layers * 40 heads * 128 * 2 B = 819,200 B; floor(51.309e9 / (1366 * 819,200)) = 45.
  EXPECT_EQ(m->max_concurrent_sequences, 45);
  // TPOT = (26.0e9 + 45 * 1366 * 819,200) / (2,039e9 * 0.77) = 48.634 ms.
  EXPECT_NEAR(m->tpot_s, 0.0486336, 1e-6);
  // Prefill = 312e12 * 0.5 / (2 * 13e9) = 6,000 tokens/s.
  EXPECT_NEAR(m->prefill_tokens_per_s, 6000, 1e-9);
  EXPECT_NEAR(m->ServiceSeconds(1200, 100), 0.2 + 100 * m->tpot_s, 1e-12);
}

TEST(LlmServiceTest, Llama31On8bIsCappedByMaxNumSeqs) {
  const GpuModel gpu = *GpuCatalog::Embedded().Find("h100-80gb");
  const auto m = RooflineLlmService(*FindLlmArchitecture("llama-3.1-8b"), gpu, LlmServingParams{}, 1366);
  ASSERT_TRUE(m) << m.error().message;
  // KV per token 2 * 32 * 8 * 128 * 2 = 131,072 B: 342 sequences fit, vLLM's 256 cap binds.
  EXPECT_EQ(m->max_concurrent_sequences, 256);
  // (16.06e9 + 256 * 1366 * 131,072) / (3,350e9 * 0.77) = 23.995 ms.
  EXPECT_NEAR(m->tpot_s, 0.0239951, 1e-6);
}

TEST(LlmServiceTest, RefusesWhatCannotRun) {
  const GpuCatalog& catalog = GpuCatalog::Embedded();
  const LlmArchitecture big = *FindLlmArchitecture("llama-3.1-70b");
  const auto no_fit = RooflineLlmService(big, *catalog.Find("a100-80gb"), LlmServingParams{}, 1000);
  ASSERT_FALSE(no_fit);
  EXPECT_NE(no_fit.error().message.find("141.2 GB of weights"), std::string::npos) << no_fit.error().message;
  EXPECT_FALSE(RooflineLlmService(*FindLlmArchitecture("llama-3.1-8b"), *catalog.Find("t4"), {}, 1000));
  EXPECT_FALSE(RooflineLlmService(
      *FindLlmArchitecture("llama-3.1-8b"), *catalog.Find("h100-80gb"),
      {.prefill_mfu = 1.5, .decode_mbu = 0.77, .memory_utilization = 0.9, .max_num_seqs = 256}, 1000));
  const auto unknown = FindLlmArchitecture("gpt-9");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("llama-2-13b"), std::string::npos);
}

TEST(LlmServiceTest, ServiceTimesPerRequest) {
  RequestTrace t;
  t.requests = {{.arrival_s = 0, .input_tokens = 600, .output_tokens = 10},
                {.arrival_s = 1, .input_tokens = 0, .output_tokens = 0}};
  const LlmServiceModel m{.prefill_tokens_per_s = 6000, .tpot_s = 0.05, .max_concurrent_sequences = 4};
  const ServiceTimes s = LlmServiceTimes(t, m);
  EXPECT_EQ(s.prefill_s, (std::vector<double>{0.1, 0}));
  EXPECT_NEAR(s.service_s[0], 0.6, 1e-12);
  EXPECT_EQ(s.service_s[1], 0);
  EXPECT_DOUBLE_EQ(MeanTokensPerSequence(t), 305);
}

}  // namespace
}  // namespace gpufit
