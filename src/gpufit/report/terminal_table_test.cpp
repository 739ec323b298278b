#include "gpufit/report/terminal_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

namespace gpufit::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A same-model plan: pods a and b share GPU 0 of h100-80gb (6.88 USD/GPU-hour); c is alone on
// GPU 1; d is in no group (kept).
std::string SameModelPlan(const std::string& a_name = "a") {
  return R"({"current_gpu": "h100-80gb", "target_gpu": "h100-80gb",
    "prices": {"target_gpu": {"usd_per_gpu_hour": 6.88}},
    "summary": {"status": {"colocation": {"status": "held"}},
      "strategies": [{"strategy": "co-location", "usd_saved": 5022.4, "status": "held", "basis": "b"}]},
    "groups": [{"gpu_model": "h100-80gb", "pods": [")" +
         a_name + R"(", "b"]}, {"gpu_model": "h100-80gb", "pods": ["c"]}],
    "pods": [
      {"pod": ")" +
         a_name +
         R"(", "workload": null, "right_sizing": {"required_mib": 10240, "usd_per_month_current": 5022.4, "reason": "why a"}},
      {"pod": "b", "right_sizing": {"required_mib": 20480, "usd_per_month_current": 5022.4}},
      {"pod": "c", "right_sizing": {"required_mib": 30720, "usd_per_month_current": 5022.4}},
      {"pod": "d", "right_sizing": null}]})";
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

TEST(DisplayWidth, CountsCodePointsAndSkipsColours) {
  EXPECT_EQ(DisplayWidth("abc"), 3u);
  EXPECT_EQ(DisplayWidth("a → b…"), 6u);
  EXPECT_EQ(DisplayWidth("\x1b[32mheld\x1b[0m"), 4u);
}

TEST(ShortenMiddle, KeepsBothEnds) {
  EXPECT_EQ(ShortenMiddle("short", 10), "short");
  EXPECT_EQ(ShortenMiddle("abcdefghij", 5), "ab…ij");
  EXPECT_EQ(ShortenMiddle("abcdefghij", 6), "ab…hij");
  EXPECT_EQ(DisplayWidth(ShortenMiddle("→→→→→→→→", 4)), 4u);
  EXPECT_EQ(ShortenMiddle("→→→→→→→→", 4), "→…→→");
  EXPECT_EQ(ShortenMiddle("abc", 0), "");
}

TEST(TerminalRows, ReadsTheSameModelPlan) {
  const auto rows = TerminalRows(SameModelPlan());
  ASSERT_TRUE(rows) << rows.error().message;
  ASSERT_EQ(rows->size(), 4u);
  // a and b each pay half of 6.88 x 730 = 5022.4: 2511.2 saved; c saves nothing; d unpriced.
  EXPECT_EQ((*rows)[0].workload, "a");
  EXPECT_NEAR((*rows)[0].usd_saved_per_month, 5022.4 - 5022.4 / 2, 1e-9);
  EXPECT_EQ((*rows)[0].shares_with, std::vector<std::string>{"b"});
  EXPECT_DOUBLE_EQ((*rows)[0].cap_gib, 10.0);
  EXPECT_EQ((*rows)[0].verdict, "held");
  EXPECT_EQ((*rows)[1].workload, "b");
  EXPECT_EQ((*rows)[2].workload, "c");
  EXPECT_NEAR((*rows)[2].usd_saved_per_month, 0, 1e-9);
  EXPECT_TRUE((*rows)[2].shares_with.empty());
  EXPECT_EQ((*rows)[3].workload, "d");
  EXPECT_EQ((*rows)[3].verdict, "keep");
  EXPECT_FALSE((*rows)[3].priced);
}

TEST(TerminalRows, PrefersTheRecommendedFleet) {
  const std::string plan = R"({"current_gpu": "h100-80gb",
    "summary": {"status": {"fleet": {"status": "provisional"}, "colocation": {"status": "held"}}},
    "fleet": {"recommended": true, "shared_gpus": [
      {"model": "h200-141gb", "pods": ["p", "q", "r"], "usd_per_month": 7300}]},
    "groups": [{"gpu_model": "h100-80gb", "pods": ["p"]}],
    "pods": [{"pod": "p", "current_gpu": {"id": "a100-80gb"}, "right_sizing": {"usd_per_month_current": 3000}}]})";
  const auto rows = TerminalRows(plan);
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].gpu_now, "a100-80gb");
  EXPECT_EQ((*rows)[0].gpu_recommended, "h200-141gb");
  EXPECT_NEAR((*rows)[0].usd_saved_per_month, 3000 - 7300.0 / 3, 1e-9);
  EXPECT_EQ((*rows)[0].shares_with, (std::vector<std::string>{"q", "r"}));
  EXPECT_EQ((*rows)[0].verdict, "provisional");
}

TEST(TerminalRows, RefusesWhatIsNotAPlan) {
  EXPECT_FALSE(TerminalRows("[1, 2]"));
  EXPECT_FALSE(TerminalRows("not json"));
}

TEST(RenderTerminalTable, FitsTheWidthWithLongNames) {
  const std::string long_name(300, 'x');
  for (std::size_t width : {60u, 80u, 120u}) {
    const auto table = RenderTerminalTable(
        SameModelPlan(long_name + "-end"),
        {.width = width, .colour = false, .reasons = true, .max_rows = 0, .next = {"next: " + std::string(200, 'n')}});
    ASSERT_TRUE(table);
    for (const std::string& l : Lines(*table)) EXPECT_LE(DisplayWidth(l), width) << l;
    EXPECT_THAT(*table, HasSubstr("…"));
    EXPECT_THAT(*table, HasSubstr("-end"));  // the end of the long name is kept
  }
}

TEST(RenderTerminalTable, ColoursOnlyWhenAsked) {
  const auto plain = RenderTerminalTable(SameModelPlan(), {});
  const auto coloured = RenderTerminalTable(
      SameModelPlan(), {.width = 120, .colour = true, .reasons = false, .max_rows = 25, .next = {}});
  ASSERT_TRUE(plain && coloured);
  EXPECT_THAT(*plain, Not(HasSubstr("\x1b[")));
  EXPECT_THAT(*coloured, HasSubstr("\x1b[32mheld"));
  EXPECT_THAT(*plain, Not(HasSubstr("why a")));  // reasons only with -v / wide
}

TEST(RenderTerminalTable, SaysHowManyRowsAreLeftOut) {
  const auto table = RenderTerminalTable(
      SameModelPlan(),
      {.width = 120, .colour = false, .reasons = false, .max_rows = 2, .next = {"next: gpufit backtest"}});
  ASSERT_TRUE(table);
  EXPECT_THAT(*table, HasSubstr("… 2 more pods"));
  EXPECT_THAT(Lines(*table).back(), "next: gpufit backtest");
  EXPECT_THAT(*table, HasSubstr("$2,511"));
}

}  // namespace
}  // namespace gpufit::report
