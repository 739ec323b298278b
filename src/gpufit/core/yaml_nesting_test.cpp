// core/yaml_nesting.h: each verdict by hand from the text.
#include "gpufit/core/yaml_nesting.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace gpufit {
namespace {

using ::testing::HasSubstr;

TEST(CheckYamlNesting, DeepFlowCollectionsAreRefusedWithTheirLine) {
  const std::string deep = "jobs:\n  x: " + std::string(200'000, '[') + std::string(200'000, ']') + "\n";
  const Result<void> r = CheckYamlNesting(deep, "jobs.yaml");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "jobs.yaml: line 2: YAML nested deeper than 100 levels: not a file gpufit reads");
  // 100 levels pass, 101 do not.
  EXPECT_TRUE(CheckYamlNesting(std::string(100, '{') + std::string(100, '}'), "f"));
  EXPECT_FALSE(CheckYamlNesting(std::string(101, '[') + std::string(101, ']'), "f"));
}

TEST(CheckYamlNesting, BracketsInQuotesAndCommentsDoNotCount) {
  const std::string text = "a: \"" + std::string(500, '[') + "\"\nb: '" + std::string(500, '{') +
                           "'' still quoted'\n# " + std::string(500, '[') + "\nc: it's [1, [2, {d: 3}]]\n";
  EXPECT_TRUE(CheckYamlNesting(text, "f")) << CheckYamlNesting(text, "f").error().message;
  // A document of kubeconfig's shape.
  EXPECT_TRUE(CheckYamlNesting("apiVersion: v1\nclusters:\n- cluster:\n    server: https://x\n  name: c\n", "f"));
}

TEST(CheckYamlNesting, DeepIndentationIsRefused) {
  EXPECT_TRUE(CheckYamlNesting("a:\n" + std::string(1000, ' ') + "b: 1\n", "f"));
  EXPECT_THAT(CheckYamlNesting("a:\n" + std::string(1001, ' ') + "b: 1\n", "f").error().message,
              HasSubstr("f: line 2: YAML indented more than 1000 columns"));
}

}  // namespace
}  // namespace gpufit
