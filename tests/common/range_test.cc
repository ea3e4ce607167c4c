#include "common/range.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace distarray {
namespace {

std::set<int64_t> Elements(const Range& r) {
  std::set<int64_t> out;
  for (int64_t i = 0; i < r.count; ++i) out.insert(r.start + i * r.step);
  return out;
}

TEST(RangeTest, IntersectMatchesBruteForceOnRandomRanges) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int64_t> start(0, 40), step(1, 7), count(1, 15);
  for (int trial = 0; trial < 5000; ++trial) {
    const Range a{start(rng), step(rng), count(rng)};
    const Range b{start(rng), step(rng), count(rng)};
    std::set<int64_t> want;
    for (int64_t x : Elements(a)) {
      if (b.Contains(x)) want.insert(x);
    }
    const std::optional<Range> got = Intersect(a, b);
    if (want.empty()) {
      EXPECT_FALSE(got.has_value());
    } else {
      ASSERT_TRUE(got.has_value());
      EXPECT_EQ(Elements(*got), want);
    }
  }
}

TEST(RangeTest, ContainsRange) {
  EXPECT_TRUE(ContainsRange(Range{0, 2, 10}, Range{4, 4, 3}));
  EXPECT_FALSE(ContainsRange(Range{0, 2, 10}, Range{4, 3, 3}));
  EXPECT_FALSE(ContainsRange(Range{0, 2, 10}, Range{1, 2, 1}));
  EXPECT_TRUE(ContainsRange(Range{0, 2, 10}, Range{18, 5, 1}));
  EXPECT_FALSE(ContainsRange(Range{0, 2, 10}, Range{16, 2, 3}));
}

}  // namespace
}  // namespace distarray
