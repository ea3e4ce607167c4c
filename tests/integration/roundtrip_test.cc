// Upload random data of every implemented dtype through 1-D, 2-D and 3-D layouts (overlapping,
// strided, negative-step, with gaps), download it whole and by region, compare exactly.
#include <random>
#include <set>

#include "tests/support/backend_fixture.h"
#include "tests/support/compute_reference.h"
#include "tests/support/reference.h"

namespace distarray::testing {
namespace {

class RoundTripTest : public BackendTest {};

TEST_P(RoundTripTest, EveryDTypeThroughRandomLayouts) {
  std::mt19937_64 rng(1234);
  const std::vector<Shape> shapes = {{37}, {9, 13}, {5, 6, 7}};
  ForEachDType([&](auto tag) {
    using T = decltype(tag);
    for (const Shape& shape : shapes) {
      for (int trial = 0; trial < 3; ++trial) {
        const TestMap map = RandomMap(shape, devices(), rng);
        const std::vector<T> values = RandomValues<T>(NumElements(shape), rng);
        const std::unique_ptr<T[]> data = Contiguous(values);
        ASSERT_OK_AND_ASSIGN(
            Array array, client().Upload<T>(std::span<const T>(data.get(), values.size()), shape,
                                            {ToProto(map, shape)}));
        ASSERT_OK_AND_ASSIGN(std::vector<T> back, array.template Download<T>());
        const std::vector<T> want = Expected(values, map, shape, v1::MODE_REPLICA);
        std::string diff;
        for (size_t i = 0; i < want.size() && back.size() == want.size(); ++i) {
          if (back[i] != want[i]) diff += std::to_string(i) + " ";
        }
        ASSERT_EQ(back, want) << "differs at " << diff << "dtype " << v1::DType_Name(DTypeOf<T>())
                              << " rank " << shape.size() << "\n"
                              << ToProto(map, shape).ShortDebugString()
                              << "\nserver: " << array.info().index_map().ShortDebugString();
      }
    }
  });
}

TEST_P(RoundTripTest, RegionsOfA3DArray) {
  std::mt19937_64 rng(99);
  const Shape shape = {6, 5, 8};
  const TestMap map = RandomMap(shape, devices(), rng, /*allow_gaps=*/false);
  const std::vector<float> values = RandomValues<float>(NumElements(shape), rng);
  ASSERT_OK_AND_ASSIGN(Array array, client().Upload<float>(values, shape, {ToProto(map, shape)}));
  // region [1:5:2, ::-1, 3:] and a single element
  v1::Region region = MakeRegion({SliceSpec{1, 5, 2}, SliceSpec{std::nullopt, std::nullopt, -1},
                                  SliceSpec{3, std::nullopt, std::nullopt}});
  ASSERT_OK_AND_ASSIGN(std::vector<float> got, array.Download<float>(region));
  std::vector<float> want;
  // As NumPy's a[1:5:2, ::-1, 3:]: the negative step walks its axis downwards.
  for (int i = 1; i < 5; i += 2)
    for (int j = 4; j >= 0; --j)
      for (int k = 3; k < 8; ++k) want.push_back(values[(i * 5 + j) * 8 + k]);
  EXPECT_EQ(got, want);
  ASSERT_OK_AND_ASSIGN(std::vector<float> one,
                       array.Download<float>(MakeRegion({SliceSpec{-1, std::nullopt, std::nullopt},
                                                         SliceSpec{2, 3, std::nullopt},
                                                         SliceSpec{7, 8, std::nullopt}})));
  EXPECT_EQ(one, std::vector<float>{values[(5 * 5 + 2) * 8 + 7]});
}

TEST_P(RoundTripTest, LargerThanTheDefaultGrpcMessageLimit) {
  // 24 MiB of float64 across several slabs and messages, uploaded and downloaded whole, then a
  // strided region that crosses chunk boundaries.
  std::mt19937_64 rng(7);
  const Shape shape = {3 * 1024, 1024};
  const std::vector<double> values = RandomValues<double>(NumElements(shape), rng);
  ASSERT_OK_AND_ASSIGN(
      Array array,
      client().Upload<double>(values, shape, {Split(2, 0, shape[0], {dev(0), dev(1), dev(2)})}));
  ASSERT_OK_AND_ASSIGN(std::vector<double> back, array.Download<double>());
  ASSERT_EQ(back.size(), values.size());
  EXPECT_TRUE(back == values);
  ASSERT_OK_AND_ASSIGN(
      std::vector<double> column,
      array.Download<double>(MakeRegion({SliceSpec{}, SliceSpec{5, 6, std::nullopt}})));
  ASSERT_EQ(column.size(), 3u * 1024);
  for (int64_t i = 0; i < 3 * 1024; ++i) ASSERT_EQ(column[i], values[i * 1024 + 5]);
}

TEST_P(RoundTripTest, ParallelStreamsSplitLargeTransfers) {
  ConnectOptions options;
  options.parallel_min_bytes = 1 << 20;
  options.parallel_streams = 3;
  ASSERT_OK_AND_ASSIGN(Client parallel, Client::Connect(address(), 5000, options));
  std::mt19937_64 rng(17);
  const Shape shape = {1001, 700};  // rows do not split evenly over 3 streams
  const std::vector<float> values = RandomValues<float>(NumElements(shape), rng);
  ASSERT_OK_AND_ASSIGN(
      Array array,
      parallel.Upload<float>(values, shape,
                             {BlockGrid2D(1001, 700, 2, 2, {dev(0), dev(1), dev(2), dev(3)})}));
  ASSERT_OK_AND_ASSIGN(std::vector<float> back, array.Download<float>());
  EXPECT_TRUE(back == values);
  std::vector<float> into(values.size());
  ASSERT_OK(array.DownloadTo(std::span<float>(into)));
  EXPECT_TRUE(into == values);
  std::vector<float> short_span(10);
  EXPECT_EQ(array.DownloadTo(std::span<float>(short_span)).code(),
            absl::StatusCode::kInvalidArgument);
}

// Download, DownloadTo and Write copy bytes as they are, so a type other than the dtype's would
// be silent garbage (a float64 array read as float gave wrong values, not an error): refused,
// naming both dtypes.
TEST_P(RoundTripTest, DownloadRefusesAnotherElementType) {
  const std::vector<double> values = {1.5, -2.25, 3.0, 4.125};
  ASSERT_OK_AND_ASSIGN(Array array, client().Upload<double>(values, {4}, {OnDevice(1, dev(1))}));
  EXPECT_TRUE(StatusIs(array.Download<float>().status(), absl::StatusCode::kInvalidArgument,
                       {"FLOAT64", "FLOAT32"}));
  EXPECT_TRUE(StatusIs(array.Download<int64_t>().status(), absl::StatusCode::kInvalidArgument,
                       {"FLOAT64", "INT64"}));
  // DownloadTo and Write check the same, and DownloadTo the span's length; Write leaves the array
  // as it was.
  std::vector<float> floats(4);
  EXPECT_TRUE(StatusIs(array.DownloadTo<float>(floats), absl::StatusCode::kInvalidArgument,
                       {"DownloadTo", "FLOAT64", "FLOAT32"}));
  std::vector<double> short_span(3);
  EXPECT_TRUE(StatusIs(array.DownloadTo<double>(short_span), absl::StatusCode::kInvalidArgument,
                       {"DownloadTo: the span holds 3 elements"}));
  const std::vector<float> other = {9, 9, 9, 9};
  EXPECT_TRUE(StatusIs(array.Write<float>(other), absl::StatusCode::kInvalidArgument,
                       {"Write", "FLOAT64", "FLOAT32"}));
  ASSERT_OK_AND_ASSIGN(std::vector<double> back, array.Download<double>());
  EXPECT_EQ(back, values);
  std::vector<double> into(4);
  ASSERT_OK(array.DownloadTo<double>(into));
  EXPECT_EQ(into, values);
}

TEST_P(RoundTripTest, WriteARegionOfAnExistingArray) {
  std::mt19937_64 rng(5);
  const Shape shape = {10, 10};
  const TestMap map = RandomMap(shape, devices(), rng, /*allow_gaps=*/false);
  std::vector<int32_t> values = RandomValues<int32_t>(100, rng);
  ASSERT_OK_AND_ASSIGN(Array array, client().Upload<int32_t>(values, shape, {ToProto(map, shape)}));
  const std::vector<int32_t> patch = {1, 2, 3, 4, 5, 6};  // rows 2,4,6 x cols 7,8
  ASSERT_OK(
      array.Write<int32_t>(patch, MakeRegion({SliceSpec{2, 7, 2}, SliceSpec{7, 9, std::nullopt}})));
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 2; ++c) values[(2 + 2 * r) * 10 + 7 + c] = patch[r * 2 + c];
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> back, array.Download<int32_t>());
  EXPECT_EQ(back, values);
}

TEST_P(RoundTripTest, FillsMatchTheirDefinition) {
  const Shape shape = {4, 6};
  const v1::IndexMap map = BlockGrid2D(4, 6, 2, 2, {dev(0), dev(1), dev(2), dev(3)});
  v1::Fill arange;
  arange.mutable_arange()->set_start(3);
  arange.mutable_arange()->set_step(0.5);
  ASSERT_OK_AND_ASSIGN(Array a, client().Create(shape, v1::DTYPE_FLOAT64, {map}, arange));
  ASSERT_OK_AND_ASSIGN(std::vector<double> values, a.Download<double>());
  for (int i = 0; i < 24; ++i) EXPECT_EQ(values[i], 3 + 0.5 * i);

  v1::Fill full;
  *full.mutable_full()->mutable_value() = MakeScalar<int64_t>(-7);
  ASSERT_OK_AND_ASSIGN(Array f, client().Create(shape, v1::DTYPE_INT32, {map}, full));
  ASSERT_OK_AND_ASSIGN(std::vector<int32_t> fv, f.Download<int32_t>());
  EXPECT_EQ(fv, std::vector<int32_t>(24, -7));

  // Uniform values depend on the seed and the element only, not on the layout.
  v1::Fill uniform;
  uniform.mutable_uniform()->set_low(-2);
  uniform.mutable_uniform()->set_high(5);
  uniform.mutable_uniform()->set_seed(11);
  ASSERT_OK_AND_ASSIGN(Array u1, client().Create(shape, v1::DTYPE_FLOAT32, {map}, uniform));
  ASSERT_OK_AND_ASSIGN(Array u2,
                       client().Create(shape, v1::DTYPE_FLOAT32, {OnDevice(2, dev(1))}, uniform));
  ASSERT_OK_AND_ASSIGN(std::vector<float> v1s, u1.Download<float>());
  ASSERT_OK_AND_ASSIGN(std::vector<float> v2s, u2.Download<float>());
  EXPECT_EQ(v1s, v2s);
  std::set<float> distinct(v1s.begin(), v1s.end());
  EXPECT_GT(distinct.size(), 20u);
  for (float v : v1s) {
    EXPECT_GE(v, -2.0f);
    EXPECT_LT(v, 5.0f);
  }
  uniform.mutable_uniform()->set_high(3);
  ASSERT_OK_AND_ASSIGN(Array ui, client().Create(shape, v1::DTYPE_INT64, {map}, uniform));
  ASSERT_OK_AND_ASSIGN(std::vector<int64_t> iv, ui.Download<int64_t>());
  std::set<int64_t> ints(iv.begin(), iv.end());
  EXPECT_EQ(*ints.begin(), -2);
  EXPECT_EQ(*ints.rbegin(), 2);
}

DISTARRAY_INSTANTIATE_BACKENDS(RoundTripTest);

}  // namespace
}  // namespace distarray::testing
