// Basic indexing and flat runs as pure functions: the key normalization against Python's own
// slice rules (computed here by brute force), each chunk's selection against element-by-element
// enumeration, and reshape's runs against the positions they must hold.
#include "server/ops/basic_index.h"
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "absl/strings/match.h"
#include "common/box.h"
#include "gtest/gtest.h"
#include "server/kernels/ops.h"
#include "server/ops/flat_runs.h"

namespace distarray {
namespace {

v1::IndexItem Index(int64_t i) {
  v1::IndexItem item;
  item.set_index(i);
  return item;
}
v1::IndexItem SliceItem(std::optional<int64_t> start, std::optional<int64_t> stop,
                        std::optional<int64_t> step) {
  v1::IndexItem item;
  if (start) item.mutable_slice()->set_start(*start);
  if (stop) item.mutable_slice()->set_stop(*stop);
  if (step) item.mutable_slice()->set_step(*step);
  return item;
}
v1::IndexItem NewAxis() {
  v1::IndexItem item;
  item.mutable_new_axis();
  return item;
}
v1::IndexItem Ellipsis() {
  v1::IndexItem item;
  item.mutable_ellipsis();
  return item;
}
v1::IndexKey Key(std::vector<v1::IndexItem> items) {
  v1::IndexKey key;
  for (auto& item : items) *key.add_items() = std::move(item);
  return key;
}

// Python's range(*slice(start, stop, step).indices(n)), written the slow way: every position
// from the start, walked by the step, kept while inside the axis and before the stop.
std::vector<int64_t> PythonSlice(int64_t n, std::optional<int64_t> start,
                                 std::optional<int64_t> stop, int64_t step) {
  auto adjust = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t x = *v < 0 ? *v + n : *v;
    if (step > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  const int64_t first = adjust(start, step > 0 ? 0 : n - 1);
  const int64_t end = adjust(stop, step > 0 ? n : -1);
  std::vector<int64_t> out;
  for (int64_t i = first; step > 0 ? i < end : i > end; i += step) out.push_back(i);
  return out;
}

TEST(BasicIndexTest, SlicesFollowPythonForEveryBoundAndStep) {
  for (int64_t n : {1, 2, 5, 8}) {
    for (int64_t step : {-7, -3, -2, -1, 1, 2, 3, 9}) {
      for (int64_t s = -11; s <= 11; ++s) {
        for (int64_t e = -11; e <= 11; ++e) {
          for (int mask = 0; mask < 4; ++mask) {
            const std::optional<int64_t> start =
                mask & 1 ? std::optional<int64_t>(s) : std::nullopt;
            const std::optional<int64_t> stop = mask & 2 ? std::optional<int64_t>(e) : std::nullopt;
            const std::vector<int64_t> want = PythonSlice(n, start, stop, step);
            absl::StatusOr<BasicIndex> index =
                NormalizeIndexKey(Key({SliceItem(start, stop, step)}), {n}, "key");
            ASSERT_TRUE(index.ok()) << index.status();
            ASSERT_EQ(index->result_shape, Shape{static_cast<int64_t>(want.size())});
            std::vector<int64_t> got;
            const AxisSelection& axis = index->axes[0];
            for (int64_t k = 0; k < axis.range.count; ++k) {
              const int64_t up = axis.range.start + k * axis.range.step;
              got.push_back(up);
            }
            if (axis.reversed) std::reverse(got.begin(), got.end());
            EXPECT_EQ(got, want) << "n=" << n << " start=" << (start ? *start : 999)
                                 << " stop=" << (stop ? *stop : 999) << " step=" << step;
            if (index->empty) EXPECT_TRUE(want.empty());
          }
        }
      }
    }
  }
}

TEST(BasicIndexTest, ExtremeBoundsDoNotOverflow) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  const int64_t small = std::numeric_limits<int64_t>::min();
  absl::StatusOr<BasicIndex> index =
      NormalizeIndexKey(Key({SliceItem(small, big, small)}), {10}, "key");
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->result_shape, Shape{0});
  index = NormalizeIndexKey(Key({SliceItem(big, small, small)}), {10}, "key");
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->result_shape, Shape{1});  // position 9 only
  EXPECT_EQ(index->axes[0].range.start, 9);
  index = NormalizeIndexKey(Key({SliceItem(std::nullopt, std::nullopt, big)}), {10}, "key");
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->result_shape, Shape{1});
}

TEST(BasicIndexTest, IntegersNewAxesAndEllipsisShapeTheResult) {
  absl::StatusOr<BasicIndex> index = NormalizeIndexKey(
      Key({NewAxis(), Index(-1), Ellipsis(), SliceItem(1, std::nullopt, 2), NewAxis()}),
      {4, 5, 6, 7}, "key");
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->result_shape, (Shape{1, 5, 6, 3, 1}));
  EXPECT_EQ(index->result_axes, (std::vector<int>{-1, 1, 2, 3, -1}));
  EXPECT_TRUE(index->axes[0].integer);
  EXPECT_EQ(index->axes[0].range.start, 3);
  // No key at all takes every axis whole; a 0-d array takes only ... and None.
  index = NormalizeIndexKey(Key({}), {3, 2}, "key");
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->result_shape, (Shape{3, 2}));
  index = NormalizeIndexKey(Key({Ellipsis(), NewAxis()}), {}, "key");
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->result_shape, (Shape{1}));
}

TEST(BasicIndexTest, BadKeysNameTheItem) {
  absl::StatusOr<BasicIndex> index = NormalizeIndexKey(Key({Index(1), Index(5)}), {3, 5}, "k");
  EXPECT_EQ(index.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(index.status().message(),
            "k.items[1]: index 5 is out of bounds for axis 1 with size 5");
  index = NormalizeIndexKey(Key({Index(-4)}), {3}, "k");
  EXPECT_EQ(index.status().code(), absl::StatusCode::kOutOfRange);
  index = NormalizeIndexKey(Key({Ellipsis(), Index(0), Ellipsis()}), {3}, "k");
  EXPECT_EQ(index.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(index.status().message().find("k.items[2]"), std::string::npos);
  index = NormalizeIndexKey(Key({Index(0), Index(0)}), {3}, "k");
  EXPECT_EQ(index.status().code(), absl::StatusCode::kInvalidArgument);
  index = NormalizeIndexKey(Key({SliceItem(std::nullopt, std::nullopt, 0)}), {3}, "k");
  EXPECT_EQ(index.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(index.status().message(), "k.items[0].step: must not be zero");
  index = NormalizeIndexKey(Key({v1::IndexItem()}), {3}, "k");
  EXPECT_EQ(index.status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<v1::IndexItem> many(kMaxRank + 1, NewAxis());
  index = NormalizeIndexKey(Key(many), {}, "k");
  EXPECT_EQ(index.status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<v1::IndexItem> too_many(kMaxIndexItems + 1, Ellipsis());
  index = NormalizeIndexKey(Key(too_many), {}, "k");
  EXPECT_EQ(index.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(index.status().message().find("k.items: 65 items"), std::string::npos);
}

// Every element of every chunk, selected by brute force, against SelectFromChunk's boxes and view.
TEST(BasicIndexTest, ChunkSelectionsPlaceEveryElement) {
  std::mt19937_64 random(7);
  const Shape shape = {7, 6, 5};
  for (int trial = 0; trial < 300; ++trial) {
    auto pick = [&](int64_t lo, int64_t hi) {
      return std::uniform_int_distribution<int64_t>(lo, hi)(random);
    };
    std::vector<v1::IndexItem> items;
    for (int64_t n : shape) {
      switch (pick(0, 3)) {
        case 0:
          items.push_back(Index(pick(-n, n - 1)));
          break;
        case 1:
          items.push_back(NewAxis());
          [[fallthrough]];
        default: {
          int64_t step = pick(-3, 3);
          if (step == 0) step = 1;
          items.push_back(SliceItem(pick(-n - 1, n + 1), pick(-n - 1, n + 1), step));
        }
      }
    }
    absl::StatusOr<BasicIndex> index = NormalizeIndexKey(Key(items), shape, "key");
    ASSERT_TRUE(index.ok()) << index.status();
    // A chunk with a strided box, as index maps allow.
    Box chunk;
    for (int64_t n : shape) {
      const int64_t start = pick(0, n - 1);
      const int64_t step = pick(1, 2);
      chunk.push_back(Range{start, step, pick(1, (n - 1 - start) / step + 1)});
    }
    // The expected result: for each result element (C order over the result box of the chunk),
    // the source element it holds.
    std::map<std::vector<int64_t>, std::vector<int64_t>> source_of;  // result index -> source
    const Shape& rshape = index->result_shape;
    const int64_t total = index->empty ? 0 : NumElements(rshape);
    for (int64_t linear = 0; linear < total; ++linear) {
      std::vector<int64_t> r(rshape.size());
      int64_t rest = linear;
      for (int d = static_cast<int>(rshape.size()) - 1; d >= 0; --d) {
        r[d] = rest % rshape[d];
        rest /= rshape[d];
      }
      std::vector<int64_t> s(shape.size());
      for (size_t a = 0; a < shape.size(); ++a) s[a] = index->axes[a].range.start;
      for (size_t d = 0; d < rshape.size(); ++d) {
        const int a = index->result_axes[d];
        if (a < 0) continue;
        const AxisSelection& axis = index->axes[a];
        const int64_t k = axis.reversed ? axis.range.count - 1 - r[d] : r[d];
        s[a] = axis.range.start + k * axis.range.step;
      }
      bool inside = true;
      for (size_t a = 0; a < shape.size(); ++a) inside = inside && chunk[a].Contains(s[a]);
      if (inside) source_of[r] = s;
    }
    const std::vector<ChunkSelection> selections = SelectFromChunk(*index, chunk);
    ASSERT_LE(selections.size(), 1u);  // a key without an integer list meets a chunk once
    const std::optional<ChunkSelection> selection =
        selections.empty() ? std::nullopt : std::optional<ChunkSelection>(selections.front());
    ASSERT_EQ(selection.has_value(), !source_of.empty()) << "trial " << trial;
    if (!selection) continue;
    ASSERT_EQ(NumElements(selection->result_box), static_cast<int64_t>(source_of.size()));
    // Walk the result box in C order; the view must point at the source element's local offset.
    const std::vector<int64_t> dense = DenseStrides(BoxShape(chunk));
    const Shape box_shape = BoxShape(selection->result_box);
    for (int64_t i = 0; i < NumElements(box_shape); ++i) {
      std::vector<int64_t> r(box_shape.size());
      int64_t rest = i;
      for (int d = static_cast<int>(box_shape.size()) - 1; d >= 0; --d) {
        const Range& range = selection->result_box[d];
        r[d] = range.start + (rest % box_shape[d]) * range.step;
        rest /= box_shape[d];
      }
      ASSERT_TRUE(source_of.count(r)) << "trial " << trial << " element " << i;
      int64_t want = 0;
      const std::vector<int64_t>& s = source_of[r];
      for (size_t a = 0; a < shape.size(); ++a) {
        want += (s[a] - chunk[a].start) / chunk[a].step * dense[a];
      }
      ASSERT_EQ(BoxOffset(selection->view, i), want) << "trial " << trial << " element " << i;
    }
  }
}

v1::IndexItem List(const std::vector<int64_t>& values) {
  v1::IndexItem item;
  for (int64_t v : values) item.mutable_indices()->add_values(v);
  return item;
}

// An integer list along axis 1 (with a slice before it and a new axis after): every result
// element is placed exactly once, by one run's selection, and read from the listed position.
TEST(BasicIndexTest, IntegerListsPlaceEveryElementOnce) {
  std::mt19937_64 random(11);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(random);
  };
  const Shape shape = {5, 9};
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int64_t> list(pick(1, 12));
    for (int64_t& v : list) v = pick(-9, 8);  // repeats, runs up and down, negative positions
    absl::StatusOr<BasicIndex> index = NormalizeIndexKey(
        Key({SliceItem(pick(-6, 6), std::nullopt, pick(0, 1) ? 1 : -1), List(list), NewAxis()}),
        shape, "key");
    ASSERT_TRUE(index.ok()) << index.status();
    if (index->empty) continue;
    ASSERT_EQ(index->result_shape[1], static_cast<int64_t>(list.size()));
    const Range rows{pick(0, 4), 1, 0};
    Box chunk = {Range{rows.start, 1, pick(1, 5 - rows.start)}, Range{pick(0, 4), pick(1, 2), 1}};
    chunk[1].count = pick(1, (8 - chunk[1].start) / chunk[1].step + 1);
    const std::vector<int64_t> dense = DenseStrides(BoxShape(chunk));
    std::map<std::vector<int64_t>, int> placed;
    for (const ChunkSelection& s : SelectFromChunk(*index, chunk)) {
      const Shape box_shape = BoxShape(s.result_box);
      for (int64_t i = 0; i < NumElements(box_shape); ++i) {
        std::vector<int64_t> r(box_shape.size());
        int64_t rest = i;
        for (int d = static_cast<int>(box_shape.size()) - 1; d >= 0; --d) {
          r[d] = s.result_box[d].start + (rest % box_shape[d]) * s.result_box[d].step;
          rest /= box_shape[d];
        }
        ++placed[r];
        const AxisSelection& row_axis = index->axes[0];
        const int64_t row =
            row_axis.range.start +
            (row_axis.reversed ? row_axis.range.count - 1 - r[0] : r[0]) * row_axis.range.step;
        const int64_t column = list[r[1]] < 0 ? list[r[1]] + 9 : list[r[1]];
        ASSERT_TRUE(chunk[0].Contains(row) && chunk[1].Contains(column)) << "trial " << trial;
        const int64_t want = (row - chunk[0].start) / chunk[0].step * dense[0] +
                             (column - chunk[1].start) / chunk[1].step * dense[1];
        ASSERT_EQ(BoxOffset(s.view, i), want) << "trial " << trial << " element " << i;
      }
    }
    // Every result element whose source lies in the chunk is placed exactly once.
    for (int64_t r0 = 0; r0 < index->result_shape[0]; ++r0) {
      for (int64_t r1 = 0; r1 < index->result_shape[1]; ++r1) {
        const AxisSelection& row_axis = index->axes[0];
        const int64_t row =
            row_axis.range.start +
            (row_axis.reversed ? row_axis.range.count - 1 - r0 : r0) * row_axis.range.step;
        const int64_t column = list[r1] < 0 ? list[r1] + 9 : list[r1];
        const bool inside = chunk[0].Contains(row) && chunk[1].Contains(column);
        const auto it = placed.find({r0, r1, 0});
        EXPECT_EQ(it == placed.end() ? 0 : it->second, inside ? 1 : 0)
            << "trial " << trial << " (" << r0 << ", " << r1 << ")";
      }
    }
  }
}

TEST(BasicIndexTest, BadIntegerListsNameTheirPosition) {
  absl::StatusOr<BasicIndex> index = NormalizeIndexKey(Key({List({0, 4, -6})}), {5}, "k");
  EXPECT_EQ(index.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(index.status().message(),
            "k.items[0].indices.values[2]: index -6 is out of bounds for axis 0 with size 5");
  index = NormalizeIndexKey(Key({List({0}), List({1})}), {5, 5}, "k");
  EXPECT_EQ(index.status().code(), absl::StatusCode::kInvalidArgument);
  index = NormalizeIndexKey(Key({List({})}), {5}, "k");
  EXPECT_EQ(index.status().code(), absl::StatusCode::kInvalidArgument);
}

// An index array held in the daemon (IndexItem.array) normalizes as the same positions listed,
// with its own field in errors; without the values read it is refused.
TEST(BasicIndexTest, HeldPositionsNormalizeAsListedOnes) {
  const std::vector<int64_t> positions = {7, -1, 0, 0, 2, 3, 4, 5, -3};
  v1::IndexItem held;
  held.mutable_array()->set_handle("idx");
  absl::StatusOr<BasicIndex> listed =
      NormalizeIndexKey(Key({SliceItem(1, std::nullopt, 1), List(positions)}), {4, 8}, "k");
  absl::StatusOr<BasicIndex> read =
      NormalizeIndexKey(Key({SliceItem(1, std::nullopt, 1), held}), {4, 8}, "k", &positions);
  ASSERT_TRUE(listed.ok() && read.ok()) << listed.status() << read.status();
  EXPECT_EQ(read->result_shape, listed->result_shape);
  EXPECT_EQ(read->list_axis, 1);
  EXPECT_EQ(read->run_offsets, listed->run_offsets);
  ASSERT_EQ(read->runs.size(), listed->runs.size());
  for (size_t k = 0; k < read->runs.size(); ++k) {
    EXPECT_EQ(read->runs[k].range, listed->runs[k].range) << k;
    EXPECT_EQ(read->runs[k].reversed, listed->runs[k].reversed) << k;
  }
  const std::vector<int64_t> past = {0, 8};
  read = NormalizeIndexKey(Key({Index(0), held}), {4, 8}, "k", &past);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(read.status().message(),
            "k.items[1].array[1]: index 8 is out of bounds for axis 1 with size 8");
  read = NormalizeIndexKey(Key({held}), {4}, "k");
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  read = NormalizeIndexKey(Key({held, List({0})}), {4, 4}, "k", &positions);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(read.status().message(), "at most one integer array"));
}

// SelectFromChunk stops past its bound: a list of many runs is refused without building them all.
TEST(BasicIndexTest, SelectionsStopPastTheirBound) {
  std::vector<int64_t> positions;
  for (int64_t k = 0; k < 1000; ++k) positions.push_back((k * 7919) % 1000);  // no runs
  absl::StatusOr<BasicIndex> index = NormalizeIndexKey(Key({List(positions)}), {1000}, "k");
  ASSERT_TRUE(index.ok()) << index.status();
  const Box chunk = {Range{0, 1, 1000}};
  EXPECT_EQ(SelectFromChunk(*index, chunk).size(), index->runs.size());
  EXPECT_EQ(SelectFromChunk(*index, chunk, 10).size(), 11u);
}

TEST(FlatRunsTest, RunsCoverExactlyTheirPositionsInOrder) {
  const Shape shape = {3, 4, 5};
  const int64_t total = NumElements(shape);
  const std::vector<int64_t> dense = DenseStrides(shape);
  for (int64_t start = 0; start < total; ++start) {
    for (int64_t count = 1; start + count <= total; ++count) {
      const std::vector<Box> boxes = FlatRunBoxes(shape, start, count);
      ASSERT_LE(boxes.size(), 2 * shape.size() - 1);
      int64_t expected = start;
      for (const Box& box : boxes) {
        const Shape box_shape = BoxShape(box);
        for (int64_t i = 0; i < NumElements(box); ++i) {
          int64_t rest = i, flat = 0;
          for (int d = static_cast<int>(box.size()) - 1; d >= 0; --d) {
            flat += (box[d].start + rest % box_shape[d] * box[d].step) * dense[d];
            rest /= box_shape[d];
          }
          ASSERT_EQ(flat, expected++) << "start " << start << " count " << count;
        }
      }
      ASSERT_EQ(expected, start + count);
      const std::optional<Box> one = FlatRunAsBox(shape, start, count);
      EXPECT_EQ(one.has_value(), boxes.size() == 1);
    }
  }
  EXPECT_EQ(FlatRunAsBox({}, 0, 1), Box{});
  EXPECT_TRUE(FlatRunBoxes(shape, 4, 0).empty());
}

}  // namespace
}  // namespace distarray
