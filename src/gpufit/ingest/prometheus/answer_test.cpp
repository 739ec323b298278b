// The streaming query_range parser (prometheus_answer.cpp) against a general JSON parser
// (nlohmann/json) as the oracle, on answers whose strings hold what its byte scanner must
// step over: escaped quotes and backslashes at every offset of a 16-byte block, brackets
// inside strings, Unicode escapes, members in another order.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gpufit/ingest/prometheus/client.h"

namespace gpufit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The series of a matrix answer, read by nlohmann/json.
std::vector<PromSeries> Oracle(const std::string& body) {
  std::vector<PromSeries> out;
  const nlohmann::json doc = nlohmann::json::parse(body);
  for (const auto& r : doc["data"]["result"]) {
    PromSeries& s = out.emplace_back();
    for (const auto& [k, v] : r["metric"].items()) s.labels[k] = v.get<std::string>();
    for (const auto& p : r["values"]) {
      s.time_s.push_back(p[0].get<double>());
      s.value.push_back(std::stod(p[1].get<std::string>()));
    }
  }
  return out;
}

TEST(ParseQueryRangeAnswer, ReadsWhatAGeneralJsonParserReads) {
  // Label values with escapes that land on each offset of a 16-byte block.
  std::string body = R"({"data":{"result":[)";
  for (int s = 0; s < 40; ++s) {
    const std::string pad(static_cast<std::size_t>(s % 17), 'y');
    body += fmt::format(
        R"({}{{"values":[[{},"{}"],[{}.5,"-1e-3"]],"metric":{{"pod":"{}\"]}}\\","x{}":"[{{\u00e9\\\\","Y_":"\/"}}}})",
        s == 0 ? "" : ",", 1000 + s, s * 7, 2000 + s, pad, pad);
  }
  body += R"(],"resultType":"matrix"},"status":"success","warnings":["a]\"}"]})";
  const Result<std::vector<PromSeries>> r = ParseQueryRangeAnswer(body, "t");
  ASSERT_TRUE(r) << r.error().message;
  const std::vector<PromSeries> want = Oracle(body);
  ASSERT_EQ(r->size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ((*r)[i].labels, want[i].labels) << i;
    EXPECT_EQ((*r)[i].time_s, want[i].time_s) << i;
    EXPECT_EQ((*r)[i].value, want[i].value) << i;
  }
  EXPECT_EQ((*r)[0].labels.at("x"), "[{\xc3\xa9\\\\");  // \u00e9 is é in UTF-8, \\\\ two backslashes
}

TEST(ParseQueryRangeAnswer, EmptyResultAndSyntaxErrors) {
  const auto empty = ParseQueryRangeAnswer(R"({"status":"success","data":{"resultType":"matrix","result":[]}})", "s");
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_TRUE(empty->empty());
  struct Case {
    std::string body, error;
  };
  const std::string ok = R"({"status":"success","data":{"resultType":"matrix","result":[)";
  for (const Case& c : std::vector<Case>{
           {"", "malformed JSON"},
           {"[1,2]", "top level: expected an object, got array"},
           {ok + R"({"metric":{},"values":[[1,"1"]]}]}} x)", "malformed JSON at byte 96: text after the answer"},
           {ok + R"({"metric":{},"values":[[1,"1"]}]}})", "malformed JSON at byte 90: mismatched bracket"},
           {ok + R"({"metric":{"a":"b},"values":[]}]}})", "unterminated string"},
           {ok + R"({"metric":{},"values":[[1,"1"],[1,tru]]}]}})",
            "malformed JSON at byte 60 (data.result[0] starts there)"},
           {R"({"status":"success","data":[]})", "data: expected an object, got array"},
           {R"({"status":"success","data":{"resultType":"matrix","result":{}}})", "data.result: expected an array"},
           {ok + R"(7]}})", "data.result[0]: expected an object, got number"},
           {ok + R"({"metric":{}}]}})", "data.result[0].values: missing"},
       }) {
    SCOPED_TRACE(c.body);
    const auto r = ParseQueryRangeAnswer(c.body, "s");
    ASSERT_FALSE(r);
    EXPECT_THAT(r.error().message, HasSubstr(c.error));
  }
}

// A UI or a login page that answers 200 with HTML: the error says the address is not the API's.
TEST(ParseQueryRangeAnswer, AnHtmlAnswerIsNamed) {
  const std::string page = "\n<!doctype html><html><body>Grafana</body></html>";
  const auto range = ParseQueryRangeAnswer(page, "s");
  ASSERT_FALSE(range);
  EXPECT_THAT(range.error().message, HasSubstr("malformed JSON"));
  EXPECT_THAT(range.error().message, HasSubstr("the answer is HTML or XML, not the Prometheus HTTP API"));
  const auto series = ParseSeriesAnswer(page, "s");
  ASSERT_FALSE(series);
  EXPECT_THAT(series.error().message, HasSubstr("the answer is HTML or XML, not the Prometheus HTTP API"));
  const auto json = ParseQueryRangeAnswer("{\"status\":", "s");
  ASSERT_FALSE(json);
  EXPECT_THAT(json.error().message, Not(HasSubstr("HTML")));
}

// Issue 40: an answer's warnings were ignored, so a plan was made on partial data in silence.
// The answer as Prometheus 3 writes it (web/api/v1/api.go: warnings and infos beside data).
TEST(ParseQueryRangeAnswer, KeepsTheAnswersWarningsAndInfos) {
  const std::string body =
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":"a"},"values":[[1,"2"]]}]},)"
      R"("warnings":["partial result: store gateway down"],"infos":["PromQL info: metric might not be a counter"]})";
  PromAnswerNotes notes;
  const Result<std::vector<PromSeries>> r = ParseQueryRangeAnswer(body, "srv", notes);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->size(), 1u);
  EXPECT_EQ(notes.warnings, std::vector<std::string>{"partial result: store gateway down"});
  EXPECT_EQ(notes.infos, std::vector<std::string>{"PromQL info: metric might not be a counter"});
}

TEST(ParseQueryRangeAnswer, WarningsOfAnotherShapeAreErrors) {
  PromAnswerNotes notes;
  const auto r = ParseQueryRangeAnswer(
      R"({"status":"success","warnings":[7],"data":{"resultType":"matrix","result":[]}})", "srv", notes);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "prometheus srv: warnings[0]: expected a string, got number");
  PromAnswerNotes none;
  EXPECT_TRUE(ParseQueryRangeAnswer(
      R"({"status":"success","warnings":null,"data":{"resultType":"matrix","result":[]}})", "srv", none));
  EXPECT_TRUE(none.warnings.empty());
}

}  // namespace
}  // namespace gpufit
