#include "gpufit/core/text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpufit {
namespace {

using ::testing::ElementsAre;

TEST(SplitList, TrimsSpacesAndDropsEmptyItems) {
  EXPECT_THAT(SplitList(" a, b,,c ", ','), ElementsAre("a", "b", "c"));
  EXPECT_THAT(SplitList("T4|V100M32", '|'), ElementsAre("T4", "V100M32"));
  EXPECT_THAT(SplitList("", ','), ElementsAre());
  EXPECT_THAT(SplitList(" , ", ','), ElementsAre());
}

// Expected strings written by hand from the escaping rules in text.h.
TEST(QuoteForMessage, EscapesWhatCouldBreakALogLine) {
  EXPECT_EQ(QuoteForMessage("h100"), "'h100'");
  EXPECT_EQ(QuoteForMessage("a\rb\nc\td"), R"('a\rb\nc\td')");
  EXPECT_EQ(QuoteForMessage(std::string("x\0y\x1b[31m\x7f", 9)), R"('x\x00y\x1B[31m\x7F')");
  EXPECT_EQ(QuoteForMessage("it's \\"), R"('it\'s \\')");
  // U+2028 LINE SEPARATOR, U+2029 PARAGRAPH SEPARATOR, U+0085 NEXT LINE; U+00E9 stays.
  EXPECT_EQ(QuoteForMessage("a\xE2\x80\xA8"
                            "b\xE2\x80\xA9"
                            "c\xC2\x85"
                            "d\xC3\xA9"),
            R"('a\u2028b\u2029c\u0085d)"
            "\xC3\xA9'");
}

TEST(QuoteForMessage, TruncatesLongTextAndSaysHowLong) {
  const std::string mb(1 << 20, 'x');
  EXPECT_EQ(QuoteForMessage(mb, 4), "'xxxx'... (1048576 bytes)");
  EXPECT_EQ(QuoteForMessage("abcd", 4), "'abcd'");
  // A cut inside U+00E9 (C3 A9) drops the half character; a cut after it keeps it.
  EXPECT_EQ(QuoteForMessage("ab\xC3\xA9"
                            "z",
                            3),
            "'ab'... (5 bytes)");
  EXPECT_EQ(QuoteForMessage("ab\xC3\xA9"
                            "z",
                            4),
            "'ab\xC3\xA9'... (5 bytes)");
}

// Issue 40: plan.md printed untrusted names raw (<script>, a | that split a table row).
TEST(MarkdownText, EscapesEverythingThatIsMarkup) {
  EXPECT_EQ(MarkdownText("ml/llama-0"), "ml/llama-0") << "ordinary names unchanged";
  EXPECT_EQ(MarkdownText("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(MarkdownText("a|b"), "a\\|b");
  EXPECT_EQ(MarkdownText("`rm -rf`"), "\\`rm -rf\\`");
  EXPECT_EQ(MarkdownText("x\ny\rz"), "x y z");
  EXPECT_EQ(MarkdownText("[click](http://e)"), "\\[click\\](http://e)");
  EXPECT_EQ(MarkdownText("&amp; \\"), "&amp;amp; \\\\");
}

}  // namespace
}  // namespace gpufit
