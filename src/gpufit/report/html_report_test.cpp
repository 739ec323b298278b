#include "gpufit/report/html_report.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "gpufit/report/report_assets.h"
#include "test_paths.h"

namespace gpufit::report {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The text between the data element's tags.
std::string DataElement(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"gpufit-data\">";
  const std::size_t begin = page.find(open);
  const std::size_t end = page.find("</script>", begin);
  if (begin == std::string::npos || end == std::string::npos) return {};
  return page.substr(begin + open.size(), end - begin - open.size());
}

TEST(ReportAssets, AreTheInstalledFilesByteForByte) {
  const std::string echarts =
      ReadFile(gpufit::test_paths::SourcePath("tools/report/node_modules/echarts/dist/echarts.min.js"));
  ASSERT_GT(echarts.size(), 100000u);
  EXPECT_EQ(EchartsJs(), echarts);
  EXPECT_NE(ReportJs().find("gpufitReport"), std::string_view::npos);
  EXPECT_FALSE(ReportCss().empty());
}

TEST(HtmlReport, DataCannotCloseItsScriptElementAndReadsBackEqual) {
  const nlohmann::json data = {{"pod", "</script><script>alert(1)</script>"}, {"n", 3}};
  const std::string page = RenderHtmlReport("GPUs <&> \"dollars\"", data.dump());
  EXPECT_NE(page.find("<title>GPUs &lt;&amp;&gt; &quot;dollars&quot;</title>"), std::string::npos);
  EXPECT_EQ(page.find("</script><script>alert(1)"), std::string::npos);
  const std::string element = DataElement(page);
  EXPECT_EQ(element.find('<'), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(element), data);  // \u003c is '<' to a JSON reader
  // Everything the page needs is inside it: the library and the script, no URL to fetch.
  EXPECT_NE(page.find(EchartsJs()), std::string::npos);
  EXPECT_NE(page.find(ReportJs()), std::string::npos);
  EXPECT_EQ(page.find("<script src="), std::string::npos);
  EXPECT_EQ(page.find("<link "), std::string::npos);
}

TEST(HtmlReport, DataObjectCarriesItsParts) {
  const nlohmann::json d = nlohmann::json::parse(
      ReportData("plan", "gpufit plan", "trace/", "gpufit 0.1.0", R"({"totals":{"gpus_after":2}})", R"({"samples":4})"));
  EXPECT_EQ(d["command"], "plan");
  EXPECT_EQ(d["title"], "gpufit plan");
  EXPECT_EQ(d["source"], "trace/");
  EXPECT_EQ(d["gpufit_version"], "gpufit 0.1.0");
  EXPECT_EQ(d["result"]["totals"]["gpus_after"], 2);
  EXPECT_EQ(d["series"]["samples"], 4);
  EXPECT_FALSE(nlohmann::json::parse(ReportData("plan", "t", "s", "v", "{}")).contains("series"));
  EXPECT_THROW(ReportData("plan", "t", "s", "v", "{not json"), std::invalid_argument);
}

}  // namespace
}  // namespace gpufit::report
