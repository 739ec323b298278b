#include "gpufit/core/rfc3339.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufit {
namespace {

TEST(ParseRfc3339, ReadsUtcOffsetsAndFractions) {
  EXPECT_DOUBLE_EQ(*ParseRfc3339("1970-01-01T00:00:00Z"), 0);
  // 56 years from 1970 with 14 leap days (1972..2024): 20454 days.
  EXPECT_DOUBLE_EQ(*ParseRfc3339("2026-01-01T00:00:00Z"), 20454.0 * 86400);
  EXPECT_DOUBLE_EQ(*ParseRfc3339("2026-01-01T02:00:00+02:00"), 20454.0 * 86400);
  EXPECT_DOUBLE_EQ(*ParseRfc3339("2025-12-31T18:30:00-05:30"), 20454.0 * 86400);
  EXPECT_NEAR(*ParseRfc3339("2024-02-29T23:59:59.5Z"), 1709251199.5, 1e-6);  // leap day
  EXPECT_NEAR(*ParseRfc3339("2023-11-16t18:15:46.680590z"), 1700158546.68059, 1e-6);
  EXPECT_DOUBLE_EQ(*ParseRfc3339("1969-12-31T23:59:59Z"), -1);
}

TEST(FormatRfc3339, InvertsParse) {
  EXPECT_EQ(FormatRfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(1767225600), "2026-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339(1709251199.5), "2024-02-29T23:59:59Z");
  EXPECT_EQ(FormatRfc3339(-1), "1969-12-31T23:59:59Z");
  for (double t : {951782400.0, 4102444799.0, 1700158546.0}) EXPECT_EQ(*ParseRfc3339(FormatRfc3339(t)), t);
}

TEST(ParseRfc3339, RejectsMalformedTimes) {
  for (const char* bad : {"2026-01-01T00:00:00", "2026-01-01 00:00:00Z", "2026-13-01T00:00:00Z", "2023-02-29T00:00:00Z",
                          "2026-01-01T24:00:00Z", "2026-01-01T00:00:00.Z", "2026-01-01T00:00:00+0200",
                          "2026-01-01T00:00:00+02:00x", "2026-01-01", "yesterday", ""}) {
    const Result<double> t = ParseRfc3339(bad);
    ASSERT_FALSE(t) << bad;
    EXPECT_EQ(t.error().code, Code::kInvalidArgument);
  }
}

}  // namespace
}  // namespace gpufit
