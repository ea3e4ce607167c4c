// Manipulate (get_item, set_item, permute_dims, reshape, concat and stack) through the SDK,
// checked against the test's own NumPy model in double precision on random data, over row-split,
// column-split, overlapping, uneven and SUM-mode layouts; its errors; and the same ops as program
// statements (a heat-equation stencil in a loop).
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "distarray/graph.h"
#include "distarray/indexing.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/reference.h"

namespace distarray::testing {
namespace {

// ---- the host model ----------------------------------------------------------------------------

// An array's logical values in C order, as doubles (exact for every value the tests use).
struct HostArray {
  Shape shape;
  std::vector<double> values;
};

std::vector<int64_t> Strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) {
    strides[d] = strides[d + 1] * shape[d + 1];
  }
  return strides;
}

// Python's slice.indices(n): the first position, the step and the count.
struct AxisWalk {
  int64_t start = 0, step = 1, length = 0;
};
AxisWalk PythonSlice(const v1::Slice& s, int64_t n) {
  const int64_t step = s.has_step() ? s.step() : 1;
  const int64_t lower = step < 0 ? -1 : 0;
  const int64_t upper = step < 0 ? n - 1 : n;
  auto clamp = [&](bool has, int64_t v, int64_t unset) {
    if (!has) return unset;
    if (v < 0) {
      v += n;
      return v < lower ? lower : v;
    }
    return v > upper ? upper : v;
  };
  const int64_t start = clamp(s.has_start(), s.start(), step < 0 ? upper : lower);
  const int64_t stop = clamp(s.has_stop(), s.stop(), step < 0 ? lower : upper);
  int64_t length = 0;
  if (step > 0 && start < stop) length = (stop - start - 1) / step + 1;
  if (step < 0 && start > stop) length = (start - stop - 1) / (-step) + 1;
  return {start, step, length};
}

// What a key selects: the result's shape and, per result element (C order), the source element.
struct Selection {
  Shape shape;
  std::vector<int64_t> source;
};
Selection Select(const Shape& shape, const std::vector<Index>& key) {
  const int rank = static_cast<int>(shape.size());
  const std::vector<int64_t> strides = Strides(shape);
  int consuming = 0;
  for (const Index& item : key) {
    consuming += item.proto().has_index() || item.proto().has_slice();
  }
  struct OutAxis {
    int64_t offset_step = 0;  // source offset per result position
    int64_t length = 1;
  };
  std::vector<OutAxis> out;
  int64_t base = 0;
  int axis = 0;
  auto whole = [&] {
    out.push_back({strides[axis], shape[axis]});
    ++axis;
  };
  for (const Index& item : key) {
    const v1::IndexItem& p = item.proto();
    if (p.has_index()) {
      base += (p.index() < 0 ? p.index() + shape[axis] : p.index()) * strides[axis];
      ++axis;
    } else if (p.has_slice()) {
      const AxisWalk w = PythonSlice(p.slice(), shape[axis]);
      base += w.start * strides[axis];
      out.push_back({w.step * strides[axis], w.length});
      ++axis;
    } else if (p.has_new_axis()) {
      out.push_back({0, 1});
    } else {
      for (int k = 0; k < rank - consuming; ++k) whole();
    }
  }
  while (axis < rank) whole();
  Selection sel;
  int64_t n = 1;
  for (const OutAxis& o : out) {
    sel.shape.push_back(o.length);
    n *= o.length;
  }
  for (int64_t i = 0; i < n; ++i) {
    const std::vector<int64_t> index = Unravel(i, sel.shape);
    int64_t src = base;
    for (size_t d = 0; d < out.size(); ++d) src += index[d] * out[d].offset_step;
    sel.source.push_back(src);
  }
  return sel;
}

HostArray RefGetItem(const HostArray& a, const std::vector<Index>& key) {
  const Selection sel = Select(a.shape, key);
  HostArray out{sel.shape, {}};
  for (int64_t src : sel.source) out.values.push_back(a.values[src]);
  return out;
}

// `value` broadcast to `shape` (NumPy's rules), C order.
std::vector<double> BroadcastTo(const HostArray& value, const Shape& shape) {
  const size_t offset = shape.size() - value.shape.size();
  const std::vector<int64_t> strides = Strides(value.shape);
  std::vector<double> out;
  for (int64_t i = 0; i < NumElements(shape); ++i) {
    const std::vector<int64_t> index = Unravel(i, shape);
    int64_t src = 0;
    for (size_t d = 0; d < value.shape.size(); ++d) {
      if (value.shape[d] != 1) src += index[offset + d] * strides[d];
    }
    out.push_back(value.values[src]);
  }
  return out;
}

void RefSetItem(HostArray& a, const std::vector<Index>& key, const HostArray& value) {
  const Selection sel = Select(a.shape, key);
  const std::vector<double> v = BroadcastTo(value, sel.shape);
  for (size_t i = 0; i < sel.source.size(); ++i) a.values[sel.source[i]] = v[i];
}

HostArray RefPermute(const HostArray& a, const std::vector<int32_t>& axes) {
  const int rank = static_cast<int>(a.shape.size());
  const std::vector<int64_t> strides = Strides(a.shape);
  HostArray out;
  std::vector<int64_t> step;
  for (int32_t axis : axes) {
    const int d = axis < 0 ? axis + rank : axis;
    out.shape.push_back(a.shape[d]);
    step.push_back(strides[d]);
  }
  for (int64_t i = 0; i < NumElements(out.shape); ++i) {
    const std::vector<int64_t> index = Unravel(i, out.shape);
    int64_t src = 0;
    for (int d = 0; d < rank; ++d) src += index[d] * step[d];
    out.values.push_back(a.values[src]);
  }
  return out;
}

HostArray RefConcat(const std::vector<HostArray>& parts, int axis) {
  const int rank = static_cast<int>(parts[0].shape.size());
  if (axis < 0) axis += rank;
  HostArray out{parts[0].shape, {}};
  out.shape[axis] = 0;
  for (const HostArray& p : parts) out.shape[axis] += p.shape[axis];
  // Outer blocks (the axes before `axis`), then each part's slab of that block.
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= out.shape[d];
  for (int64_t o = 0; o < outer; ++o) {
    for (const HostArray& p : parts) {
      const int64_t slab = NumElements(p.shape) / outer;
      out.values.insert(out.values.end(), p.values.begin() + o * slab,
                        p.values.begin() + (o + 1) * slab);
    }
  }
  return out;
}

HostArray RefStack(const std::vector<HostArray>& parts, int axis) {
  const int rank = static_cast<int>(parts[0].shape.size()) + 1;
  if (axis < 0) axis += rank;
  std::vector<HostArray> expanded = parts;
  for (HostArray& p : expanded) p.shape.insert(p.shape.begin() + axis, 1);
  return RefConcat(expanded, axis);
}

std::string ShapeString(const Shape& shape) {
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

std::string KeyString(const std::vector<Index>& key) {
  std::vector<std::string> parts;
  for (const Index& item : key) {
    const v1::IndexItem& p = item.proto();
    if (p.has_index()) {
      parts.push_back(absl::StrCat(p.index()));
    } else if (p.has_slice()) {
      const v1::Slice& s = p.slice();
      parts.push_back(absl::StrCat(s.has_start() ? absl::StrCat(s.start()) : "", ":",
                                   s.has_stop() ? absl::StrCat(s.stop()) : "",
                                   s.has_step() ? absl::StrCat(":", s.step()) : ""));
    } else if (p.has_new_axis()) {
      parts.push_back("None");
    } else {
      parts.push_back("...");
    }
  }
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

// ---- layouts -----------------------------------------------------------------------------------

struct Layout {
  std::string name;
  v1::IndexMap map;
};

class ManipulationTest : public BackendTest {
 protected:
  // Rows split over two devices, the last axis split, overlapping copies (replication) and
  // uneven row blocks.
  std::vector<Layout> Layouts(const Shape& shape) const {
    const int rank = static_cast<int>(shape.size());
    const int64_t n = shape[0];
    std::vector<Layout> layouts;
    // Axes of length 1 are not split (a chunk holds at least one element).
    if (n >= 2) layouts.push_back({"rows", Split(rank, 0, n, {dev(0), dev(1)})});
    if (rank >= 2 && shape[rank - 1] >= 2) {
      layouts.push_back({"columns", Split(rank, rank - 1, shape[rank - 1], {dev(0), dev(1)})});
    }
    // Device 0 the first two thirds of the rows, device 1 the last two thirds, device 2 the
    // first half of the last axis: every element has two or three copies, one has one.
    v1::IndexMap overlap =
        MakeIndexMap({Band(dev(0), rank, 0, 0, (2 * n + 2) / 3),
                      Band(dev(1), rank, 0, std::min(n / 3, n - 1), n),
                      Band(dev(2), rank, rank - 1, 0, std::max<int64_t>(1, shape[rank - 1] / 2))});
    layouts.push_back({"replicated", overlap});
    if (n >= 4) {
      layouts.push_back(
          {"uneven", MakeIndexMap({Band(dev(1), rank, 0, 0, 1), Band(dev(0), rank, 0, 1, n - 2),
                                   Band(dev(2), rank, 0, n - 2, n)})});
    }
    return layouts;
  }

  HostArray Random(const Shape& shape, std::mt19937_64& rng) const {
    HostArray a{shape, RandomValues<double>(NumElements(shape), rng)};
    // RandomValues may draw an exact 0 only with negligible probability; make sure.
    for (double& v : a.values) {
      if (v == 0) v = 0.5;
    }
    return a;
  }

  absl::StatusOr<Array> UploadIn(const HostArray& a, const v1::IndexMap& map) const {
    return client().Upload<double>(a.values, a.shape, {map});
  }

  // A SUM-mode array of `shape` whose two devices hold different partials: the sum over the split
  // axis 0 of a (2, ...) array, left uncombined. Its logical values go to `*reference`.
  absl::StatusOr<Array> SumModeArray(const Shape& shape, std::mt19937_64& rng,
                                     HostArray* reference) const {
    Shape outer = shape;
    outer.insert(outer.begin(), 2);
    const HostArray parts = Random(outer, rng);
    absl::StatusOr<Array> a =
        UploadIn(parts, Split(static_cast<int>(outer.size()), 0, 2, {dev(0), dev(1)}));
    if (!a.ok()) return a.status();
    const int64_t n = NumElements(shape);
    *reference = HostArray{shape, std::vector<double>(n)};
    for (int64_t i = 0; i < n; ++i) reference->values[i] = parts.values[i] + parts.values[n + i];
    return Reduce(*a, v1::REDUCE_OP_SUM, {0}, /*keepdims=*/false, /*combine=*/false);
  }

  // Downloads `a` and compares it with `expected` exactly (these ops only copy and convert
  // exactly representable values).
  void ExpectValues(const Array& a, const HostArray& expected, const std::string& what) const {
    EXPECT_EQ(a.shape(), expected.shape) << what;
    absl::StatusOr<std::vector<double>> got = DownloadAsDouble(a);
    ASSERT_TRUE(got.ok()) << what << ": " << got.status();
    ASSERT_EQ(got->size(), expected.values.size()) << what;
    for (size_t i = 0; i < got->size(); ++i) {
      ASSERT_EQ((*got)[i], expected.values[i]) << what << ", element " << i;
    }
  }

  static absl::StatusOr<std::vector<double>> DownloadAsDouble(const Array& a) {
    auto widen = [](auto downloaded) -> absl::StatusOr<std::vector<double>> {
      if (!downloaded.ok()) return downloaded.status();
      return std::vector<double>(downloaded->begin(), downloaded->end());
    };
    switch (a.info().dtype()) {
      case v1::DTYPE_INT32:
        return widen(a.Download<int32_t>());
      case v1::DTYPE_FLOAT32:
        return widen(a.Download<float>());
      case v1::DTYPE_FLOAT64:
        return a.Download<double>();
      default:
        return absl::InternalError(
            absl::StrCat("the test reads no ", v1::DType_Name(a.info().dtype())));
    }
  }

  // An error's code, and that its message names `field`.
  static void ExpectError(const absl::Status& status, absl::StatusCode code,
                          const std::string& field, const std::string& what) {
    EXPECT_EQ(status.code(), code) << what << ": " << status;
    EXPECT_TRUE(absl::StrContains(status.message(), field))
        << what << ": the message does not name " << field << ": " << status;
  }
};

// Every shape of key: integers (negative too), slices with negative steps, ends clamped to the
// axis, None, and ... (before, between and after other items). Keys that select nothing are
// EmptySelections'.
std::vector<std::vector<Index>> Keys2D() {
  return {
      {},
      {2},
      {-1, Slice{1, -1}},
      {2, -3},  // 0-d
      {Slice{.step = -1}},
      {Slice{6, 1, -2}, Slice{.step = -3}},
      {Slice{-2, 0, -1}, Slice{5, 0, -2}},
      {Slice{-100, 100}, Slice{2, 1000}},  // clamped ends
      {Slice{100, -100, -1}, Slice{-1000, -4, 3}},
      {NewAxis(), Slice{1, 5}, NewAxis(), 3},
      {Ellipsis(), 2},
      {1, Ellipsis()},
      {Ellipsis(), NewAxis()},
      {Slice{.stop = 3}, Ellipsis(), Slice{.start = -2}},  // the ellipsis stands for no axis
      {NewAxis(), Ellipsis(), NewAxis(), Slice{.step = 2}},
  };
}

TEST_P(ManipulationTest, GetItemMatchesNumPyOverLayouts) {
  std::mt19937_64 rng(101);
  const Shape shape = {8, 6};
  const HostArray host = Random(shape, rng);
  for (const Layout& layout : Layouts(shape)) {
    ASSERT_OK_AND_ASSIGN(Array a, UploadIn(host, layout.map));
    for (const std::vector<Index>& key : Keys2D()) {
      const std::string what = absl::StrCat(layout.name, " a", KeyString(key));
      absl::StatusOr<Array> got = GetItem(a, key);
      ASSERT_TRUE(got.ok()) << what << ": " << got.status();
      EXPECT_EQ(got->info().dtype(), v1::DTYPE_FLOAT64) << what;
      EXPECT_EQ(got->info().mode(), v1::MODE_REPLICA) << what;
      ASSERT_NO_FATAL_FAILURE(ExpectValues(*got, RefGetItem(host, key), what));
    }
    ASSERT_NO_FATAL_FAILURE(ExpectValues(a, host, layout.name + ": the source afterwards"));
  }
}

TEST_P(ManipulationTest, GetItemOfThreeDimensionalArrays) {
  std::mt19937_64 rng(102);
  const Shape shape = {4, 5, 6};
  const HostArray host = Random(shape, rng);
  const std::vector<std::vector<Index>> keys = {
      {1, Ellipsis(), Slice{.step = -2}},
      {Ellipsis(), 1, NewAxis()},
      {Slice{1, 3}, Ellipsis(), -1},
      {Ellipsis(), Slice{4, 0, -1}, Slice{1, 2}},
      {-4, -5, -6},
      {Slice{.step = -1}, NewAxis(), Slice{.step = -1}, Ellipsis()},
  };
  for (const Layout& layout : Layouts(shape)) {
    ASSERT_OK_AND_ASSIGN(Array a, UploadIn(host, layout.map));
    for (const std::vector<Index>& key : keys) {
      const std::string what = absl::StrCat(layout.name, " a", KeyString(key));
      absl::StatusOr<Array> got = GetItem(a, key);
      ASSERT_TRUE(got.ok()) << what << ": " << got.status();
      ASSERT_NO_FATAL_FAILURE(ExpectValues(*got, RefGetItem(host, key), what));
    }
  }
}

// A SUM-mode source whose devices hold different partials: the result keeps the mode, and its
// logical values are the selection of the source's.
TEST_P(ManipulationTest, GetItemOfASumModeSourceKeepsTheMode) {
  std::mt19937_64 rng(103);
  HostArray host;
  ASSERT_OK_AND_ASSIGN(Array a, SumModeArray({8, 6}, rng, &host));
  ASSERT_EQ(a.info().mode(), v1::MODE_SUM);
  for (const std::vector<Index>& key : Keys2D()) {
    const std::string what = absl::StrCat("sum a", KeyString(key));
    absl::StatusOr<Array> got = GetItem(a, key);
    ASSERT_TRUE(got.ok()) << what << ": " << got.status();
    EXPECT_EQ(got->info().mode(), v1::MODE_SUM) << what;
    ASSERT_NO_FATAL_FAILURE(ExpectValues(*got, RefGetItem(host, key), what));
  }
  ASSERT_NO_FATAL_FAILURE(ExpectValues(a, host, "the source afterwards"));
}

// Keys that select no element: get_item gives a zero-size array (no chunks, nothing to
// download) of NumPy's shape and leaves the source as it was; set_item of an empty region
// changes nothing, as in NumPy.
TEST_P(ManipulationTest, EmptySelections) {
  std::mt19937_64 rng(114);
  const HostArray host = Random({8, 6}, rng);
  for (const Layout& layout : Layouts(host.shape)) {
    ASSERT_OK_AND_ASSIGN(Array a, UploadIn(host, layout.map));
    const std::vector<std::vector<Index>> keys = {
        {Slice{5, 2}},                      // start after stop
        {Slice{}, Slice{4, 4}},             // empty along the columns
        {Slice{3, 3}, 0},                   // empty, the columns dropped
        {Slice{2, 6, -1}},                  // a negative step walking upwards
        {Slice{100, 200}, NewAxis()},       // clamped to the end
        {Ellipsis(), Slice{-100, -50, 2}},  // clamped to the start
    };
    for (const std::vector<Index>& key : keys) {
      const std::string what = absl::StrCat(layout.name, " a", KeyString(key));
      const HostArray want = RefGetItem(host, key);
      ASSERT_TRUE(want.values.empty()) << what;
      ASSERT_OK_AND_ASSIGN(Array got, GetItem(a, key));
      EXPECT_EQ(got.shape(), want.shape) << what;
      EXPECT_EQ(got.info().index_map().chunks_size(), 0) << what;
      ASSERT_NO_FATAL_FAILURE(ExpectValues(got, want, what));
      ASSERT_OK(a.SetItem(key, -1.0));
    }
    ASSERT_NO_FATAL_FAILURE(ExpectValues(a, host, layout.name + ": the array afterwards"));
  }
}

TEST_P(ManipulationTest, SetItemWithScalarsAndBroadcastArrays) {
  std::mt19937_64 rng(104);
  const Shape shape = {8, 6};
  std::vector<std::pair<std::string, HostArray>> targets;
  for (const Layout& layout : Layouts(shape)) {
    HostArray host = Random(shape, rng);
    ASSERT_OK_AND_ASSIGN(Array a, UploadIn(host, layout.map));
    const std::string handle = a.handle();
    // A scalar into a strided selection walked backwards along the columns.
    const std::vector<Index> k1 = {Slice{1, 7, 2}, Slice{.step = -2}};
    ASSERT_OK(a.SetItem(k1, 7.25));
    RefSetItem(host, k1, HostArray{{}, {7.25}});
    ASSERT_NO_FATAL_FAILURE(ExpectValues(a, host, layout.name + " a" + KeyString(k1) + " = 7.25"));
    // A row vector in another layout (columns split the other way round), broadcast over rows.
    const HostArray row = Random({6}, rng);
    ASSERT_OK_AND_ASSIGN(Array row_array, UploadIn(row, Split(1, 0, 6, {dev(1), dev(0)})));
    const std::vector<Index> k2 = {Slice{2, 5}};
    ASSERT_OK(SetItem(a, k2, row_array));
    RefSetItem(host, k2, row);
    ASSERT_NO_FATAL_FAILURE(ExpectValues(a, host, layout.name + " a" + KeyString(k2) + " = row"));
    // Both axes reversed, a column (8, 1) broadcast along the columns, in a replicated layout.
    const HostArray column = Random({8, 1}, rng);
    ASSERT_OK_AND_ASSIGN(Array column_array, UploadIn(column, Replicated(2, {dev(2), dev(3)})));
    const std::vector<Index> k3 = {Slice{.step = -1}, Slice{4, 0, -1}};
    ASSERT_OK(a.SetItem(k3, column_array));
    RefSetItem(host, k3, column);
    ASSERT_NO_FATAL_FAILURE(ExpectValues(a, host, layout.name + " a" + KeyString(k3) + " = col"));
    // An integer row, an int32 value converted to float64, with None and an ellipsis in the key.
    const std::vector<int32_t> ints = {3, -7, 11, 0x10000, -2, 5};
    ASSERT_OK_AND_ASSIGN(Array int_row, client().Upload<int32_t>(ints, {6}, {OnDevice(1, dev(3))}));
    const std::vector<Index> k4 = {-3, NewAxis(), Ellipsis()};
    ASSERT_OK(a.SetItem(k4, int_row));
    RefSetItem(host, k4, HostArray{{6}, {ints.begin(), ints.end()}});
    ASSERT_NO_FATAL_FAILURE(ExpectValues(a, host, layout.name + " a" + KeyString(k4) + " = ints"));
    // An empty selection changes nothing.
    ASSERT_OK(a.SetItem({Slice{5, 2}}, -1.0));
    ASSERT_NO_FATAL_FAILURE(ExpectValues(a, host, layout.name + " empty selection"));
    EXPECT_EQ(a.handle(), handle);
    EXPECT_EQ(a.info().mode(), v1::MODE_REPLICA);
    // The values it was given are untouched.
    ASSERT_NO_FATAL_FAILURE(ExpectValues(row_array, row, "the row value"));
    ASSERT_NO_FATAL_FAILURE(ExpectValues(column_array, column, "the column value"));
  }
}

// A SUM-mode target becomes REPLICA with its logical values updated.
TEST_P(ManipulationTest, SetItemIntoASumModeTarget) {
  std::mt19937_64 rng(105);
  HostArray host;
  ASSERT_OK_AND_ASSIGN(Array a, SumModeArray({8, 6}, rng, &host));
  const std::vector<Index> key = {Slice{.step = -3}, 1};
  ASSERT_OK(a.SetItem(key, -2.5));
  RefSetItem(host, key, HostArray{{}, {-2.5}});
  EXPECT_EQ(a.info().mode(), v1::MODE_REPLICA);
  ASSERT_NO_FATAL_FAILURE(ExpectValues(a, host, "sum a[::-3, 1] = -2.5"));
}

TEST_P(ManipulationTest, PermuteDimsOfThreeDimensionalArrays) {
  std::mt19937_64 rng(106);
  const Shape shape = {4, 5, 6};
  const HostArray host = Random(shape, rng);
  std::vector<Layout> layouts = Layouts(shape);
  layouts.push_back({"middle", Split(3, 1, 5, {dev(0), dev(1), dev(2)})});
  const std::vector<std::vector<int32_t>> perms = {{0, 1, 2}, {2, 0, 1}, {1, 2, 0},
                                                   {2, 1, 0}, {0, 2, 1}, {-1, -3, -2}};
  for (const Layout& layout : layouts) {
    ASSERT_OK_AND_ASSIGN(Array a, UploadIn(host, layout.map));
    for (const std::vector<int32_t>& perm : perms) {
      const std::string what =
          absl::StrCat(layout.name, " permute_dims(a, (", absl::StrJoin(perm, ", "), "))");
      absl::StatusOr<Array> got = PermuteDims(a, perm);
      ASSERT_TRUE(got.ok()) << what << ": " << got.status();
      // Every chunk stays on its device.
      EXPECT_EQ(got->info().index_map().chunks_size(), a.info().index_map().chunks_size()) << what;
      ASSERT_NO_FATAL_FAILURE(ExpectValues(*got, RefPermute(host, perm), what));
    }
  }
  // A SUM-mode source keeps its mode.
  HostArray sum_host;
  ASSERT_OK_AND_ASSIGN(Array sum, SumModeArray(shape, rng, &sum_host));
  ASSERT_OK_AND_ASSIGN(Array permuted, PermuteDims(sum, {1, 2, 0}));
  EXPECT_EQ(permuted.info().mode(), v1::MODE_SUM);
  ASSERT_NO_FATAL_FAILURE(ExpectValues(permuted, RefPermute(sum_host, {1, 2, 0}), "sum permuted"));
}

TEST_P(ManipulationTest, BroadcastToMatchesNumPy) {
  std::mt19937_64 rng(120);
  struct Case {
    Shape from, to;
  };
  const std::vector<Case> cases = {{{6}, {4, 6}},          {{8, 1}, {8, 6}},    {{1, 6}, {3, 8, 6}},
                                   {{4, 1, 6}, {4, 5, 6}}, {{8, 6}, {2, 8, 6}}, {{8, 6}, {8, 6}}};
  for (const Case& c : cases) {
    const HostArray host = Random(c.from, rng);
    const HostArray expected{c.to, BroadcastTo(host, c.to)};
    for (const Layout& layout : Layouts(c.from)) {
      const std::string what = absl::StrCat(layout.name, " broadcast_to ", ShapeString(c.from),
                                            " -> ", ShapeString(c.to));
      ASSERT_OK_AND_ASSIGN(Array a, UploadIn(host, layout.map));
      absl::StatusOr<Array> got = BroadcastTo(a, c.to);
      ASSERT_TRUE(got.ok()) << what << ": " << got.status();
      ASSERT_NO_FATAL_FAILURE(ExpectValues(*got, expected, what));
    }
  }
  // A SUM-mode source: the partials broadcast, and their sum is the broadcast of the values.
  HostArray sum_host;
  ASSERT_OK_AND_ASSIGN(Array sum, SumModeArray({8, 1}, rng, &sum_host));
  ASSERT_OK_AND_ASSIGN(Array wide, BroadcastTo(sum, {2, 8, 6}));
  ASSERT_NO_FATAL_FAILURE(
      ExpectValues(wide, HostArray{{2, 8, 6}, BroadcastTo(sum_host, {2, 8, 6})}, "SUM source"));
  // Shapes that do not broadcast.
  const HostArray host = Random({8, 6}, rng);
  ASSERT_OK_AND_ASSIGN(Array a, UploadIn(host, Split(2, 0, 8, {dev(0), dev(1)})));
  ExpectError(BroadcastTo(a, {8, 5}).status(), absl::StatusCode::kInvalidArgument,
              "spec.broadcast_to.shape", "(8, 6) to (8, 5)");
  ExpectError(BroadcastTo(a, {6}).status(), absl::StatusCode::kInvalidArgument,
              "spec.broadcast_to.shape", "(8, 6) to (6,)");
  ASSERT_NO_FATAL_FAILURE(ExpectValues(a, host, "the source afterwards"));
}

// Memory in use on each device, from GetServerInfo.
std::vector<int64_t> UsedBytes(const Client& client) {
  std::vector<int64_t> used;
  absl::StatusOr<v1::GetServerInfoResponse> info = client.ServerInfo();
  if (!info.ok()) return used;
  for (const auto& device : info->devices()) used.push_back(device.memory_used_bytes());
  return used;
}

// Rows split over two devices, (8, 6) -> (4, 12): each chunk's elements are one C-order run that
// is rows of the new shape, so the chunks keep their buffers (no device allocates).
TEST_P(ManipulationTest, ReshapeKeepsBuffersWhereChunksStayBoxes) {
  if (devices() < 2) GTEST_SKIP() << "needs two devices";
  std::mt19937_64 rng(107);
  const HostArray host = Random({8, 6}, rng);
  ASSERT_OK_AND_ASSIGN(Array a, UploadIn(host, Split(2, 0, 8, {dev(0), dev(1)})));
  ASSERT_OK(client().Synchronize());
  const std::vector<int64_t> before = UsedBytes(client());
  ASSERT_OK_AND_ASSIGN(Array b, Reshape(a, {4, 12}));
  ASSERT_OK(client().Synchronize());
  EXPECT_EQ(UsedBytes(client()), before) << "a chunk was copied";
  EXPECT_EQ(b.info().index_map().chunks_size(), 2);
  ASSERT_NO_FATAL_FAILURE(ExpectValues(b, HostArray{{4, 12}, host.values}, "(4, 12)"));
  // -1 is inferred.
  ASSERT_OK_AND_ASSIGN(Array c, Reshape(a, {-1, 3}));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(c, HostArray{{16, 3}, host.values}, "(-1, 3)"));
  ASSERT_OK_AND_ASSIGN(Array d, Reshape(a, {2, -1, 4}));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(d, HostArray{{2, 6, 4}, host.values}, "(2, -1, 4)"));
  ASSERT_OK_AND_ASSIGN(Array e, Reshape(d, {-1}));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(e, HostArray{{48}, host.values}, "(-1,)"));
  // The arrays are independent: writing the result leaves the source alone.
  const std::vector<double> row(12, -1.0);
  ASSERT_OK(b.Write<double>(row, MakeRegion({SliceSpec{0, 1}, {}})));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(a, host, "the source after writing the result"));
}

// Results that hold their source's buffers (a slice taking whole chunks, a reshape that keeps
// runs, a concat, an identity permutation) are still arrays of their own: set_item on either side
// leaves the other as it was.
TEST_P(ManipulationTest, ResultsSharingBuffersStayIndependent) {
  if (devices() < 2) GTEST_SKIP() << "needs two devices";
  std::mt19937_64 rng(117);
  HostArray host = Random({8, 6}, rng);
  ASSERT_OK_AND_ASSIGN(Array a, UploadIn(host, Split(2, 0, 8, {dev(0), dev(1)})));
  ASSERT_OK(client().Synchronize());
  const std::vector<int64_t> before = UsedBytes(client());
  ASSERT_OK_AND_ASSIGN(Array top, GetItem(a, {Slice{0, 4}}));  // device 0's chunk, whole
  ASSERT_OK_AND_ASSIGN(Array wide, Reshape(a, {4, 12}));
  ASSERT_OK_AND_ASSIGN(Array same, PermuteDims(a, {0, 1}));
  ASSERT_OK(client().Synchronize());
  EXPECT_EQ(UsedBytes(client()), before) << "a slice of whole chunks, a reshape keeping runs or "
                                            "an identity permutation copied a chunk";
  const HostArray b_host = Random({3, 6}, rng);
  ASSERT_OK_AND_ASSIGN(Array b, UploadIn(b_host, Split(2, 1, 6, {dev(1), dev(0)})));
  ASSERT_OK_AND_ASSIGN(Array joined, Concat({a, b}));
  const HostArray original = host;
  const HostArray top_host = RefGetItem(original, {Slice{0, 4}});
  const HostArray joined_host = RefConcat({original, b_host}, 0);

  // Writes into the source: no result changes.
  ASSERT_OK(a.SetItem({Slice{1, 6}, Slice{.step = 2}}, -3.0));
  RefSetItem(host, {Slice{1, 6}, Slice{.step = 2}}, HostArray{{}, {-3.0}});
  ASSERT_NO_FATAL_FAILURE(ExpectValues(a, host, "a after its set_item"));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(top, top_host, "a[0:4] after a's set_item"));
  ASSERT_NO_FATAL_FAILURE(
      ExpectValues(wide, HostArray{{4, 12}, original.values}, "reshape after a's set_item"));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(same, original, "permute_dims after a's set_item"));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(joined, joined_host, "concat after a's set_item"));
  // Writes into the results: the source and the other results keep their values.
  ASSERT_OK(top.SetItem({0}, 11.0));
  ASSERT_OK(wide.SetItem({Ellipsis(), 0}, 12.0));
  ASSERT_OK(same.SetItem({-1}, 13.0));
  ASSERT_OK(joined.SetItem({Slice{2, 10}}, 14.0));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(a, host, "a after its results' set_items"));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(b, b_host, "b after the concat's set_item"));
  HostArray top_now = top_host;
  RefSetItem(top_now, {0}, HostArray{{}, {11.0}});
  ASSERT_NO_FATAL_FAILURE(ExpectValues(top, top_now, "a[0:4] after its own set_item"));
  HostArray wide_now{{4, 12}, original.values};
  RefSetItem(wide_now, {Ellipsis(), 0}, HostArray{{}, {12.0}});
  ASSERT_NO_FATAL_FAILURE(ExpectValues(wide, wide_now, "reshape after its own set_item"));
  HostArray joined_now = joined_host;
  RefSetItem(joined_now, {Slice{2, 10}}, HostArray{{}, {14.0}});
  ASSERT_NO_FATAL_FAILURE(ExpectValues(joined, joined_now, "concat after its own set_item"));
  // Deleting the source leaves the results whole.
  ASSERT_OK(a.Delete());
  ASSERT_NO_FATAL_FAILURE(ExpectValues(wide, wide_now, "reshape after deleting a"));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(top, top_now, "a[0:4] after deleting a"));
}

// Concat of sources in one op mode keeps it; set_item through the RPC takes no result name.
TEST_P(ManipulationTest, ConcatOfSumSourcesKeepsTheModeAndSetItemTakesNoResultName) {
  std::mt19937_64 rng(118);
  HostArray s1, s2;
  ASSERT_OK_AND_ASSIGN(Array a, SumModeArray({3, 4}, rng, &s1));
  ASSERT_OK_AND_ASSIGN(Array b, SumModeArray({2, 4}, rng, &s2));
  ASSERT_OK_AND_ASSIGN(Array joined, Concat({a, b}));
  EXPECT_EQ(joined.info().mode(), v1::MODE_SUM);
  ASSERT_NO_FATAL_FAILURE(ExpectValues(joined, RefConcat({s1, s2}, 0), "concat of SUM arrays"));
  ASSERT_OK_AND_ASSIGN(Array stacked, Stack({a, a}, 1));
  EXPECT_EQ(stacked.info().mode(), v1::MODE_SUM);
  ASSERT_NO_FATAL_FAILURE(ExpectValues(stacked, RefStack({s1, s1}, 1), "stack of SUM arrays"));

  v1::ManipulateRequest request;
  *request.mutable_spec()->mutable_set_item()->mutable_target() = a.AsOperand();
  request.mutable_spec()->mutable_set_item()->mutable_value()->mutable_scalar()->set_float_value(1);
  request.set_result_name("not-allowed");
  ExpectError(client().Manipulate(request).status(), absl::StatusCode::kInvalidArgument,
              "result_name", "set_item with a result_name");
  ASSERT_NO_FATAL_FAILURE(ExpectValues(a, s1, "the target afterwards"));
  EXPECT_EQ(a.info().mode(), v1::MODE_SUM);
  // A named result of get_item.
  v1::ManipulateRequest named;
  *named.mutable_spec()->mutable_get_item()->mutable_source() = a.AsOperand();
  named.set_result_name("manipulation-named-slice");
  ASSERT_OK_AND_ASSIGN(Array slice, client().Manipulate(named));
  EXPECT_EQ(slice.info().name(), "manipulation-named-slice");
  ASSERT_OK_AND_ASSIGN(Array reopened, client().Open("manipulation-named-slice"));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(reopened, s1, "the named slice"));
  ASSERT_OK(slice.Delete());
}

// Where a chunk's elements are not a box of the new shape, they move: the result is split along
// its first axis over the source's devices.
TEST_P(ManipulationTest, ReshapeMovesElementsWhereChunksAreNotBoxes) {
  std::mt19937_64 rng(108);
  const Shape shape = {8, 6};
  const HostArray host = Random(shape, rng);
  for (const Layout& layout : Layouts(shape)) {
    ASSERT_OK_AND_ASSIGN(Array a, UploadIn(host, layout.map));
    for (const Shape& to : std::vector<Shape>{{6, 8}, {3, 16}, {2, 4, 6}, {48}, {-1, 8}}) {
      const std::string what = absl::StrCat(layout.name, " reshape to ", ShapeString(to));
      absl::StatusOr<Array> got = Reshape(a, to);
      ASSERT_TRUE(got.ok()) << what << ": " << got.status();
      Shape resolved = to;
      if (resolved[0] == -1) resolved[0] = 48 / resolved[1];
      ASSERT_NO_FATAL_FAILURE(ExpectValues(*got, HostArray{resolved, host.values}, what));
    }
  }
  // Columns split over two devices, (8, 6) -> (6, 8): every element of a chunk is elsewhere in
  // the new shape's rows. The result's chunks split its rows and hold its columns whole.
  ASSERT_OK_AND_ASSIGN(Array a, UploadIn(host, Split(2, 1, 6, {dev(0), dev(1)})));
  ASSERT_OK_AND_ASSIGN(Array b, Reshape(a, {6, 8}));
  for (const v1::Chunk& chunk : b.info().index_map().chunks()) {
    ASSERT_EQ(chunk.slices_size(), 2);
    EXPECT_EQ(chunk.slices(1).start(), 0) << chunk.DebugString();
    EXPECT_EQ(chunk.slices(1).stop(), 8) << chunk.DebugString();
  }
  ASSERT_NO_FATAL_FAILURE(ExpectValues(b, HostArray{{6, 8}, host.values}, "columns to (6, 8)"));
}

TEST_P(ManipulationTest, ConcatAndStackOverMixedLayouts) {
  std::mt19937_64 rng(109);
  // Along axis 0: rows split, columns split and overlapping copies.
  const HostArray a = Random({3, 6}, rng), b = Random({5, 6}, rng), c = Random({4, 6}, rng);
  ASSERT_OK_AND_ASSIGN(Array da, UploadIn(a, Layouts(a.shape)[0].map));
  ASSERT_OK_AND_ASSIGN(Array db, UploadIn(b, Layouts(b.shape)[1].map));
  ASSERT_OK_AND_ASSIGN(Array dc, UploadIn(c, Layouts(c.shape)[2].map));
  ASSERT_OK_AND_ASSIGN(Array ab, Concat({da, db}));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(ab, RefConcat({a, b}, 0), "concat((a, b))"));
  ASSERT_OK_AND_ASSIGN(Array cab, Concat({dc, da, db}, -2));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(cab, RefConcat({c, a, b}, 0), "concat((c, a, b), -2)"));
  // Along axis 1: uneven rows, overlapping copies, columns split, and a SUM-mode part.
  const HostArray d = Random({8, 2}, rng), e = Random({8, 4}, rng), f = Random({8, 3}, rng);
  ASSERT_OK_AND_ASSIGN(Array dd, UploadIn(d, Layouts(d.shape)[3].map));
  ASSERT_OK_AND_ASSIGN(Array de, UploadIn(e, Layouts(e.shape)[2].map));
  ASSERT_OK_AND_ASSIGN(Array df, UploadIn(f, Layouts(f.shape)[1].map));
  ASSERT_OK_AND_ASSIGN(Array def, Concat({dd, de, df}, 1));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(def, RefConcat({d, e, f}, 1), "concat((d, e, f), 1)"));
  ASSERT_OK_AND_ASSIGN(Array fd, Concat({df, dd}, -1));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(fd, RefConcat({f, d}, 1), "concat((f, d), -1)"));
  HostArray s;
  ASSERT_OK_AND_ASSIGN(Array ds, SumModeArray({8, 3}, rng, &s));
  ASSERT_OK_AND_ASSIGN(Array ds_d, Concat({ds, dd}, 1));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(ds_d, RefConcat({s, d}, 1), "concat((sum, d), 1)"));
  // Stack: two (8, 6) arrays in different layouts, along a new first, middle and last axis.
  const HostArray g = Random({8, 6}, rng), h = Random({8, 6}, rng);
  ASSERT_OK_AND_ASSIGN(Array dg, UploadIn(g, Layouts(g.shape)[0].map));
  ASSERT_OK_AND_ASSIGN(Array dh, UploadIn(h, Layouts(h.shape)[3].map));
  for (int axis : {0, 1, 2, -1, -3}) {
    const std::string what = absl::StrCat("stack((g, h), ", axis, ")");
    absl::StatusOr<Array> got = Stack({dg, dh}, axis);
    ASSERT_TRUE(got.ok()) << what << ": " << got.status();
    ASSERT_NO_FATAL_FAILURE(ExpectValues(*got, RefStack({g, h}, axis), what));
  }
  ASSERT_OK_AND_ASSIGN(Array one, Stack({dg}));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(one, RefStack({g}, 0), "stack((g,))"));
}

// int32 with float32 promotes to float64, as NumPy's concat does; both convert exactly.
TEST_P(ManipulationTest, ConcatPromotesMixedDTypes) {
  std::mt19937_64 rng(110);
  std::vector<int32_t> ints = RandomValues<int32_t>(4 * 6, rng);
  for (int32_t& v : ints) v = v * 1000003 + (v == 0 ? 123457 : 0);  // beyond float32's 24 bits
  std::vector<float> floats = RandomValues<float>(4 * 6, rng);
  for (float& v : floats) v = v == 0 ? 0.25f : v;
  ASSERT_OK_AND_ASSIGN(Array di,
                       client().Upload<int32_t>(ints, {4, 6}, {Split(2, 0, 4, {dev(0), dev(1)})}));
  ASSERT_OK_AND_ASSIGN(Array df,
                       client().Upload<float>(floats, {4, 6}, {Split(2, 1, 6, {dev(1), dev(2)})}));
  const HostArray hi{{4, 6}, {ints.begin(), ints.end()}};
  const HostArray hf{{4, 6}, {floats.begin(), floats.end()}};
  for (int axis : {0, 1}) {
    const std::string what = absl::StrCat("concat((int32, float32), ", axis, ")");
    absl::StatusOr<Array> got = Concat({di, df}, axis);
    ASSERT_TRUE(got.ok()) << what << ": " << got.status();
    EXPECT_EQ(got->info().dtype(), v1::DTYPE_FLOAT64) << what;
    ASSERT_NO_FATAL_FAILURE(ExpectValues(*got, RefConcat({hi, hf}, axis), what));
  }
  ASSERT_OK_AND_ASSIGN(Array stacked, Stack({df, di}, 1));
  EXPECT_EQ(stacked.info().dtype(), v1::DTYPE_FLOAT64);
  ASSERT_NO_FATAL_FAILURE(
      ExpectValues(stacked, RefStack({hf, hi}, 1), "stack((float32, int32), 1)"));
  // int32 with int32 stays int32.
  ASSERT_OK_AND_ASSIGN(Array ii, Concat({di, di}, 0));
  EXPECT_EQ(ii.info().dtype(), v1::DTYPE_INT32);
  ASSERT_NO_FATAL_FAILURE(ExpectValues(ii, RefConcat({hi, hi}, 0), "concat((int32, int32))"));
}

TEST_P(ManipulationTest, ErrorsNameTheFieldAndLeaveArraysIntact) {
  std::mt19937_64 rng(111);
  const HostArray host = Random({8, 6}, rng);
  const HostArray bystander_host = Random({5, 7}, rng);
  ASSERT_OK_AND_ASSIGN(Array bystander, UploadIn(bystander_host, Split(2, 0, 5, {dev(1), dev(0)})));
  ASSERT_OK_AND_ASSIGN(Array a, UploadIn(host, Split(2, 0, 8, {dev(0), dev(1)})));
  const HostArray cube_host = Random({2, 3, 4}, rng);
  ASSERT_OK_AND_ASSIGN(Array cube, UploadIn(cube_host, Split(3, 1, 3, {dev(0), dev(1)})));
  const HostArray other_host = Random({5, 5}, rng);
  ASSERT_OK_AND_ASSIGN(Array other, UploadIn(other_host, Split(2, 1, 5, {dev(0), dev(1)})));
  using Code = absl::StatusCode;

  // An integer outside its axis: OUT_OF_RANGE, naming the axis.
  ExpectError(GetItem(a, {0, 6}).status(), Code::kOutOfRange, "axis 1", "a[0, 6]");
  ExpectError(GetItem(a, {0, -7}).status(), Code::kOutOfRange, "axis 1", "a[0, -7]");
  ExpectError(GetItem(a, {8}).status(), Code::kOutOfRange, "axis 0", "a[8]");
  ExpectError(GetItem(a, {Ellipsis(), 6}).status(), Code::kOutOfRange, "axis 1", "a[..., 6]");
  ExpectError(a.SetItem({-9}, 1.0), Code::kOutOfRange, "axis 0", "a[-9] = 1");
  // Malformed keys: INVALID_ARGUMENT naming the field.
  ExpectError(GetItem(a, {0, 0, 0}).status(), Code::kInvalidArgument, "spec.get_item.key",
              "too many indices");
  ExpectError(GetItem(a, {Slice{}, NewAxis(), 1, Slice{}}).status(), Code::kInvalidArgument,
              "spec.get_item.key", "too many indices around None");
  ExpectError(GetItem(a, {Ellipsis(), 0, Ellipsis()}).status(), Code::kInvalidArgument,
              "spec.get_item.key.items[2]", "two ellipses");
  ExpectError(GetItem(a, {Slice{}, Slice{.step = 0}}).status(), Code::kInvalidArgument,
              "spec.get_item.key.items[1]", "step 0");
  ExpectError(a.SetItem({Slice{.step = 0}}, 1.0), Code::kInvalidArgument,
              "spec.set_item.key.items[0]", "set_item step 0");
  // A value that does not broadcast to the selection (3, 6).
  ExpectError(a.SetItem({Slice{0, 3}}, other), Code::kInvalidArgument, "spec.set_item.value",
              "set_item value (5, 5) into (3, 6)");
  // A region with elements no chunk of the target holds: the write could not be kept.
  const HostArray gappy_host = Random({8, 6}, rng);
  ASSERT_OK_AND_ASSIGN(Array gappy, UploadIn(gappy_host, MakeIndexMap({Band(dev(0), 2, 0, 0, 4)})));
  ExpectError(gappy.SetItem({Slice{3, 6}}, 1.0), Code::kFailedPrecondition, "spec.set_item",
              "set_item into uncovered rows");
  // Bad permutations.
  ExpectError(PermuteDims(cube, {0, 0, 1}).status(), Code::kInvalidArgument,
              "spec.permute_dims.axes", "permute_dims (0, 0, 1)");
  ExpectError(PermuteDims(cube, {1, 0}).status(), Code::kInvalidArgument, "spec.permute_dims.axes",
              "permute_dims (1, 0) of 3-D");
  // Reshapes to another size, or with two unknowns.
  ExpectError(Reshape(a, {5, 10}).status(), Code::kInvalidArgument, "spec.reshape.shape",
              "reshape (8, 6) to (5, 10)");
  ExpectError(Reshape(a, {-1, 5}).status(), Code::kInvalidArgument, "spec.reshape.shape",
              "reshape (8, 6) to (-1, 5)");
  ExpectError(Reshape(a, {-1, -1}).status(), Code::kInvalidArgument, "spec.reshape.shape",
              "reshape to (-1, -1)");
  // Joins of mismatched shapes.
  ExpectError(Concat({a, other}, 0).status(), Code::kInvalidArgument, "spec.concat.sources[1]",
              "concat (8, 6) with (5, 5) along 0");
  ExpectError(Concat({a, cube}, 0).status(), Code::kInvalidArgument, "spec.concat.sources[1]",
              "concat 2-D with 3-D");
  ExpectError(Stack({a, a, other}, 0).status(), Code::kInvalidArgument, "spec.concat.sources[2]",
              "stack (8, 6) with (5, 5)");

  // Nothing changed: the arrays the failed calls named, and the bystander.
  ASSERT_NO_FATAL_FAILURE(ExpectValues(a, host, "a"));
  EXPECT_EQ(a.info().mode(), v1::MODE_REPLICA);
  ASSERT_NO_FATAL_FAILURE(ExpectValues(cube, cube_host, "cube"));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(other, other_host, "other"));
  ASSERT_NO_FATAL_FAILURE(ExpectValues(bystander, bystander_host, "bystander"));
  HostArray gappy_expected = gappy_host;  // uncovered rows read as zero (REPLICA)
  std::fill(gappy_expected.values.begin() + 4 * 6, gappy_expected.values.end(), 0.0);
  ASSERT_NO_FATAL_FAILURE(ExpectValues(gappy, gappy_expected, "gappy"));
}

// A random key for `shape` that selects something: integers, slices of any step with ends inside
// and outside the axis, None, and sometimes an ellipsis for a run of axes.
std::vector<Index> RandomKey(const Shape& shape, std::mt19937_64& rng) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (;;) {
    std::vector<Index> key;
    const int rank = static_cast<int>(shape.size());
    // The ellipsis (if any) stands for axes [e, e + len).
    const int e = static_cast<int>(pick(0, rank));
    const int len = pick(0, 2) == 0 ? static_cast<int>(pick(0, rank - e)) : -1;
    // How many trailing axes the key leaves out (taken whole).
    const int leave = len < 0 ? static_cast<int>(pick(0, rank)) : 0;
    bool ellipsis = false;
    for (int d = 0; d < rank - leave;) {
      if (pick(0, 5) == 0) key.push_back(NewAxis());
      if (d == e && len >= 0 && !ellipsis) {
        key.push_back(Ellipsis());
        ellipsis = true;
        d += len;
        if (d >= rank - leave) break;
      }
      const int64_t n = shape[d];
      if (pick(0, 3) == 0) {
        key.push_back(pick(-n, n - 1));
      } else {
        Slice slice;
        if (pick(0, 2)) slice.start = pick(-n - 2, n + 2);
        if (pick(0, 2)) slice.stop = pick(-n - 2, n + 2);
        if (pick(0, 2)) {
          int64_t step = pick(-3, 3);
          slice.step = step == 0 ? -1 : step;
        }
        key.push_back(slice);
      }
      ++d;
    }
    if (len >= 0 && !ellipsis) key.push_back(Ellipsis());  // e == rank: a trailing `...`
    if (pick(0, 5) == 0) key.push_back(NewAxis());
    if (!Select(shape, key).source.empty()) return key;
  }
}

// Random layouts from the tests' model (strided and reversed chunks, overlapping copies, gaps),
// random keys: get_item against the model's logical values (uncovered elements read as zero).
TEST_P(ManipulationTest, GetItemOnRandomLayoutsAndKeys) {
  std::mt19937_64 rng(115);
  for (const Shape& shape : std::vector<Shape>{{17}, {9, 7}, {5, 4, 6}}) {
    for (int trial = 0; trial < 12; ++trial) {
      const TestMap map = RandomMap(shape, devices(), rng);
      const HostArray raw = Random(shape, rng);
      const HostArray host{shape, Expected(raw.values, map, shape, v1::MODE_REPLICA)};
      ASSERT_OK_AND_ASSIGN(Array a, UploadIn(raw, ToProto(map, shape)));
      for (int k = 0; k < 16; ++k) {
        const std::vector<Index> key = RandomKey(shape, rng);
        const std::string what =
            absl::StrCat(ShapeString(shape), " trial ", trial, " a", KeyString(key), " layout ",
                         ToProto(map, shape).ShortDebugString());
        absl::StatusOr<Array> got = GetItem(a, key);
        ASSERT_TRUE(got.ok()) << what << ": " << got.status();
        ASSERT_NO_FATAL_FAILURE(ExpectValues(*got, RefGetItem(host, key), what));
      }
    }
  }
}

// The same for set_item (layouts without gaps: every write is kept), with scalar values and array
// values of the selection's shape, or broadcast from fewer axes, in random layouts of their own;
// then permute_dims and reshape of the result.
TEST_P(ManipulationTest, SetItemPermuteAndReshapeOnRandomLayouts) {
  std::mt19937_64 rng(116);
  for (const Shape& shape : std::vector<Shape>{{17}, {9, 7}, {5, 4, 6}}) {
    for (int trial = 0; trial < 10; ++trial) {
      const TestMap map = RandomMap(shape, devices(), rng, /*allow_gaps=*/false);
      HostArray host = Random(shape, rng);
      ASSERT_OK_AND_ASSIGN(Array a, UploadIn(host, ToProto(map, shape)));
      for (int k = 0; k < 6; ++k) {
        const std::vector<Index> key = RandomKey(shape, rng);
        const std::string what =
            absl::StrCat(ShapeString(shape), " trial ", trial, " a", KeyString(key), " layout ",
                         ToProto(map, shape).ShortDebugString());
        if (k % 3 == 0) {
          const double v = std::uniform_real_distribution<double>(-10, 10)(rng);
          const absl::Status set = a.SetItem(key, v);
          ASSERT_TRUE(set.ok()) << what << ": " << set;
          RefSetItem(host, key, HostArray{{}, {v}});
        } else {
          Shape value_shape = Select(shape, key).shape;
          if (k % 3 == 2 && !value_shape.empty()) {
            value_shape.erase(value_shape.begin());  // broadcast over the first axis
            for (int64_t& d : value_shape) {
              if (std::uniform_int_distribution<int>(0, 2)(rng) == 0) d = 1;
            }
          }
          const HostArray value = Random(value_shape, rng);
          const TestMap value_map = RandomMap(value_shape, devices(), rng, /*allow_gaps=*/false);
          ASSERT_OK_AND_ASSIGN(Array value_array, UploadIn(value, ToProto(value_map, value_shape)));
          const absl::Status set = a.SetItem(key, value_array);
          ASSERT_TRUE(set.ok()) << what << " value " << ShapeString(value_shape) << ": " << set;
          RefSetItem(host, key, value);
        }
        ASSERT_NO_FATAL_FAILURE(ExpectValues(a, host, what));
      }
      std::vector<int32_t> perm(shape.size());
      for (size_t d = 0; d < perm.size(); ++d) perm[d] = static_cast<int32_t>(d);
      std::shuffle(perm.begin(), perm.end(), rng);
      ASSERT_OK_AND_ASSIGN(Array permuted, PermuteDims(a, perm));
      ASSERT_NO_FATAL_FAILURE(ExpectValues(permuted, RefPermute(host, perm),
                                           absl::StrCat("permute ", absl::StrJoin(perm, ","))));
      const Shape flat = {NumElements(shape)};
      ASSERT_OK_AND_ASSIGN(Array reshaped, Reshape(permuted, {-1}));
      ASSERT_NO_FATAL_FAILURE(
          ExpectValues(reshaped, HostArray{flat, RefPermute(host, perm).values}, "flattened"));
    }
  }
}

namespace g = distarray::graph;

// Every statement in one program, each read of `a` after the set_item seeing a's own values: the
// set_item assigns a new variable and leaves its target (the program's input) as it was; eagerly
// and as a recorded graph, recorded and replayed.
TEST_P(ManipulationTest, ProgramStatementsMatchTheModel) {
  std::mt19937_64 rng(112);
  const HostArray host = Random({4, 6}, rng);
  g::ProgramBuilder p;
  const g::Var x = p.Input("a");
  const g::Var set = g::SetItem(x, {0, Slice{.step = -2}}, 5.5);
  const g::Var get = g::GetItem(x, {Slice{1, std::nullopt}, Slice{.step = -1}});
  const g::Var permuted = g::PermuteDims(x, {1, 0});
  const g::Var reshaped = g::Reshape(x, {6, -1});
  const g::Var joined = g::Concat({x, set}, 1);
  const g::Var stacked = g::Stack({set, x}, -1);
  // Outputs last: Output gives a Var's statement the output's name when nothing recorded so far
  // reads it, so a Var is not used after it is output.
  p.Output("set", set);
  p.Output("get", get);
  p.Output("permuted", permuted);
  p.Output("reshaped", reshaped);
  p.Output("joined", joined);
  p.Output("stacked", stacked);
  HostArray set_host = host;
  RefSetItem(set_host, {0, Slice{.step = -2}}, HostArray{{}, {5.5}});
  // Rows over two devices, and one device (which the host backend records as a graph too), each
  // run twice (the second replays a recorded graph).
  for (const v1::IndexMap& map : {Split(2, 0, 4, {dev(0), dev(1)}), OnDevice(2, dev(1))}) {
    ASSERT_OK_AND_ASSIGN(Array a, UploadIn(host, map));
    for (int run_index = 0; run_index < 2; ++run_index) {
      SCOPED_TRACE(absl::StrCat(map.ShortDebugString(), " run ", run_index));
      ASSERT_OK_AND_ASSIGN(GraphRun run, client().RunGraph(p.program(), {{"a", &a}}));
      const bool recorded = absl::StartsWith(GetParam(), "cuda") || map.chunks_size() == 1;
      EXPECT_EQ(run.execution,
                recorded ? v1::GRAPH_EXECUTION_DEVICE_GRAPH : v1::GRAPH_EXECUTION_EAGER);
      // The second run replays (the first may too: the daemon is shared, e.g. under
      // --gtest_repeat).
      if (recorded && run_index == 1) EXPECT_TRUE(run.graph_cache_hit);
      ASSERT_NO_FATAL_FAILURE(ExpectValues(run.outputs.at("set"), set_host, "set"));
      ASSERT_NO_FATAL_FAILURE(
          ExpectValues(run.outputs.at("get"),
                       RefGetItem(host, {Slice{1, std::nullopt}, Slice{.step = -1}}), "get"));
      ASSERT_NO_FATAL_FAILURE(
          ExpectValues(run.outputs.at("permuted"), RefPermute(host, {1, 0}), "permuted"));
      ASSERT_NO_FATAL_FAILURE(
          ExpectValues(run.outputs.at("reshaped"), HostArray{{6, 4}, host.values}, "reshaped"));
      ASSERT_NO_FATAL_FAILURE(
          ExpectValues(run.outputs.at("joined"), RefConcat({host, set_host}, 1), "joined"));
      ASSERT_NO_FATAL_FAILURE(
          ExpectValues(run.outputs.at("stacked"), RefStack({set_host, host}, -1), "stacked"));
      ASSERT_NO_FATAL_FAILURE(ExpectValues(a, host, "the argument afterwards"));
    }
  }
}

// `b = a; b = set_item(b, ...)` with `a` an input: the write must not reach the caller's array,
// whether the copy is a statement of its own or a loop's variable; eagerly and recorded.
TEST_P(ManipulationTest, SetItemOnACopyOfAnInputLeavesTheInput) {
  std::mt19937_64 rng(121);
  const HostArray host = Random({6, 4}, rng);
  v1::Program program;
  program.add_inputs("a");
  {
    v1::Statement* copy = program.add_statements();
    copy->set_target("b");
    copy->set_copy("a");
    v1::Statement* set = program.add_statements();
    set->set_target("b");
    v1::SetItemSpec* spec = set->mutable_manipulate()->mutable_set_item();
    spec->mutable_target()->set_variable("b");
    *spec->mutable_key() = MakeIndexKey({Slice{1, 5}, Slice{.step = -1}});
    spec->mutable_value()->mutable_scalar()->set_float_value(-8.5);
  }
  program.add_outputs("b");
  program.add_outputs("a");
  HostArray expected = host;
  RefSetItem(expected, {Slice{1, 5}, Slice{.step = -1}}, HostArray{{}, {-8.5}});
  for (const v1::IndexMap& map : {Split(2, 0, 6, {dev(0), dev(1)}), OnDevice(2, dev(1))}) {
    ASSERT_OK_AND_ASSIGN(Array a, UploadIn(host, map));
    for (int run_index = 0; run_index < 2; ++run_index) {
      const std::string what = absl::StrCat(map.ShortDebugString(), " run ", run_index);
      ASSERT_OK_AND_ASSIGN(GraphRun run, client().RunGraph(program, {{"a", &a}}));
      ASSERT_NO_FATAL_FAILURE(ExpectValues(run.outputs.at("b"), expected, what + ": b"));
      ASSERT_NO_FATAL_FAILURE(ExpectValues(run.outputs.at("a"), host, what + ": output a"));
      ASSERT_NO_FATAL_FAILURE(ExpectValues(a, host, what + ": the argument"));
    }
  }
}

// The value is the target itself, its elements moving within the same buffers: a[::-1] = a and
// a[1:] = a[:-1]-style shifts read the old values (NumPy copies overlapping operands first),
// through the RPC and as `u = set_item(u, ...)` in programs, eagerly and recorded.
TEST_P(ManipulationTest, SetItemWhoseValueIsTheTarget) {
  std::mt19937_64 rng(122);
  const HostArray host = Random({8, 6}, rng);
  HostArray reversed = host;
  RefSetItem(reversed, {Slice{.step = -1}}, host);
  HostArray flipped_columns = host;
  RefSetItem(flipped_columns, {Ellipsis(), Slice{.step = -1}}, host);
  for (const Layout& layout : Layouts(host.shape)) {
    ASSERT_OK_AND_ASSIGN(Array a, UploadIn(host, layout.map));
    ASSERT_OK(a.SetItem({Slice{.step = -1}}, a));
    ASSERT_NO_FATAL_FAILURE(ExpectValues(a, reversed, layout.name + ": a[::-1] = a"));
    ASSERT_OK_AND_ASSIGN(Array b, UploadIn(host, layout.map));
    ASSERT_OK(b.SetItem({Ellipsis(), Slice{.step = -1}}, b));
    ASSERT_NO_FATAL_FAILURE(ExpectValues(b, flipped_columns, layout.name + ": b[..., ::-1] = b"));
  }
  // In a program: u = set_item(u, [::-1], u), then u = set_item(u, [1:], u[:-1]) on a loop
  // variable (written in place), three times.
  g::ProgramBuilder p;
  const g::Var x = p.Input("u");
  const g::Var k = p.Input("k");
  g::Vars out = p.WhileLoop([](auto v) { return g::All(v[1] < 3); },
                            [](auto v) {
                              const g::Var flipped = g::SetItem(v[0], {Slice{.step = -1}}, v[0]);
                              const g::Var shifted =
                                  g::SetItem(flipped, {Slice{.start = 1}},
                                             g::GetItem(flipped, {Slice{.stop = -1}}));
                              return g::Vars{shifted, v[1] + 1};
                            },
                            {x, k}, /*max_iterations=*/10);
  p.Output("u", out[0]);
  HostArray ref = host;
  for (int i = 0; i < 3; ++i) {
    const HostArray before = ref;
    RefSetItem(ref, {Slice{.step = -1}}, before);
    const HostArray head = RefGetItem(ref, {Slice{.stop = -1}});
    RefSetItem(ref, {Slice{.start = 1}}, head);
  }
  ASSERT_OK_AND_ASSIGN(Array k0, client().Create({}, v1::DTYPE_INT32, {OnDevice(0, dev(0))}));
  for (const v1::IndexMap& map : {Split(2, 0, 8, {dev(0), dev(1)}), OnDevice(2, dev(0))}) {
    ASSERT_OK_AND_ASSIGN(Array u, UploadIn(host, map));
    ASSERT_OK_AND_ASSIGN(GraphRun run, client().RunGraph(p.program(), {{"u", &u}, {"k", &k0}}));
    EXPECT_EQ(run.iterations, 3);
    ASSERT_NO_FATAL_FAILURE(ExpectValues(run.outputs.at("u"), ref, map.ShortDebugString()));
    ASSERT_NO_FATAL_FAILURE(ExpectValues(u, host, map.ShortDebugString() + ": the argument"));
  }
  // The body's last statement is `u = set_item(u, [::-1], u)` itself: the in-place form, its value
  // the very buffers it writes. Three iterations reverse the rows once.
  g::ProgramBuilder q;
  const g::Var y = q.Input("u");
  const g::Var j = q.Input("k");
  g::Vars reversed_out =
      q.WhileLoop([](auto v) { return g::All(v[0] < 3); },
                  [](auto v) {
                    // The counter first, so the set_item is the body's last statement.
                    return g::Vars{v[0] + 1, g::SetItem(v[1], {Slice{.step = -1}}, v[1])};
                  },
                  {j, y}, /*max_iterations=*/10);
  q.Output("u", reversed_out[1]);
  for (const v1::IndexMap& map : {Split(2, 0, 8, {dev(0), dev(1)}), OnDevice(2, dev(0))}) {
    ASSERT_OK_AND_ASSIGN(Array u, UploadIn(host, map));
    ASSERT_OK_AND_ASSIGN(GraphRun run, client().RunGraph(q.program(), {{"u", &u}, {"k", &k0}}));
    EXPECT_EQ(run.iterations, 3);
    ASSERT_NO_FATAL_FAILURE(
        ExpectValues(run.outputs.at("u"), reversed, map.ShortDebugString() + ": u[::-1] = u"));
    ASSERT_NO_FATAL_FAILURE(ExpectValues(u, host, map.ShortDebugString() + ": the argument"));
  }
}

// The 1-D heat equation, u[1:-1] = (u[:-2] + u[2:]) / 2, 50 steps in a loop over rows split
// across two devices: each step's slices straddle the devices' boundary.
TEST_P(ManipulationTest, HeatEquationStencilInALoop) {
  std::mt19937_64 rng(113);
  constexpr int64_t kN = 64;
  constexpr int kSteps = 50;
  const HostArray u0 = Random({kN}, rng);
  ASSERT_OK_AND_ASSIGN(Array u, UploadIn(u0, Split(1, 0, kN, {dev(0), dev(1)})));
  ASSERT_OK_AND_ASSIGN(Array k0, client().Create({}, v1::DTYPE_INT32, {OnDevice(0, dev(0))}));

  g::ProgramBuilder p;
  const g::Var x = p.Input("u");
  const g::Var k = p.Input("k");
  g::Vars out =
      p.WhileLoop([](auto v) { return g::All(v[1] < kSteps); },
                  [](auto v) {
                    const g::Var left = g::GetItem(v[0], {Slice{.stop = -2}});
                    const g::Var right = g::GetItem(v[0], {Slice{.start = 2}});
                    const g::Var next = g::SetItem(v[0], {Slice{1, -1}}, (left + right) / 2.0);
                    return g::Vars{next, v[1] + 1};
                  },
                  {x, k}, /*max_iterations=*/1000);
  p.Output("u", out[0]);
  // The builder writes the body's set_item as `u = set_item(u, ...)` on the loop variable, with
  // no copy: the form the daemon writes into the variable's own buffers.
  int set_items = 0;
  for (const v1::Statement& s : p.program().statements()) {
    if (!s.has_while_loop()) continue;
    for (const v1::Statement& b : s.while_loop().body()) {
      EXPECT_FALSE(b.has_copy()) << b.ShortDebugString();
      if (b.has_manipulate() && b.manipulate().has_set_item()) {
        ++set_items;
        EXPECT_EQ(b.manipulate().set_item().target().variable(), b.target());
      }
    }
  }
  EXPECT_EQ(set_items, 1);
  ASSERT_OK_AND_ASSIGN(GraphRun run, client().RunGraph(p.program(), {{"u", &u}, {"k", &k0}}));
  EXPECT_EQ(run.iterations, kSteps);
  EXPECT_FALSE(run.hit_iteration_cap);

  std::vector<double> ref = u0.values;
  for (int step = 0; step < kSteps; ++step) {
    std::vector<double> next = ref;
    for (int64_t i = 1; i + 1 < kN; ++i) next[i] = (ref[i - 1] + ref[i + 1]) / 2;
    ref = std::move(next);
  }
  ASSERT_OK_AND_ASSIGN(std::vector<double> got, run.outputs.at("u").Download<double>());
  ASSERT_EQ(got.size(), ref.size());
  for (int64_t i = 0; i < kN; ++i) {
    EXPECT_NEAR(got[i], ref[i], 1e-12 * (1 + std::abs(ref[i]))) << "element " << i;
  }
  // The argument is the program's input, not its loop variable: unchanged.
  ASSERT_NO_FATAL_FAILURE(ExpectValues(u, u0, "u afterwards"));
}

// The same stencil over other layouts (uneven blocks on three devices, overlapping copies, one
// device: the host backend records that one as a graph), run
// twice on other values (the second run replays the cached graph), and its 2-D form (Jacobi,
// u[1:-1, 1:-1] = the mean of the four neighbours) over columns split across two devices.
TEST_P(ManipulationTest, StencilsInLoopsOverOtherLayoutsAndReplays) {
  std::mt19937_64 rng(119);
  constexpr int kSteps = 20;
  ASSERT_OK_AND_ASSIGN(Array k0, client().Create({}, v1::DTYPE_INT32, {OnDevice(0, dev(0))}));
  g::ProgramBuilder p1;
  {
    const g::Var x = p1.Input("u");
    const g::Var k = p1.Input("k");
    g::Vars out = p1.WhileLoop(
        [](auto v) { return g::All(v[1] < kSteps); },
        [](auto v) {
          const g::Var mean =
              (g::GetItem(v[0], {Slice{.stop = -2}}) + g::GetItem(v[0], {Slice{.start = 2}})) / 2.0;
          return g::Vars{g::SetItem(v[0], {Slice{1, -1}}, mean), v[1] + 1};
        },
        {x, k}, /*max_iterations=*/100);
    p1.Output("u", out[0]);
  }
  const Shape shape1 = {40};
  std::vector<Layout> layouts = Layouts(shape1);
  layouts.push_back({"one device", OnDevice(1, dev(0))});  // the counter's device
  for (const Layout& layout : layouts) {
    for (int run_index = 0; run_index < 2; ++run_index) {
      const std::string what = absl::StrCat(layout.name, " run ", run_index);
      const HostArray u0 = Random(shape1, rng);
      ASSERT_OK_AND_ASSIGN(Array u, UploadIn(u0, layout.map));
      ASSERT_OK_AND_ASSIGN(GraphRun run, client().RunGraph(p1.program(), {{"u", &u}, {"k", &k0}}));
      EXPECT_EQ(run.iterations, kSteps) << what;
      // As graph_test.cc: the CUDA backend records every such program, the host backend those on
      // one device (it runs programs over several devices eagerly).
      const bool recorded = absl::StartsWith(GetParam(), "cuda") || layout.name == "one device";
      EXPECT_EQ(run.execution,
                recorded ? v1::GRAPH_EXECUTION_DEVICE_GRAPH : v1::GRAPH_EXECUTION_EAGER)
          << what;
      // The second run replays (the first may too: the daemon is shared, e.g. under
      // --gtest_repeat).
      if (recorded && run_index == 1) EXPECT_TRUE(run.graph_cache_hit) << what;
      std::vector<double> ref = u0.values;
      for (int step = 0; step < kSteps; ++step) {
        std::vector<double> next = ref;
        for (size_t i = 1; i + 1 < ref.size(); ++i) next[i] = (ref[i - 1] + ref[i + 1]) / 2;
        ref = std::move(next);
      }
      ASSERT_OK_AND_ASSIGN(std::vector<double> got, run.outputs.at("u").Download<double>());
      ASSERT_EQ(got.size(), ref.size()) << what;
      for (size_t i = 0; i < ref.size(); ++i) {
        ASSERT_NEAR(got[i], ref[i], 1e-12 * (1 + std::abs(ref[i]))) << what << ", element " << i;
      }
      ASSERT_NO_FATAL_FAILURE(ExpectValues(u, u0, what + ": the argument afterwards"));
    }
  }

  g::ProgramBuilder p2;
  {
    const g::Var x = p2.Input("u");
    const g::Var k = p2.Input("k");
    g::Vars out = p2.WhileLoop([](auto v) { return g::All(v[1] < kSteps); },
                               [](auto v) {
                                 const Slice in{1, -1};
                                 const g::Var sum = g::GetItem(v[0], {Slice{.stop = -2}, in}) +
                                                    g::GetItem(v[0], {Slice{.start = 2}, in}) +
                                                    g::GetItem(v[0], {in, Slice{.stop = -2}}) +
                                                    g::GetItem(v[0], {in, Slice{.start = 2}});
                                 return g::Vars{g::SetItem(v[0], {in, in}, sum / 4.0), v[1] + 1};
                               },
                               {x, k}, /*max_iterations=*/100);
    p2.Output("u", out[0]);
  }
  const int64_t rows = 10, cols = 12;
  const HostArray u0 = Random({rows, cols}, rng);
  ASSERT_OK_AND_ASSIGN(Array u, UploadIn(u0, Split(2, 1, cols, {dev(0), dev(1)})));
  ASSERT_OK_AND_ASSIGN(GraphRun run, client().RunGraph(p2.program(), {{"u", &u}, {"k", &k0}}));
  EXPECT_EQ(run.iterations, kSteps);
  std::vector<double> ref = u0.values;
  for (int step = 0; step < kSteps; ++step) {
    std::vector<double> next = ref;
    for (int64_t i = 1; i + 1 < rows; ++i) {
      for (int64_t j = 1; j + 1 < cols; ++j) {
        next[i * cols + j] = (ref[(i - 1) * cols + j] + ref[(i + 1) * cols + j] +
                              ref[i * cols + j - 1] + ref[i * cols + j + 1]) /
                             4;
      }
    }
    ref = std::move(next);
  }
  ASSERT_OK_AND_ASSIGN(std::vector<double> got, run.outputs.at("u").Download<double>());
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    ASSERT_NEAR(got[i], ref[i], 1e-12 * (1 + std::abs(ref[i]))) << "2-D, element " << i;
  }
  ASSERT_NO_FATAL_FAILURE(ExpectValues(u, u0, "the 2-D argument afterwards"));
}

DISTARRAY_INSTANTIATE_BACKENDS(ManipulationTest);

}  // namespace
}  // namespace distarray::testing
