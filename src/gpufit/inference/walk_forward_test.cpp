#include "gpufit/inference/walk_forward.h"

#include <gtest/gtest.h>

namespace gpufit {
namespace {

TEST(WalkForwardTest, SplitsAtUtcMidnight) {
  // 2024-11-15 23:59:59 and 2024-11-16 00:00:00 UTC (1731715200), then one on 2024-11-18:
  // four days, the 17th empty.
  const RequestLog log{.source = "log",
                       .requests = {{.arrival_utc_s = 1731715199, .service_s = 3, .model = "M1"},
                                    {.arrival_utc_s = 1731715200, .service_s = 4, .model = ""},
                                    {.arrival_utc_s = 1731715200 + 2 * 86400 + 60, .service_s = 5, .model = "M0"}}};
  std::vector<std::string> models;
  const std::vector<LogDay> days = SplitByUtcDay(log, &models);
  ASSERT_EQ(days.size(), 4u);
  EXPECT_EQ(days[0].date, "2024-11-15");
  EXPECT_EQ(days[3].date, "2024-11-18");
  ASSERT_EQ(days[0].demand.trace.requests.size(), 1u);
  EXPECT_DOUBLE_EQ(days[0].demand.trace.requests[0].arrival_s, 86399);
  EXPECT_DOUBLE_EQ(days[0].demand.trace.origin_s, 1731628800);
  ASSERT_EQ(days[1].demand.trace.requests.size(), 1u);
  EXPECT_DOUBLE_EQ(days[1].demand.trace.requests[0].arrival_s, 0);
  EXPECT_EQ(days[1].models[0], -1);
  EXPECT_TRUE(days[2].demand.trace.requests.empty());
  EXPECT_DOUBLE_EQ(days[3].demand.trace.requests[0].arrival_s, 60);
  EXPECT_DOUBLE_EQ(days[3].demand.times.service_s[0], 5);
  EXPECT_EQ(models, (std::vector<std::string>{"M1", "M0"}));
  EXPECT_EQ(days[0].models[0], 0);
  EXPECT_EQ(days[3].models[0], 1);
}

}  // namespace
}  // namespace gpufit
