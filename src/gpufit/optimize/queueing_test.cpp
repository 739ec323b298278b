#include "gpufit/optimize/queueing.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gpufit {
namespace {

// ../shared/reference/formulas.md section 2 test vectors.
TEST(QueueingTest, ErlangCMatchesTheTestVectors) {
  EXPECT_NEAR(ErlangC(3, 2.0), 0.4444, 5e-5);
  EXPECT_NEAR(ErlangC(3, 2.5), 0.7022, 5e-5);
  EXPECT_NEAR(ErlangC(4, 2.5), 0.3199, 5e-5);
  EXPECT_NEAR(ErlangC(5, 2.5), 0.1304, 5e-5);
  EXPECT_NEAR(ErlangC(6, 2.5), 0.0474, 5e-5);
  EXPECT_NEAR(ErlangC(7, 2.5), 0.0154, 5e-5);
}

TEST(QueueingTest, ErlangCAgreesWithTheFactorialForm) {
  // C(c, a) = (a^c / c!) c / (c - a) / (sum_{k<c} a^k / k! + (a^c / c!) c / (c - a)).
  for (int c = 1; c <= 12; ++c) {
    for (double a = 0.1; a < c; a += 0.37) {
      double sum = 0, term = 1;
      for (int k = 0; k < c; ++k) {
        sum += term;
        term *= a / (k + 1);
      }
      const double top = term * c / (c - a);
      EXPECT_NEAR(ErlangC(c, a), top / (sum + top), 1e-12) << c << " " << a;
    }
  }
}

TEST(QueueingTest, WaitsAndSizing) {
  // lambda = 30/h, mean service 5 min: a = 2.5; "90% not delayed" needs c = 6.
  const double lambda = 30.0 / 3600, mu = 1.0 / 300;
  EXPECT_NEAR(MmcMeanWait(6, lambda, mu), 0.0474 / (6 * mu - lambda), 0.01);
  EXPECT_NEAR(MmcWaitTail(6, lambda, mu, 0), ErlangC(6, 2.5), 1e-12);
  EXPECT_EQ(MinServersForWaitTail(lambda, mu, 0, 0.10), 6);
  EXPECT_EQ(MinServersForWaitTail(0, mu, 0, 0.10), 0);
  EXPECT_TRUE(std::isinf(MmcMeanWait(2, lambda, mu)));
}

}  // namespace
}  // namespace gpufit
