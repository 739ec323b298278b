// The OpenMetrics -> VictoriaMetrics import conversion (victoria_metrics_server.h), by hand.
#include "victoria_metrics_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufit::testing {
namespace {

TEST(ToPrometheusImportText, DropsCommentsAndWritesMilliseconds) {
  const Result<PrometheusImportText> r = ToPrometheusImportText(
      "# TYPE m gauge\n"
      "m{pod=\"a b\",note=\"x} \\\"y\\\" 1 2\"} 5 1767225600\n"
      "m{pod=\"a b\",note=\"x} \\\"y\\\" 1 2\"} 6 1767225660.25\n"
      "\n"
      "bare 1.5e3 1767225600.0016\n"
      "# EOF\n");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->text,
            "m{pod=\"a b\",note=\"x} \\\"y\\\" 1 2\"} 5 1767225600000\n"
            "m{pod=\"a b\",note=\"x} \\\"y\\\" 1 2\"} 6 1767225660250\n"
            "bare 1.5e3 1767225600002\n");
  EXPECT_EQ(r->series, 2u);
}

TEST(ToPrometheusImportText, ASampleWithoutATimestampNamesItsLine) {
  const Result<PrometheusImportText> r = ToPrometheusImportText("# TYPE m gauge\nm{pod=\"a\"} 5 1767225600\nm 5\n");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, Code::kInvalidArgument);
  EXPECT_THAT(r.error().message, ::testing::HasSubstr("line 3: a sample without a timestamp"));
  EXPECT_THAT(ToPrometheusImportText("m 5 yesterday\n").error().message,
              ::testing::HasSubstr("line 1: timestamp 'yesterday'"));
}

}  // namespace
}  // namespace gpufit::testing
