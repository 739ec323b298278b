#include "gpufit/placement/internal/max_count_tree.h"

#include <gtest/gtest.h>

#include "gpufit/core/rng.h"

namespace gpufit::internal {
namespace {

constexpr std::int64_t kNone = MaxCountTree::kNone;
constexpr std::size_t kNpos = MaxCountTree::kNpos;

// Brute-force answers over a plain vector.
std::pair<std::int64_t, std::int64_t> MaxCountOracle(const std::vector<std::int64_t>& v, std::size_t from,
                                                     std::size_t to) {
  std::int64_t max = kNone, count = 0;
  for (std::size_t p = from; p < std::min(to, v.size()); ++p) {
    if (count == 0 || v[p] > max) {
      max = v[p];
      count = 1;
    } else if (v[p] == max) {
      ++count;
    }
  }
  return {max, count};
}

std::size_t FirstAboveOracle(const std::vector<std::int64_t>& v, std::size_t from, std::int64_t above) {
  for (std::size_t p = from; p < v.size(); ++p) {
    if (v[p] > above) return p;
  }
  return kNpos;
}

std::size_t KthOracle(const std::vector<std::int64_t>& v, std::size_t from, std::int64_t value, std::int64_t k) {
  for (std::size_t p = from; p < v.size(); ++p) {
    if (v[p] == value && k-- == 0) return p;
  }
  return kNpos;
}

TEST(MaxCountTree, StartsWithNothingAnywhere) {
  const MaxCountTree t(5);
  EXPECT_EQ(t.Max(), kNone);
  EXPECT_EQ(t.MaxCount(0, 5), std::make_pair(kNone, std::int64_t{5}));
  EXPECT_EQ(t.MaxCount(2, 2), std::make_pair(kNone, std::int64_t{0}));
  EXPECT_EQ(t.FirstAbove(0, kNone), kNpos);
}

TEST(MaxCountTree, SmallCaseByHand) {
  MaxCountTree t(6);
  const std::vector<std::int64_t> v{3, kNone, 7, 3, 7, 5};
  t.Fill([&](std::size_t p) { return v[p]; });
  EXPECT_EQ(t.Max(), 7);
  EXPECT_EQ(t.MaxCount(0, 6), std::make_pair(std::int64_t{7}, std::int64_t{2}));
  EXPECT_EQ(t.MaxCount(0, 2), std::make_pair(std::int64_t{3}, std::int64_t{1}));
  EXPECT_EQ(t.FirstAbove(0, kNone), 0u);
  EXPECT_EQ(t.FirstAbove(0, 3), 2u);
  EXPECT_EQ(t.FirstAbove(3, 6), 4u);
  EXPECT_EQ(t.FirstAbove(5, 5), kNpos);
  EXPECT_EQ(t.KthOfMax(0, 7, 0), 2u);
  EXPECT_EQ(t.KthOfMax(0, 7, 1), 4u);
  EXPECT_EQ(t.KthOfMax(0, 7, 2), kNpos);
  EXPECT_EQ(t.KthOfMax(3, 7, 0), 4u);
  t.Set(4, 1);
  EXPECT_EQ(t.MaxCount(3, 6), std::make_pair(std::int64_t{5}, std::int64_t{1}));
  EXPECT_EQ(t.Get(4), 1);
}

TEST(MaxCountTree, AgreesWithBruteForceUnderRandomUpdates) {
  Rng rng(7);
  for (std::size_t n : {1u, 2u, 3u, 7u, 8u, 9u, 31u, 100u}) {
    MaxCountTree t(n);
    std::vector<std::int64_t> v(n, kNone);
    for (int step = 0; step < 600; ++step) {
      const std::size_t p = rng.Below(n);
      // Few distinct values, so that ties are common; kNone now and then.
      const std::int64_t value = rng.Below(5) == 0 ? kNone : static_cast<std::int64_t>(rng.Below(4));
      v[p] = value;
      t.Set(p, value);
      const std::size_t from = rng.Below(n + 1), to = rng.Below(n + 1);
      ASSERT_EQ(t.MaxCount(from, to), MaxCountOracle(v, from, to)) << n << " " << step;
      const std::int64_t above = rng.Below(3) == 0 ? kNone : static_cast<std::int64_t>(rng.Below(4)) - 1;
      ASSERT_EQ(t.FirstAbove(from, above), FirstAboveOracle(v, from, above));
      if (from < n) {
        const std::int64_t max = MaxCountOracle(v, from, n).first;
        const std::int64_t k = static_cast<std::int64_t>(rng.Below(4));
        if (max != kNone) {
          ASSERT_EQ(t.KthOfMax(from, max, k), KthOracle(v, from, max, k));
        }
      }
      ASSERT_EQ(t.Max(), MaxCountOracle(v, 0, n).first);
    }
  }
}

}  // namespace
}  // namespace gpufit::internal
