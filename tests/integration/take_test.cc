// Integer-array indexing (IndexItem.indices) on every backend: a[positions] and a[:, positions]
// read and written over several layouts against the host, repeats and negative positions included.
#include <random>

#include "distarray/index_maps.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/reference.h"

namespace distarray::testing {
namespace {

class TakeTest : public BackendTest {};

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

DISTARRAY_INSTANTIATE_BACKENDS(TakeTest);

}  // namespace
}  // namespace distarray::testing
