#include "common/index_map.h"

#include <gtest/gtest.h>

#include <random>

#include "absl/strings/match.h"

#include "common/box.h"

namespace distarray {
namespace {

v1::Slice S(std::optional<int64_t> start, std::optional<int64_t> stop,
            std::optional<int64_t> step = std::nullopt) {
  v1::Slice s;
  if (start) s.set_start(*start);
  if (stop) s.set_stop(*stop);
  if (step) s.set_step(*step);
  return s;
}

Range Norm(const v1::Slice& s, int64_t dim) {
  auto r = NormalizeSlice(s, dim, "f");
  EXPECT_TRUE(r.ok()) << r.status();
  return r.value_or(Range{});
}

TEST(NormalizeSliceTest, PythonSemantics) {
  EXPECT_EQ(Norm(S({}, {}), 10), (Range{0, 1, 10}));
  EXPECT_EQ(Norm(S(2, 8, 3), 10), (Range{2, 3, 2}));  // 2, 5
  EXPECT_EQ(Norm(S(-3, {}), 10), (Range{7, 1, 3}));
  EXPECT_EQ(Norm(S({}, -2), 10), (Range{0, 1, 8}));
  EXPECT_EQ(Norm(S({}, {}, -1), 10), (Range{0, 1, 10}));  // ::-1
  EXPECT_EQ(Norm(S(8, 2, -3), 10), (Range{5, 3, 2}));     // 8, 5
  EXPECT_EQ(Norm(S(-1, -4, -1), 10), (Range{7, 1, 3}));   // 9, 8, 7
  EXPECT_EQ(Norm(S(9, {}, -4), 10), (Range{1, 4, 3}));    // 9, 5, 1
  EXPECT_EQ(Norm(S(0, 10), 10), (Range{0, 1, 10}));
}

// Extreme steps and bounds must neither wrap nor select elements outside the axis (each of
// these was accepted with an out-of-bounds stop or start before the arithmetic was checked).
TEST(NormalizeSliceTest, ExtremeStepsStayInBounds) {
  constexpr int64_t kMax = INT64_MAX;
  EXPECT_EQ(Norm(S(0, 5, kMax - 2), 5), (Range{0, 1, 1}));
  EXPECT_EQ(Norm(S(0, 64, kMax), 64), (Range{0, 1, 1}));
  EXPECT_EQ(Norm(S(1, -6, -kMax), 5), (Range{1, 1, 1}));
  EXPECT_EQ(Norm(S({}, {}, INT64_MIN), 5), (Range{4, 1, 1}));
  EXPECT_EQ(Norm(S({}, {}, kMax), kMax), (Range{0, 1, 1}));
  EXPECT_EQ(Norm(S({}, {}, -kMax), kMax), (Range{kMax - 1, 1, 1}));
  EXPECT_EQ(Norm(S(0, kMax, 2), kMax), (Range{0, 2, kMax / 2 + 1}));
  EXPECT_EQ(Norm(S({}, {}, -2), kMax), (Range{0, 2, kMax / 2 + 1}));
  EXPECT_FALSE(NormalizeSlice(S(INT64_MIN, {}), 5, "f").ok());
  EXPECT_FALSE(NormalizeSlice(S({}, INT64_MIN, -1), 5, "f").ok());
  EXPECT_FALSE(NormalizeSlice(S(kMax, {}, -1), 5, "f").ok());
  // Fuzz: every normalized range lies inside the axis.
  std::mt19937_64 rng(7);
  const int64_t picks[] = {0,         1,        2,        3,         -1,
                           -2,        -5,       4,        5,         6,
                           kMax,      kMax - 1, kMax - 2, INT64_MIN, INT64_MIN + 1,
                           -kMax / 2, kMax / 2};
  auto pick = [&] { return picks[rng() % std::size(picks)]; };
  for (int i = 0; i < 20000; ++i) {
    const int64_t dim = (i % 3 == 0) ? kMax - static_cast<int64_t>(rng() % 3) : 1 + rng() % 7;
    const v1::Slice slice = S(pick(), pick(), pick());
    auto r = NormalizeSlice(slice, dim, "f");
    if (!r.ok()) continue;
    ASSERT_GE(r->start, 0) << slice.DebugString();
    ASSERT_GE(r->step, 1) << slice.DebugString();
    ASSERT_GE(r->count, 1) << slice.DebugString();
    ASSERT_LE(r->count, dim) << slice.DebugString();
    ASSERT_LE((static_cast<__int128>(r->count) - 1) * r->step + r->start, dim - 1)
        << slice.DebugString();
  }
}

TEST(NormalizeRegionSelectionTest, KeepsTheDirectionOfEachAxis) {
  v1::Region region;
  *region.add_slices() = S({}, {}, -2);
  *region.add_slices() = S(2, 7);
  *region.add_slices() = S(-1, 2, -3);
  auto r = NormalizeRegionSelection(region, {10, 10, 10});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->box, (Box{Range{1, 2, 5}, Range{2, 1, 5}, Range{3, 3, 3}}));
  EXPECT_EQ(r->descending, (std::vector<bool>{true, false, true}));
  EXPECT_TRUE(r->any_descending());
}

TEST(NormalizeIndexMapTest, LimitsTheNumberOfChunks) {
  v1::IndexMap map;
  for (int i = 0; i < 5; ++i) {
    v1::Chunk* c = map.add_chunks();
    *c->add_slices() = S(i, i + 1);
  }
  EXPECT_TRUE(NormalizeIndexMap(map, {5}, 1, "m", 5).ok());
  auto r = NormalizeIndexMap(map, {5}, 1, "m", 4);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "m.chunks: 5 chunks exceed the limit of 4");
}

TEST(NormalizeSliceTest, ErrorsNameTheField) {
  struct Case {
    v1::Slice slice;
    std::string message;
  };
  const std::vector<Case> cases = {
      {S(0, 5, 0), "f: step must not be zero"},
      {S(0, 11), "f: stop 11 is out of bounds for an axis of size 10"},
      {S(-11, {}), "f: start -11 is out of bounds for an axis of size 10"},
      {S(10, {}), "f: slice 10:10:1 selects no elements"},
      {S(5, 3), "f: slice 5:3:1 selects no elements"},
      {S(10, {}, -1), "f: start 10 is out of bounds for an axis of size 10"},
      {S(3, 5, -1), "f: slice 3:5:-1 selects no elements"},
      {S(3, -12, -1), "f: stop -12 is out of bounds for an axis of size 10"},
  };
  for (const Case& c : cases) {
    auto r = NormalizeSlice(c.slice, 10, "f");
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message(), c.message);
  }
}

TEST(NormalizeIndexMapTest, ValidatesDevicesRankAndAxes) {
  v1::IndexMap map;
  auto* c = map.add_chunks();
  c->set_device(1);
  *c->add_slices() = S(0, 4);
  *c->add_slices() = S({}, {}, 2);
  auto ok = NormalizeIndexMap(map, {4, 6}, 2);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)[0].device, 1);
  EXPECT_EQ((*ok)[0].box[1], (Range{0, 2, 3}));

  auto bad_device = NormalizeIndexMap(map, {4, 6}, 1);
  EXPECT_EQ(bad_device.status().message(),
            "index_map.chunks[0].device: device 1 does not exist (1 devices)");
  auto bad_rank = NormalizeIndexMap(map, {4, 6, 2}, 2);
  EXPECT_EQ(bad_rank.status().message(),
            "index_map.chunks[0].slices: has 2 slices for an array of rank 3");
  auto bad_axis = NormalizeIndexMap(map, {3, 6}, 2);
  EXPECT_EQ(bad_axis.status().message(),
            "index_map.chunks[0].slices[0]: stop 4 is out of bounds for an axis of size 3");
}

TEST(NormalizeRegionTest, OutOfBoundsIsOutOfRange) {
  v1::Region region;
  *region.add_slices() = S(0, 12);
  auto r = NormalizeRegion(region, {10});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(NormalizeRegion(v1::Region(), {3, 4}).value(), FullBox({3, 4}));
}

// The code follows the kind of error, not its wording: a chunk outside its array is a malformed
// index map (INVALID_ARGUMENT), a region outside the array is OUT_OF_RANGE with the same
// message, and a region malformed in any other way stays INVALID_ARGUMENT.
TEST(NormalizeIndexMapTest, OutOfBoundsChunkIsInvalidArgument) {
  v1::IndexMap map;
  *map.add_chunks()->add_slices() = S(-11, {});
  auto r = NormalizeIndexMap(map, {10}, 1);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "index_map.chunks[0].slices[0]: start -11 is out of bounds for an axis of size 10");
  v1::IndexMap backwards;
  *backwards.add_chunks()->add_slices() = S(10, {}, -1);
  EXPECT_EQ(NormalizeIndexMap(backwards, {10}, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  v1::IndexMap empty_slice;
  *empty_slice.add_chunks()->add_slices() = S(5, 3);
  EXPECT_EQ(NormalizeIndexMap(empty_slice, {10}, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(NormalizeRegionTest, OnlyBoundsOutsideTheArrayAreOutOfRange) {
  struct Case {
    v1::Slice slice;
    absl::StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {S(0, 11), absl::StatusCode::kOutOfRange,
       "r.slices[1]: stop 11 is out of bounds for an axis of size 10"},
      {S(-11, {}), absl::StatusCode::kOutOfRange,
       "r.slices[1]: start -11 is out of bounds for an axis of size 10"},
      {S(10, {}, -1), absl::StatusCode::kOutOfRange,
       "r.slices[1]: start 10 is out of bounds for an axis of size 10"},
      {S(3, -12, -1), absl::StatusCode::kOutOfRange,
       "r.slices[1]: stop -12 is out of bounds for an axis of size 10"},
      {S(0, 5, 0), absl::StatusCode::kInvalidArgument, "r.slices[1]: step must not be zero"},
      {S(5, 3), absl::StatusCode::kInvalidArgument, "r.slices[1]: slice 5:3:1 selects no elements"},
      {S(3, 5, -1), absl::StatusCode::kInvalidArgument,
       "r.slices[1]: slice 3:5:-1 selects no elements"},
  };
  for (const Case& c : cases) {
    v1::Region region;
    *region.add_slices() = S({}, {});
    *region.add_slices() = c.slice;
    auto r = NormalizeRegionSelection(region, {4, 10}, "r");
    ASSERT_FALSE(r.ok()) << c.message;
    EXPECT_EQ(r.status().code(), c.code) << c.message;
    EXPECT_EQ(r.status().message(), c.message);
    EXPECT_EQ(NormalizeRegion(region, {4, 10}, "r").status(), r.status());
  }
  v1::Region wrong_rank;
  *wrong_rank.add_slices() = S(0, 1);
  auto r = NormalizeRegion(wrong_rank, {4, 10}, "r");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "r.slices: has 1 slices for an array of rank 2");
}

TEST(ValidateShapeTest, TakesZeroSizeRejectsNegativeHugeAndDeep) {
  EXPECT_TRUE(ValidateShape({3, 4}, DType::kFloat32, "shape").ok());
  EXPECT_TRUE(ValidateShape({}, DType::kFloat32, "shape").ok());  // a 0-d array
  EXPECT_TRUE(ValidateShape({3, 0}, DType::kFloat32, "shape").ok());
  EXPECT_TRUE(ValidateShape({0}, DType::kFloat32, "shape").ok());
  EXPECT_EQ(ValidateShape({-2}, DType::kFloat32, "shape").message(),
            "shape.dims[0]: must not be negative, got -2");
  // As in NumPy, the other axes of a zero-size array must still describe an array that fits.
  EXPECT_TRUE(ValidateShape({1LL << 20, 0, 1LL << 20}, DType::kFloat32, "shape").ok());
  EXPECT_TRUE(
      absl::StartsWith(ValidateShape({1LL << 40, 0, 1LL << 40}, DType::kFloat32, "shape").message(),
                       "shape: the array is too large"));
  EXPECT_TRUE(
      absl::StartsWith(ValidateShape({1LL << 40, 1LL << 40}, DType::kFloat32, "shape").message(),
                       "shape: the array is too large"));
  // A product that wraps int64 to a small positive number must not pass.
  EXPECT_EQ(ValidateShape({1LL << 32, 1LL << 32, 2}, DType::kInt8, "shape").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateShape(Shape(17, 1), DType::kFloat32, "shape").message(),
            "shape: rank 17 exceeds the maximum of 16");
}

TEST(IndexMapTest, ZeroSizeArrayMapsNormalizeToNoChunks) {
  v1::IndexMap map;
  v1::Chunk* whole = map.add_chunks();  // OnDevice: unset slices
  whole->set_device(0);
  whole->add_slices();
  whole->add_slices();
  v1::Chunk* rows = map.add_chunks();  // a row split's empty share
  rows->set_device(1);
  *rows->add_slices() = S(2, 3);
  *rows->add_slices() = S(0, 0);
  auto normalized = NormalizeIndexMap(map, {3, 0}, 2);
  ASSERT_TRUE(normalized.ok()) << normalized.status();
  EXPECT_TRUE(normalized->empty());
  EXPECT_TRUE(NormalizeIndexMap(v1::IndexMap(), {0}, 2).ok());
  // Still checked: the device, the number of slices and bounds on the empty axis.
  rows->set_device(2);
  EXPECT_EQ(NormalizeIndexMap(map, {3, 0}, 2).status().message(),
            "index_map.chunks[1].device: device 2 does not exist (2 devices)");
  rows->set_device(1);
  *rows->mutable_slices(1) = S(0, 1);
  EXPECT_EQ(NormalizeIndexMap(map, {3, 0}, 2).status().message(),
            "index_map.chunks[1].slices[1]: stop 1 is out of bounds for an axis of size 0");
  // A non-empty array still refuses an empty chunk.
  *rows->mutable_slices(1) = S(0, 0);
  EXPECT_FALSE(NormalizeIndexMap(map, {3, 2}, 2).ok());
}

TEST(IndexMapTest, RegionOfZeroSizeArraySelectsNothing) {
  auto all = NormalizeRegion(v1::Region(), {3, 0}, "r");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(NumElements(*all), 0);
  v1::Region rows;
  *rows.add_slices() = S(1, 2);
  *rows.add_slices() = S({}, {});
  auto some = NormalizeRegion(rows, {3, 0}, "r");
  ASSERT_TRUE(some.ok()) << some.status();
  EXPECT_EQ(NumElements(*some), 0);
  v1::Region outside;
  *outside.add_slices() = S(0, 4);
  *outside.add_slices() = S({}, {});
  EXPECT_EQ(NormalizeRegion(outside, {3, 0}, "r").status().code(), absl::StatusCode::kOutOfRange);
}

TEST(BoxTest, ContiguousOffsetAndLocalCoordinates) {
  const Shape shape = {4, 5, 6};
  EXPECT_EQ(ContiguousOffset(shape, {Range{1, 1, 2}, Range{0, 1, 5}, Range{0, 1, 6}}), 30);
  EXPECT_EQ(ContiguousOffset(shape, {Range{2, 1, 1}, Range{3, 1, 1}, Range{1, 1, 4}}), 60 + 18 + 1);
  EXPECT_FALSE(ContiguousOffset(shape, {Range{1, 1, 2}, Range{0, 1, 4}, Range{0, 1, 6}}));
  EXPECT_FALSE(ContiguousOffset(shape, {Range{0, 1, 1}, Range{0, 1, 1}, Range{0, 2, 3}}));
  EXPECT_EQ(ContiguousOffset({}, {}), 0);
  // Chunk 2:20:3 holds 2, 5, 8, ...; the global piece 8:20:6 sits at local 2:?:2.
  EXPECT_EQ(ToLocal({Range{2, 3, 6}}, {Range{8, 6, 2}}), (Box{Range{2, 2, 2}}));
  const StridedBox sb = MakeStridedBox(shape, {Range{1, 2, 2}, Range{0, 1, 5}, Range{3, 1, 2}});
  EXPECT_EQ(sb.offset, 30 + 3);
  EXPECT_EQ(sb.stride[0], 60);
  EXPECT_EQ(sb.size(), 20);
}

}  // namespace
}  // namespace distarray
