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

}  // namespace
}  // namespace gpufit
