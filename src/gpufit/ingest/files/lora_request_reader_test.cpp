#include "gpufit/ingest/files/lora_request_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "gpufit/core/test_support.h"

namespace gpufit {
namespace {

using ::testing::HasSubstr;

constexpr const char* kHeader =
    "gmt_create,predict_type,predict_status,exec_time_seconds,groupId,prompt_length,negative_prompt_length,"
    "num_images_per_prompt,num_inference_steps,checkpoint_model_version_id,num_lora\n";

TEST(LoraRequestReaderTest, ReadsArrivalsServiceTimesAndModels) {
  testing::TempDir dir;
  // Out of order on purpose; the third row has no model (as the trace's pending rows).
  const std::string path = dir.Write("lora.csv", std::string(kHeader) +
                                                     "2024-11-15 16:57:50,TXT_2_IMG,SUCCEED,32.0,G0,63,,1,30,M0000,0\n"
                                                     "2024-11-15 16:57:40,TXT_2_IMG,SUCCEED,43,G1,93,,1,40,M0001,0\n"
                                                     "2024-11-16 00:00:00,TXT_2_IMG,PENDING,0,G1,,,,,,0\n");
  const auto log = ReadLoraRequestTrace(path);
  ASSERT_TRUE(log) << log.error().message;
  ASSERT_EQ(log->requests.size(), 3u);
  // Python: datetime(2024, 11, 15, 16, 57, 40, tzinfo=utc).timestamp() == 1731689860.
  EXPECT_DOUBLE_EQ(log->requests[0].arrival_utc_s, 1731689860);
  EXPECT_DOUBLE_EQ(log->requests[0].service_s, 43);
  EXPECT_EQ(log->requests[0].model, "M0001");
  EXPECT_DOUBLE_EQ(log->requests[1].arrival_utc_s, 1731689870);
  EXPECT_EQ(log->requests[1].model, "M0000");
  EXPECT_DOUBLE_EQ(log->requests[2].arrival_utc_s, 1731715200);  // midnight of 2024-11-16
  EXPECT_EQ(log->requests[2].model, "");
}

TEST(LoraRequestReaderTest, BadValuesNameFileLineAndColumn) {
  struct Case {
    const char* name;
    const char* row;
    const char* expected;
  };
  const Case cases[] = {
      {"negative time", "2024-11-15 16:57:50,T,S,-1,G,1,,1,1,M0,0\n", ":3: column 'exec_time_seconds': must be >= 0"},
      {"NaN time", "2024-11-15 16:57:50,T,S,nan,G,1,,1,1,M0,0\n", ":3: column 'exec_time_seconds'"},
      {"empty time", "2024-11-15 16:57:50,T,S,,G,1,,1,1,M0,0\n", ":3: column 'exec_time_seconds': empty value"},
      {"bad date", "2024-11-31 16:57:50,T,S,1,G,1,,1,1,M0,0\n", ":3: column 'gmt_create'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    testing::TempDir dir;
    const std::string path =
        dir.Write("lora.csv", std::string(kHeader) + "2024-11-15 16:57:40,T,S,1,G,1,,1,1,M0,0\n" + c.row);
    const auto log = ReadLoraRequestTrace(path);
    ASSERT_FALSE(log);
    EXPECT_EQ(log.error().code, Code::kInvalidArgument);
    EXPECT_THAT(log.error().message, HasSubstr(path + c.expected));
  }
}

TEST(LoraRequestReaderTest, MissingColumnAndMissingFile) {
  testing::TempDir dir;
  const auto no_model =
      ReadLoraRequestTrace(dir.Write("a.csv", "gmt_create,exec_time_seconds\n2024-11-15 00:00:00,1\n"));
  ASSERT_FALSE(no_model);
  EXPECT_THAT(no_model.error().message, HasSubstr("checkpoint_model_version_id"));
  const auto missing = ReadLoraRequestTrace(dir.path() + "/none.csv");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Code::kNotFound);
}

TEST(LoraRequestReaderTest, ReadsTheRealTrace) {
  const std::string path = testing::DataDir() + "/gentd26-lora/lora_request_trace_first14d.csv";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const auto log = ReadLoraRequestTrace(path);
  ASSERT_TRUE(log) << log.error().message;
  // Counted independently (Python csv): 13,217 requests, 75 models, 9 rows without one,
  // execution times summing to 351,852 s.
  ASSERT_EQ(log->requests.size(), 13217u);
  std::set<std::string> models;
  std::size_t unnamed = 0;
  double total = 0;
  for (const LoggedRequest& r : log->requests) {
    if (r.model.empty())
      ++unnamed;
    else
      models.insert(r.model);
    total += r.service_s;
  }
  EXPECT_EQ(models.size(), 75u);
  EXPECT_EQ(unnamed, 9u);
  EXPECT_NEAR(total, 351852, 0.5);
}

}  // namespace
}  // namespace gpufit
