#include "gpufit/ingest/files/request_trace_reader.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "gpufit/core/test_support.h"

namespace gpufit {
namespace {

TEST(RequestTraceTest, ParsesUtcTimestamps) {
  EXPECT_DOUBLE_EQ(*ParseUtcTimestamp("1970-01-01 00:00:00"), 0);
  // Python: datetime(2023, 11, 16, 18, 15, 46, tzinfo=utc).timestamp() + 0.68059.
  EXPECT_NEAR(*ParseUtcTimestamp("2023-11-16 18:15:46.6805900"), 1700158546.68059, 1e-6);
  EXPECT_NEAR(*ParseUtcTimestamp("2024-02-29 23:59:59.5"), 1709251199.5, 1e-6);  // leap day
  for (const char* bad : {"2023-02-30 00:00:00", "2023-11-16", "2023-11-16 25:00:00", "2023-11-16 18:15:46.",
                          "2023-11-16 18:15:46.x", "yesterday"}) {
    EXPECT_FALSE(ParseUtcTimestamp(bad)) << bad;
  }
}

TEST(RequestTraceTest, ReadsTheAzureConversationTrace) {
  const std::string path = testing::DataDir() + "/azure-llm-2023/AzureLLMInferenceTrace_conv.csv";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const auto t = ReadAzureLlmTrace(path);
  ASSERT_TRUE(t) << t.error().message;
  // Counted independently (Python csv + datetime): 19,366 requests over 3,501.72 s,
  // 22,361,870 prompt and 4,088,665 generated tokens; the first is 374 / 44.
  ASSERT_EQ(t->requests.size(), 19366u);
  EXPECT_NEAR(t->Duration(), 3501.7219, 1e-3);
  long in = 0, out = 0;
  for (const Request& r : t->requests) {
    in += r.input_tokens;
    out += r.output_tokens;
  }
  EXPECT_EQ(in, 22361870);
  EXPECT_EQ(out, 4088665);
  EXPECT_EQ(t->requests.front().input_tokens, 374);
  EXPECT_EQ(t->requests.front().output_tokens, 44);
  EXPECT_TRUE(t->has_tokens);
}

TEST(RequestTraceTest, ReadsGenericTracesWithAndWithoutTokens) {
  const testing::TempDir dir;
  const auto a =
      ReadGenericRequestTrace(dir.Write("a.csv", "timestamp_s,input_tokens,output_tokens\n105,10,2\n100.5,7,1\n"));
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_EQ(a->requests.size(), 2u);
  EXPECT_DOUBLE_EQ(a->requests[0].arrival_s, 0);  // sorted and shifted to the first
  EXPECT_EQ(a->requests[0].input_tokens, 7);
  EXPECT_DOUBLE_EQ(a->requests[1].arrival_s, 4.5);
  const auto b = ReadGenericRequestTrace(dir.Write("b.csv", "timestamp_s\n3\n1\n2\n"));
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_FALSE(b->has_tokens);
  EXPECT_EQ(b->requests.size(), 3u);
  EXPECT_DOUBLE_EQ(b->Duration(), 2);
}

TEST(RequestTraceTest, BadInputNamesTheFileLineAndColumn) {
  const testing::TempDir dir;
  const auto bad_ts = ReadAzureLlmTrace(dir.Write("x.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\nnoon,1,1\n"));
  ASSERT_FALSE(bad_ts);
  EXPECT_NE(bad_ts.error().message.find("x.csv:2: column 'TIMESTAMP'"), std::string::npos) << bad_ts.error().message;
  const auto neg = ReadGenericRequestTrace(dir.Write("n.csv", "timestamp_s,input_tokens,output_tokens\n1,-3,2\n"));
  ASSERT_FALSE(neg);
  EXPECT_NE(neg.error().message.find("input_tokens"), std::string::npos) << neg.error().message;
  const auto no_col = ReadGenericRequestTrace(dir.Write("c.csv", "time\n1\n"));
  ASSERT_FALSE(no_col);
  EXPECT_NE(no_col.error().message.find("timestamp_s"), std::string::npos) << no_col.error().message;
  const auto empty = ReadGenericRequestTrace(dir.Write("e.csv", "timestamp_s\n"));
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("no requests"), std::string::npos);
}

}  // namespace
}  // namespace gpufit
