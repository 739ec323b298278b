#include "gpufit/ingest/prometheus/selector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufit {
namespace {

using ::testing::HasSubstr;

TEST(ParseLabelMatchers, EveryOperatorQuotesAndEscapes) {
  const auto m = ParseLabelMatchers(R"(team="ml", pod!~'test-.*',x=~"a|b" ,note!="say \"hi\"\\")");
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_EQ(m->size(), 4u);
  EXPECT_EQ((*m)[0], (LabelMatcher{.label = "team", .op = "=", .value = "ml"}));
  EXPECT_EQ((*m)[1], (LabelMatcher{.label = "pod", .op = "!~", .value = "test-.*"}));
  EXPECT_EQ((*m)[2], (LabelMatcher{.label = "x", .op = "=~", .value = "a|b"}));
  EXPECT_EQ((*m)[3].value, "say \"hi\"\\");
  // Written back for PromQL with the escapes PromQL reads.
  EXPECT_EQ((*m)[3].ToPromQL(), R"(note!="say \"hi\"\\")");
}

TEST(ParseLabelMatchers, ErrorsNameTheFlagAndTheMatcher) {
  struct Case {
    const char* text;
    const char* error;
  };
  for (const Case& c : {Case{"", "--selector: no matcher"},
                        Case{R"(team=ml)", "--selector: bad matcher 'team=ml': the value must be quoted"},
                        Case{R"(a="1",9x="2")", "bad matcher '9x=\"2\"': a label name starts with a letter or _"},
                        Case{R"(a=="1")", "bad matcher 'a==\"1\"': the value must be quoted"},
                        Case{R"(a<"1")", "bad matcher 'a<\"1\"': no operator"},
                        Case{R"(a="1)", "bad matcher 'a=\"1': unterminated string"},
                        Case{R"(a="1" b="2")", "expected ',' between matchers"},
                        Case{R"(team="ml",)", "--selector: a trailing ',' after the last matcher 'team=\"ml\"'"},
                        Case{R"(a="1",b="2" , )", "a trailing ',' after the last matcher 'b=\"2\" '"},
                        Case{R"(__name__="foo")", "bad matcher '__name__=\"foo\"': __name__ would change the metric"},
                        Case{R"(a="1",__name__=~"x.*")", "bad matcher '__name__=~\"x.*\"': __name__"},
                        Case{R"(a="\q")", "unknown escape \\q"}}) {
    SCOPED_TRACE(c.text);
    const auto m = ParseLabelMatchers(c.text);
    ASSERT_FALSE(m);
    EXPECT_EQ(m.error().code, Code::kInvalidArgument);
    EXPECT_THAT(m.error().message, HasSubstr(c.error));
  }
}

TEST(ParseNamespaces, NamesAreKubernetesLabels) {
  EXPECT_EQ(*ParseNamespaces("ml, serving"), (std::vector<std::string>{"ml", "serving"}));
  for (const std::string& bad : std::vector<std::string>{"", "ml,", "ML", "a_b", "-a", std::string(64, 'a')}) {
    SCOPED_TRACE(bad);
    const auto r = ParseNamespaces(bad);
    ASSERT_FALSE(r);
    EXPECT_THAT(r.error().message, HasSubstr("--namespace: '"));
  }
}

TEST(AddMatchers, IntoBareAndBracedSelectors) {
  const std::vector<LabelMatcher> m = {{.label = "namespace", .op = "=~", .value = "a|b\\.c"}};
  EXPECT_EQ(AddMatchers("up", m), R"(up{namespace=~"a|b\\.c"})");
  EXPECT_EQ(AddMatchers(R"(kube_pod_status_phase{phase=~"Succeeded|Failed"})", m),
            R"(kube_pod_status_phase{phase=~"Succeeded|Failed",namespace=~"a|b\\.c"})");
  EXPECT_EQ(AddMatchers("up{}", m), R"(up{namespace=~"a|b\\.c"})");
  EXPECT_EQ(AddMatchers("up", {}), "up");
}

TEST(NamespaceMatchers, OneIsEqualSeveralAreAnEscapedAlternation) {
  EXPECT_TRUE(NamespaceMatchers({}).empty());
  EXPECT_EQ(NamespaceMatchers({"ml"}).front().ToPromQL(), R"(namespace="ml")");
  EXPECT_EQ(NamespaceMatchers({"ml", "a.b"}).front().ToPromQL(), R"(namespace=~"ml|a\\.b")");
  EXPECT_EQ(RegexEscape("a.b+c(d)|[e]{f}^$*?\\"), R"(a\.b\+c\(d\)\|\[e\]\{f\}\^\$\*\?\\)");
}

}  // namespace
}  // namespace gpufit
