#include "gpufit/core/result.h"

#include <gtest/gtest.h>

namespace gpufit {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgument("{} is odd", x);
  return x / 2;
}

TEST(Result, CarriesAValueOrAnError) {
  ASSERT_TRUE(Half(4).has_value());
  EXPECT_EQ(*Half(4), 2);
  const Result<int> bad = Half(3);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, Code::kInvalidArgument);
  EXPECT_EQ(bad.error().message, "3 is odd");
}

TEST(ExitCodeFor, BadInputIsTwoInternalIsOne) {
  EXPECT_EQ(ExitCodeFor(Code::kInvalidArgument), 2);
  EXPECT_EQ(ExitCodeFor(Code::kNotFound), 2);
  EXPECT_EQ(ExitCodeFor(Code::kFailedPrecondition), 2);
  EXPECT_EQ(ExitCodeFor(Code::kInternal), 1);
}

}  // namespace
}  // namespace gpufit
