// Integer-array indexing on every backend, listed (IndexItem.indices) and held in the daemon
// (IndexItem.array): a[positions] and a[:, positions] read and written over several layouts
// against the host, repeats and negative positions included.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "distarray/graph.h"

#include "distarray/index_maps.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/reference.h"

namespace distarray::testing {
namespace {

class TakeTest : public BackendTest {};

// The daemon's bounds (basic_index.h): positions a request may list, and an index array's.
constexpr int64_t kMaxListed = 65536;
constexpr int64_t kMaxHeld = int64_t{1} << 24;

TEST_P(TakeTest, ListedPositionsReadAndWriteAsNumPys) {
  std::mt19937_64 rng(31);
  const int64_t rows = 9, cols = 7;
  const std::vector<double> values = RandomValues<double>(rows * cols, rng);
  const std::vector<int64_t> positions = {3, -1, 0, 0, 2, 4, 6, 5, 1};
  std::vector<int> on;
  for (int d = 0; d < std::min(devices(), 3); ++d) on.push_back(d);
  for (const v1::IndexMap& map :
       {Split(2, 0, rows, on), Split(2, 1, cols, on), Replicated(2, on)}) {
    ASSERT_OK_AND_ASSIGN(Array a, client().Upload<double>(values, {rows, cols}, {map}));
    // a[positions]: rows in the listed order.
    ASSERT_OK_AND_ASSIGN(Array taken, GetItem(a, {Positions{positions}}));
    std::vector<double> want;
    for (int64_t p : positions) {
      const int64_t r = p < 0 ? p + rows : p;
      for (int64_t c = 0; c < cols; ++c) want.push_back(values[r * cols + c]);
    }
    EXPECT_EQ(*taken.Download<double>(), want) << map.ShortDebugString();
    // a[::-1, [6, 0, 6]]
    ASSERT_OK_AND_ASSIGN(Array columns, GetItem(a, {Slice{.step = -1}, Positions{{6, 0, 6}}}));
    want.clear();
    for (int64_t r = rows - 1; r >= 0; --r) {
      for (int64_t c : {6, 0, 6}) want.push_back(values[r * cols + c]);
    }
    EXPECT_EQ(*columns.Download<double>(), want) << map.ShortDebugString();
    // a[[7, 2, 2], 1:3] = -1 (repeats write the same value).
    ASSERT_OK_AND_ASSIGN(Array b, client().Upload<double>(values, {rows, cols}, {map}));
    ASSERT_OK(SetItem(b, {Positions{{7, 2, 2}}, Slice{1, 3}}, -1.0));
    std::vector<double> expected = values;
    for (int64_t r : {7, 2}) {
      for (int64_t c = 1; c < 3; ++c) expected[r * cols + c] = -1;
    }
    EXPECT_EQ(*b.Download<double>(), expected) << map.ShortDebugString();
    EXPECT_EQ(*a.Download<double>(), values);  // the source of the reads is untouched
  }
}

// The host's a[positions] along `axis` of a rows x cols array.
std::vector<double> TakeOnHost(const std::vector<double>& values, int64_t rows, int64_t cols,
                               const std::vector<int64_t>& positions, int axis) {
  std::vector<double> out;
  if (axis == 0) {
    for (int64_t p : positions) {
      const int64_t r = p < 0 ? p + rows : p;
      for (int64_t c = 0; c < cols; ++c) out.push_back(values[r * cols + c]);
    }
  } else {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t p : positions) out.push_back(values[r * cols + (p < 0 ? p + cols : p)]);
    }
  }
  return out;
}

// Random positions in [-n, n), repeats and negatives included.
template <typename T>
std::vector<T> RandomPositions(int64_t count, int64_t n, std::mt19937_64& rng) {
  std::vector<T> out;
  const int64_t lo = std::is_signed_v<T> ? -n : 0;
  for (int64_t k = 0; k < count; ++k) {
    out.push_back(static_cast<T>(std::uniform_int_distribution<int64_t>(lo, n - 1)(rng)));
  }
  return out;
}

TEST_P(TakeTest, HeldPositionsReadAndWriteAsListedOnes) {
  std::mt19937_64 rng(47);
  const int64_t rows = 11, cols = 6;
  const std::vector<double> values = RandomValues<double>(rows * cols, rng);
  std::vector<int> on, other;
  for (int d = 0; d < std::min(devices(), 3); ++d) on.push_back(d);
  // The index array lives on the devices the source does not (where there are any).
  for (int d = devices() - 1; d >= 0 && other.size() < 2; --d) {
    if (devices() == 1 || d >= static_cast<int>(on.size()) || other.empty()) other.push_back(d);
  }
  const std::vector<int32_t> row_positions = RandomPositions<int32_t>(17, rows, rng);
  const std::vector<uint16_t> col_positions = RandomPositions<uint16_t>(9, cols, rng);
  std::vector<int64_t> rows64(row_positions.begin(), row_positions.end());
  std::vector<int64_t> cols64(col_positions.begin(), col_positions.end());
  for (const v1::IndexMap& map :
       {Split(2, 0, rows, on), Split(2, 1, cols, on), Replicated(2, on)}) {
    for (const v1::IndexMap& index_map :
         {Split(1, 0, static_cast<int64_t>(row_positions.size()), other), Replicated(1, on)}) {
      SCOPED_TRACE(map.ShortDebugString() + " / " + index_map.ShortDebugString());
      ASSERT_OK_AND_ASSIGN(Array a, client().Upload<double>(values, {rows, cols}, {map}));
      ASSERT_OK_AND_ASSIGN(
          Array idx, client().Upload<int32_t>(
                         row_positions, {static_cast<int64_t>(row_positions.size())}, {index_map}));
      ASSERT_OK_AND_ASSIGN(
          Array col_idx,
          client().Upload<uint16_t>(col_positions, {static_cast<int64_t>(col_positions.size())},
                                    {Replicated(1, other)}));
      // take(a, idx, axis=0) and take(a, col_idx, axis=1), as the listed positions give them.
      ASSERT_OK_AND_ASSIGN(Array taken, GetItem(a, {HeldPositions{idx.handle()}}));
      EXPECT_EQ(taken.shape(), (std::vector<int64_t>{17, cols}));
      EXPECT_EQ(*taken.Download<double>(), TakeOnHost(values, rows, cols, rows64, 0));
      ASSERT_OK_AND_ASSIGN(Array listed, GetItem(a, {Positions{rows64}}));
      EXPECT_EQ(*taken.Download<double>(), *listed.Download<double>());
      ASSERT_OK_AND_ASSIGN(Array columns, GetItem(a, {Slice{}, HeldPositions{col_idx.handle()}}));
      EXPECT_EQ(*columns.Download<double>(), TakeOnHost(values, rows, cols, cols64, 1));
      // a[idx, 1:4] = value: repeats keep the last value written, as NumPy's do.
      ASSERT_OK_AND_ASSIGN(Array b, client().Upload<double>(values, {rows, cols}, {map}));
      const std::vector<double> written = RandomValues<double>(17 * 3, rng);
      ASSERT_OK_AND_ASSIGN(Array value,
                           client().Upload<double>(written, {17, 3}, {Replicated(2, on)}));
      ASSERT_OK(b.SetItem({HeldPositions{idx.handle()}, Slice{1, 4}}, value));
      std::vector<double> expected = values;
      for (size_t k = 0; k < rows64.size(); ++k) {
        const int64_t r = rows64[k] < 0 ? rows64[k] + rows : rows64[k];
        for (int64_t c = 1; c < 4; ++c) expected[r * cols + c] = written[k * 3 + (c - 1)];
      }
      EXPECT_EQ(*b.Download<double>(), expected);
      // Bystanders: the source, the index arrays and the value are untouched.
      EXPECT_EQ(*a.Download<double>(), values);
      EXPECT_EQ(*idx.Download<int32_t>(), row_positions);
      EXPECT_EQ(*col_idx.Download<uint16_t>(), col_positions);
      EXPECT_EQ(*value.Download<double>(), written);
    }
  }
}

TEST_P(TakeTest, HeldPositionsBeyondTheListedBound) {
  // More positions than a request may list, in few runs (blocks walked up and down), over a
  // source split on every device: the readback is one copy of the indices, the copies are runs.
  std::mt19937_64 rng(5);
  const int64_t n = 4096;
  const std::vector<float> values = RandomValues<float>(n, rng);
  std::vector<int> all;
  for (int d = 0; d < devices(); ++d) all.push_back(d);
  std::vector<int64_t> positions;
  while (positions.size() < static_cast<size_t>(kMaxListed) + 1000) {
    const int64_t start = std::uniform_int_distribution<int64_t>(0, n - 512)(rng);
    const bool down = rng() & 1;
    for (int64_t k = 0; k < 512; ++k) positions.push_back(down ? -(start + k) - 1 : start + k);
  }
  const int64_t count = static_cast<int64_t>(positions.size());
  ASSERT_OK_AND_ASSIGN(Array a, client().Upload<float>(values, {n}, {Split(1, 0, n, all)}));
  ASSERT_OK_AND_ASSIGN(Array idx,
                       client().Upload<int64_t>(positions, {count}, {Split(1, 0, count, all)}));
  ASSERT_OK_AND_ASSIGN(Array taken, GetItem(a, {HeldPositions{idx.handle()}}));
  std::vector<float> want;
  for (int64_t p : positions) want.push_back(values[p < 0 ? p + n : p]);
  EXPECT_EQ(*taken.Download<float>(), want);
}

TEST_P(TakeTest, RandomPositionsGiveACompactResult) {
  // Random positions cut the source into a piece per run; the result gathers them into one chunk
  // per device along the list's axis, which later ops (a reduction) take as any array.
  std::mt19937_64 rng(9);
  const int64_t n = 20000, count = 30000;
  const std::vector<float> values = RandomValues<float>(n, rng);
  std::vector<int> all;
  for (int d = 0; d < devices(); ++d) all.push_back(d);
  const std::vector<int64_t> positions = RandomPositions<int64_t>(count, n, rng);
  ASSERT_OK_AND_ASSIGN(Array a, client().Upload<float>(values, {n}, {Split(1, 0, n, all)}));
  ASSERT_OK_AND_ASSIGN(Array idx,
                       client().Upload<int64_t>(positions, {count}, {Replicated(1, {all.back()})}));
  ASSERT_OK_AND_ASSIGN(Array taken, GetItem(a, {HeldPositions{idx.handle()}}));
  EXPECT_LE(taken.info().index_map().chunks_size(), devices());
  std::vector<float> want;
  double sum = 0;
  for (int64_t p : positions) {
    want.push_back(values[p < 0 ? p + n : p]);
    sum += want.back();
  }
  EXPECT_EQ(*taken.Download<float>(), want);
  v1::ReduceRequest reduce;
  reduce.mutable_spec()->set_op(v1::REDUCE_OP_SUM);
  reduce.mutable_spec()->mutable_operand()->set_handle(taken.handle());
  ASSERT_OK_AND_ASSIGN(Array total, client().Reduce(reduce));
  EXPECT_NEAR((*total.Download<float>())[0], sum, 1.0);  // float32 sums of 30,000 values
  // The same positions listed give the same values (a list of this length is within its bound).
  ASSERT_OK_AND_ASSIGN(Array listed, GetItem(a, {Positions{positions}}));
  EXPECT_EQ(*listed.Download<float>(), want);
  EXPECT_EQ(*a.Download<float>(), values);
}

TEST_P(TakeTest, HeldPositionsRefusals) {
  std::vector<int> on = {0};
  ASSERT_OK_AND_ASSIGN(
      Array a, client().Upload<double>(std::vector<double>(20, 1.0), {4, 5}, {Replicated(2, on)}));
  auto expect = [](const absl::Status& status, absl::StatusCode code, const std::string& text) {
    EXPECT_EQ(status.code(), code) << status;
    EXPECT_TRUE(absl::StrContains(status.message(), text)) << status;
  };
  // A position past its axis: OUT_OF_RANGE naming the field, the position, the axis and value.
  ASSERT_OK_AND_ASSIGN(Array bad, client().Upload<int64_t>(std::vector<int64_t>{0, 3, -6}, {3},
                                                           {Replicated(1, on)}));
  expect(GetItem(a, {Slice{}, HeldPositions{bad.handle()}}).status(), absl::StatusCode::kOutOfRange,
         "spec.get_item.key.items[1].array[2]: index -6 is out of bounds for axis 1 with size 5");
  expect(a.SetItem({HeldPositions{bad.handle()}}, 2.0), absl::StatusCode::kOutOfRange,
         "spec.set_item.key.items[0].array[2]: index -6 is out of bounds for axis 0 with size 4");
  ASSERT_OK_AND_ASSIGN(Array huge, client().Upload<uint64_t>(std::vector<uint64_t>{1, ~0ull}, {2},
                                                             {Replicated(1, on)}));
  expect(GetItem(a, {HeldPositions{huge.handle()}}).status(), absl::StatusCode::kOutOfRange,
         "spec.get_item.key.items[0].array[1]: index 18446744073709551615");
  // Not an integer dtype; not one axis.
  expect(
      GetItem(a, {HeldPositions{a.handle()}}).status(), absl::StatusCode::kInvalidArgument,
      "spec.get_item.key.items[0].array: an index array must have an integer dtype, not float64");
  ASSERT_OK_AND_ASSIGN(Array two_d, client().Upload<int32_t>(std::vector<int32_t>{0, 1, 2, 3},
                                                             {2, 2}, {Replicated(2, on)}));
  expect(GetItem(a, {HeldPositions{two_d.handle()}}).status(), absl::StatusCode::kInvalidArgument,
         "spec.get_item.key.items[0].array: an index array must have one axis, not 2");
  ASSERT_OK_AND_ASSIGN(Array zero_d,
                       client().Upload<int32_t>(std::vector<int32_t>{1}, {}, {Replicated(0, on)}));
  expect(GetItem(a, {HeldPositions{zero_d.handle()}}).status(), absl::StatusCode::kInvalidArgument,
         "an index array must have one axis, not 0");
  // Past the bound: refused before anything is read or allocated.
  ASSERT_OK_AND_ASSIGN(Array too_long,
                       client().Create({kMaxHeld + 1}, v1::DTYPE_INT8, {Replicated(1, on)}));
  expect(GetItem(a, {HeldPositions{too_long.handle()}}).status(),
         absl::StatusCode::kInvalidArgument,
         "spec.get_item.key.items[0].array: give 0 to 16777216 positions; got 16777217");
  // Not in programs: the plan depends on the values.
  ASSERT_OK_AND_ASSIGN(
      Array fine, client().Upload<int32_t>(std::vector<int32_t>{0, 1}, {2}, {Replicated(1, on)}));
  graph::ProgramBuilder p;
  p.Output("b", p.GetItem(p.Input("a"), {HeldPositions{fine.handle()}}));
  const absl::Status in_program = client().RunGraph(p.program(), {{"a", &a}}).status();
  EXPECT_EQ(in_program.code(), absl::StatusCode::kUnimplemented) << in_program;
  EXPECT_TRUE(absl::StrContains(in_program.message(), ".get_item.key.items[0].array"))
      << in_program;
  EXPECT_EQ(*a.Download<double>(), std::vector<double>(20, 1.0));  // the target is intact
}

DISTARRAY_INSTANTIATE_BACKENDS(TakeTest);

}  // namespace
}  // namespace distarray::testing
