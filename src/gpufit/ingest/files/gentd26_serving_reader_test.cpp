#include "gpufit/ingest/files/gentd26_serving_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

#include "gpufit/core/test_support.h"

namespace gpufit {
namespace {

TEST(GenTd26ServingTest, SumsTheRateOverContainersPerTimestamp) {
  testing::TempDir dir;
  // Timestamps 100, 157, 214, 328 (gaps 57, 57, 114: the interval is 57 s). At 214 only
  // an API row: no generative requests then.
  const std::string path = dir.Write("qps.csv",
                                     "timestamp_anon,value,container_ip,request_type\n"
                                     "100.0,0.09,a,Generative Requests\n"
                                     "100.0,0.18,b,Generative Requests\n"
                                     "100.0,1.5,,API Requests\n"
                                     "157.0,0.09,a,Generative Requests\n"
                                     "214.0,0.5,,API Requests\n"
                                     "328.0,0.27,c,Generative Requests\n");
  const auto s = ReadGenTd26Qps(path, "Generative Requests");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_DOUBLE_EQ(s->sample_s, 57);
  EXPECT_EQ(s->t_s, (std::vector<double>{0, 57, 228}));
  ASSERT_EQ(s->per_s.size(), 3u);
  EXPECT_NEAR(s->per_s[0], 0.27, 1e-12);
  EXPECT_NEAR(s->per_s[1], 0.09, 1e-12);
  EXPECT_NEAR(s->per_s[2], 0.27, 1e-12);

  const auto none = ReadGenTd26Qps(path, "Image Requests");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("'API Requests', 'Generative Requests'"), std::string::npos)
      << none.error().message;
}

TEST(GenTd26ServingTest, ErrorsNameTheFileLineAndColumn) {
  testing::TempDir dir;
  const auto bad = ReadGenTd26Qps(dir.Write("q.csv",
                                            "timestamp_anon,value,container_ip,request_type\n"
                                            "100.0,-1,a,Generative Requests\n"),
                                  "Generative Requests");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("q.csv:2"), std::string::npos) << bad.error().message;
  EXPECT_NE(bad.error().message.find("value"), std::string::npos) << bad.error().message;
  const auto missing = ReadGenTd26LatencySeconds(dir.Write("l.csv", "timestamp_anon,latency\n1,2\n"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("value"), std::string::npos) << missing.error().message;
  EXPECT_FALSE(ReadGenTd26LatencySeconds(dir.path() + "/absent.csv"));
  const auto nan = ReadGenTd26LatencySeconds(dir.Write("n.csv", "value\nnan\n"));
  EXPECT_FALSE(nan);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

TEST(GenTd26ServingTest, ReadsTheRealServingFiles) {
  const std::string dir = testing::DataDir() + "/gentd26";
  if (!std::filesystem::exists(dir + "/qps.csv")) GTEST_SKIP() << "no " << dir;
  // Counted independently (Python csv): 1,023 timestamps carry generative requests, the
  // most frequent gap is 57 s, the summed rate averages 2.08833 requests/s over them.
  const auto s = ReadGenTd26Qps(dir + "/qps.csv", "Generative Requests");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->t_s.size(), 1023u);
  EXPECT_DOUBLE_EQ(s->sample_s, 57);
  EXPECT_NEAR(std::accumulate(s->per_s.begin(), s->per_s.end(), 0.0) / 1023, 2.08833, 1e-5);
  // Medians (Python numpy): inference 35,049.5 ms over 6,254 samples; base-model load
  // 22,718 ms over 7,531 samples.
  const auto predict = ReadGenTd26LatencySeconds(dir + "/model_predict_data_anon.csv");
  ASSERT_TRUE(predict) << predict.error().message;
  EXPECT_EQ(predict->size(), 6254u);
  EXPECT_NEAR(Median(*predict), 35.0495, 1e-9);
  const auto load = ReadGenTd26LatencySeconds(dir + "/basemodel_update_latency_anon.csv");
  ASSERT_TRUE(load) << load.error().message;
  EXPECT_EQ(load->size(), 7531u);
  EXPECT_NEAR(Median(*load), 22.718, 1e-9);
}

}  // namespace
}  // namespace gpufit
