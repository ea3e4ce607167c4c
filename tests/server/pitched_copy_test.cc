// AsPitched against the element-by-element walk it replaces: every element of a pitched copy
// must land where BoxOffset puts it, and boxes that are not rows at fixed pitches are refused.
#include <random>

#include "common/box.h"
#include "gtest/gtest.h"
#include "server/backend/pitched_copy.h"
#include "server/kernels/ops.h"

namespace distarray {
namespace {

TEST(PitchedCopyTest, EveryElementLandsWhereTheBoxWalkPutsIt) {
  std::mt19937_64 random(3);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(random);
  };
  int pitched = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const int rank = static_cast<int>(pick(1, 4));
    Shape src_shape, dst_shape;
    Box src_box, dst_box;
    for (int d = 0; d < rank; ++d) {
      const int64_t count = pick(1, 4);
      const int64_t src_step = pick(1, 2), dst_step = pick(1, 2);
      const int64_t src_start = pick(0, 2), dst_start = pick(0, 2);
      src_shape.push_back(src_start + (count - 1) * src_step + 1 + pick(0, 2));
      dst_shape.push_back(dst_start + (count - 1) * dst_step + 1 + pick(0, 2));
      src_box.push_back(Range{src_start, src_step, count});
      dst_box.push_back(Range{dst_start, dst_step, count});
    }
    const StridedBox src = MakeStridedBox(src_shape, src_box);
    const StridedBox dst = MakeStridedBox(dst_shape, dst_box);
    const std::optional<PitchedCopy> copy = AsPitched(src, dst);
    if (!copy) continue;
    ++pitched;
    ASSERT_EQ(copy->width * copy->rows, src.size());
    for (int64_t i = 0; i < src.size(); ++i) {
      const int64_t row = i / copy->width, column = i % copy->width;
      ASSERT_EQ(copy->src_offset + row * copy->src_pitch + column, BoxOffset(src, i))
          << "trial " << trial;
      ASSERT_EQ(copy->dst_offset + row * copy->dst_pitch + column, BoxOffset(dst, i))
          << "trial " << trial;
    }
  }
  EXPECT_GT(pitched, 100);  // the walk above met enough pitched copies to mean something
}

TEST(PitchedCopyTest, InnerSlicesOfAGridArePitched) {
  // u[1:-1, 1:-1] of a 6 x 8 grid into a dense 4 x 6 array.
  const StridedBox src = MakeStridedBox({6, 8}, {Range{1, 1, 4}, Range{1, 1, 6}});
  const StridedBox dst = MakeStridedBox({4, 6}, {Range{0, 1, 4}, Range{0, 1, 6}});
  const std::optional<PitchedCopy> copy = AsPitched(src, dst);
  ASSERT_TRUE(copy.has_value());
  EXPECT_EQ(copy->src_offset, 9);
  EXPECT_EQ(copy->src_pitch, 8);
  EXPECT_EQ(copy->dst_pitch, 6);
  EXPECT_EQ(copy->width, 6);
  EXPECT_EQ(copy->rows, 4);
  // Every second column: rows of one element (the caller decides whether that is worth a 2-D copy).
  const std::optional<PitchedCopy> columns =
      AsPitched(MakeStridedBox({6, 8}, {Range{0, 1, 6}, Range{0, 2, 4}}),
                MakeStridedBox({6, 4}, {Range{0, 1, 6}, Range{0, 1, 4}}));
  ASSERT_TRUE(columns.has_value());
  EXPECT_EQ(columns->width, 1);
  EXPECT_EQ(columns->rows, 24);
  EXPECT_EQ(columns->src_pitch, 2);
  // Two rows in each of two planes: the planes do not continue the rows' pitch (32 != 2 * 8).
  EXPECT_FALSE(
      AsPitched(MakeStridedBox({2, 4, 8}, {Range{0, 1, 2}, Range{0, 1, 2}, Range{0, 1, 4}}),
                MakeStridedBox({2, 2, 4}, {Range{0, 1, 2}, Range{0, 1, 2}, Range{0, 1, 4}}))
          .has_value());
}

}  // namespace
}  // namespace distarray
