#include "gpufit/core/json_input.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "gpufit/core/test_support.h"

namespace gpufit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(CheckJsonDepth, CountsBracketsOutsideStrings) {
  EXPECT_TRUE(CheckJsonDepth("[[[1]]]", 3));
  const Result<void> deep = CheckJsonDepth("[[[[1]]]]", 3);
  ASSERT_FALSE(deep);
  EXPECT_THAT(deep.error().message, HasSubstr("deeper than 3 levels at byte 3"));  // the fourth '['
  // Brackets inside strings, and an escaped quote that does not end the string, do not count.
  EXPECT_TRUE(CheckJsonDepth(R"({"a": "[[[[\"[[[[", "b": [1]})", 2));
  // Siblings do not add up: two arrays side by side are one level deep each.
  EXPECT_TRUE(CheckJsonDepth("[[1],[2],[3]]", 2));
}

TEST(ParseJson, RefusesDeepNestingBeforeBuildingIt) {
  // 300,000 levels: copying or dumping such a document recursed past the stack (issue 18).
  const std::string deep = std::string(300'000, '[') + std::string(300'000, ']');
  const Result<nlohmann::json> j = ParseJson(deep, "x.json");
  ASSERT_FALSE(j);
  EXPECT_EQ(j.error().code, Code::kInvalidArgument);
  EXPECT_EQ(j.error().message, "x.json: JSON nested deeper than 100 levels at byte 100");
  // 100 levels are fine.
  EXPECT_TRUE(ParseJson(std::string(100, '[') + std::string(100, ']'), "x.json"));
}

TEST(ParseJson, HugeNumberIsAnErrorNotAnException) {
  // 20,000 digits: nlohmann throws out_of_range ("number overflow parsing"), not parse_error.
  const std::string text = R"({"n": )" + std::string(20'000, '9') + "}";
  const Result<nlohmann::json> j = ParseJson(text, "nodes.json");
  ASSERT_FALSE(j);
  EXPECT_EQ(j.error().code, Code::kInvalidArgument);
  EXPECT_THAT(j.error().message, HasSubstr("nodes.json: "));
  EXPECT_THAT(j.error().message, HasSubstr("number overflow"));
  EXPECT_LT(j.error().message.size(), 300u);  // the digits are not echoed whole
}

TEST(ParseJson, MalformedNamesTheByte) {
  const Result<nlohmann::json> j = ParseJson(R"({"a": tru})", "p.json");
  ASSERT_FALSE(j);
  EXPECT_THAT(j.error().message,
              HasSubstr("p.json: malformed JSON at byte 10"));  // 1-based: the 10th byte, the '}' after tru
  EXPECT_THAT(j.error().message, HasSubstr("invalid literal"));
  EXPECT_EQ(*ParseJson(R"({"a": [1, "x"]})", "p.json"), (nlohmann::json{{"a", {1, "x"}}}));
}

TEST(Excerpt, TruncatesAndEscapes) {
  EXPECT_EQ(Excerpt("a\rb\nc\td\x01\x7f", 80), "a\\rb\\nc\\td\\x01\\x7f");
  EXPECT_EQ(Excerpt("x\xe2\x80\xa8y\xe2\x80\xa9", 80), "x\\u2028y\\u2029");
  EXPECT_EQ(Excerpt("h\xc3\xa9", 80), "h\xc3\xa9");  // other UTF-8 is kept
  EXPECT_EQ(Excerpt(std::string(1000, 'z'), 4), "zzzz... (1000 bytes)");
}

TEST(ReadJsonText, DirectoryAndOversizeAreClearErrors) {
  const testing::TempDir dir;
  const Result<std::string> d = ReadJsonText(dir.path());
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().code, Code::kNotFound);
  EXPECT_EQ(d.error().message, dir.path() + ": not a regular file (a directory), expected a JSON file");

  // A sparse file one byte over the limit: refused from its size, before any byte is read.
  const std::string big = dir.Write("big.json", "");
  std::filesystem::resize_file(big, kMaxJsonFileBytes + 1);
  const Result<std::string> b = ReadJsonText(big);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().code, Code::kInvalidArgument);
  EXPECT_THAT(b.error().message, HasSubstr(big + ": 268435457 bytes of JSON, more than the 256 MiB gpufit reads"));

  const std::string ok = dir.Write("ok.json", "[1]");
  EXPECT_EQ(*ReadJsonText(ok), "[1]");
  EXPECT_EQ(ReadJsonText(dir.path() + "/missing.json").error().code, Code::kNotFound);
}

TEST(ReadJsonFile, ParsesWithThePathAsSource) {
  const testing::TempDir dir;
  const std::string p = dir.Write("p.json", "{\"a\": [");
  const Result<nlohmann::json> j = ReadJsonFile(p);
  ASSERT_FALSE(j);
  EXPECT_THAT(j.error().message, HasSubstr(p + ": malformed JSON at byte"));
  EXPECT_THAT(j.error().message, Not(HasSubstr("\n")));
}

}  // namespace
}  // namespace gpufit
