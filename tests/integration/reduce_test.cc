// Reductions (sum, prod, max, min, mean, all, any, argmax, argmin) over every axis combination of
// 1-D to 4-D arrays in random layouts (overlapping copies, strides, gaps) and modes, against the
// host model of tests/support/compute_reference.h (exact integers, long double floats): result
// dtypes, partial-result modes, combine and change_mode, NaN and ties, and the errors.
#include <cmath>
#include <limits>
#include <optional>
#include <random>

#include "tests/support/backend_fixture.h"
#include "tests/support/complex_reference.h"
#include "tests/support/compute_reference.h"
#include "tests/support/reference.h"

namespace distarray::testing {
namespace {

const v1::ReduceOp kOps[] = {v1::REDUCE_OP_SUM, v1::REDUCE_OP_PROD,   v1::REDUCE_OP_MAX,
                             v1::REDUCE_OP_MIN, v1::REDUCE_OP_MEAN,   v1::REDUCE_OP_ALL,
                             v1::REDUCE_OP_ANY, v1::REDUCE_OP_ARGMAX, v1::REDUCE_OP_ARGMIN};

std::string Describe(v1::ReduceOp op, const HostArray& a, const std::vector<int32_t>& axes,
                     bool keepdims, bool combine) {
  return absl::StrCat(ReduceName(op), "(", Describe(a), ", axes=[", absl::StrJoin(axes, ", "), "]",
                      keepdims ? ", keepdims" : "", combine ? ", combine" : "", ")");
}

// How the mode of an uncombined result is checked.
enum class PartialMode {
  // The op's partial mode, or REPLICA: a daemon may return partials that never overlap (each
  // output computed whole on one chunk, every output covered) as the REPLICA values they are.
  kPartialOrReplica,
  // The op's partial mode: the caller's layout makes the partials of each output overlap.
  kPartial,
};

// Reduces `a` (whose logical values are `logical`) and checks the answer against the model: the
// status code, then the result's dtype, shape, mode (REPLICA with `combine`, else as
// `partial_mode` says) and downloaded (combined) values.
::testing::AssertionResult CheckReduce(const Array& a, const HostArray& logical, v1::ReduceOp op,
                                       const std::vector<int32_t>& axes, bool keepdims,
                                       bool combine, std::optional<Array>* result_out = nullptr,
                                       PartialMode partial_mode = PartialMode::kPartialOrReplica) {
  const std::string what = Describe(op, logical, axes, keepdims, combine);
  const ReduceReference ref = ReferenceReduce(op, logical, axes, keepdims);
  absl::StatusOr<Array> r = Reduce(a, op, axes, keepdims, combine);
  if (ref.code != absl::StatusCode::kOk) {
    ::testing::AssertionResult s = StatusIs(r.status(), ref.code);
    if (!s) return s << " for " << what;
    return s;
  }
  if (!r.ok()) return ::testing::AssertionFailure() << what << ": " << r.status();
  if (r->info().dtype() != ref.result.dtype) {
    return ::testing::AssertionFailure() << what << ": result dtype " << DTypeStr(r->info().dtype())
                                         << ", want " << DTypeStr(ref.result.dtype);
  }
  if (r->shape() != ref.result.shape) {
    return ::testing::AssertionFailure() << what << ": result shape " << ShapeStr(r->shape())
                                         << ", want " << ShapeStr(ref.result.shape);
  }
  // Partials come back in the op's mode, or REPLICA where they do not overlap (the daemon then
  // has nothing to combine); with combine always REPLICA.
  const v1::Mode mode = combine ? v1::MODE_REPLICA : ReducePartialMode(op);
  const bool replica_ok = partial_mode == PartialMode::kPartialOrReplica;
  if (r->info().mode() != mode && !(replica_ok && r->info().mode() == v1::MODE_REPLICA)) {
    return ::testing::AssertionFailure()
           << what << ": mode " << v1::Mode_Name(r->info().mode()) << ", want "
           << v1::Mode_Name(mode) << (replica_ok ? " or REPLICA" : "");
  }
  absl::StatusOr<HostArray> got = DownloadHost(*r);
  if (!got.ok()) return ::testing::AssertionFailure() << what << ": download " << got.status();
  ::testing::AssertionResult s = ValuesMatch(*got, ref.result, 0, &ref.abs_tol);
  if (result_out != nullptr) result_out->emplace(*std::move(r));
  if (!s) return s << "\n  in " << what;
  return s;
}

// Random values of `d` for reductions: floats in [-2, 2] (so products of every element stay
// finite in float32), integers over their whole range, int64 and uint64 within +-1000 (so the
// mean, which NumPy accumulates in float64, is exact).
HostArray ReduceValues(v1::DType d, const Shape& shape, std::mt19937_64& rng) {
  Domain dom{.float_lo = -2, .float_hi = 2};
  if (d == v1::DTYPE_INT64 || d == v1::DTYPE_UINT64) {
    dom.int_lo = -1000;
    dom.int_hi = 1000;
  }
  return RandomHost(d, shape, rng, dom);
}

class ReduceTest : public BackendTest {
 protected:
  std::vector<int> AllDevices() const { return {dev(0), dev(1), dev(2), dev(3)}; }

  template <typename T>
  absl::StatusOr<Array> Put(const std::vector<T>& values, const Shape& shape,
                            const v1::IndexMap& map, v1::Mode mode = v1::MODE_REPLICA) {
    auto data = Contiguous(values);
    return client().Upload<T>(std::span<const T>(data.get(), values.size()), shape,
                              ArrayOpts(map, mode));
  }
};

TEST_P(ReduceTest, EveryAxisCombinationOfOneToFourDimensions) {
  std::mt19937_64 rng(201);
  const std::vector<Shape> shapes = {{5}, {4, 6}, {3, 4, 5}, {2, 3, 2, 4}};
  const std::vector<v1::DType> dtypes = {v1::DTYPE_FLOAT64, v1::DTYPE_INT32, v1::DTYPE_FLOAT32,
                                         v1::DTYPE_UINT8,   v1::DTYPE_BOOL,  v1::DTYPE_INT64,
                                         v1::DTYPE_INT16,   v1::DTYPE_UINT64};
  size_t next_dtype = 0;
  for (const Shape& shape : shapes) {
    const int rank = static_cast<int>(shape.size());
    // mask 0: no axes given (all of them); the full mask names every axis explicitly.
    for (int mask = 0; mask < (1 << rank); ++mask) {
      const v1::DType dtype = dtypes[next_dtype++ % dtypes.size()];
      const HostArray values = ReduceValues(dtype, shape, rng);
      const TestMap map = RandomMap(shape, devices(), rng);
      // Mostly REPLICA (uncovered elements read 0); some SUM-mode operands (each value stored
      // once).
      const v1::Mode mode = rng() % 3 == 0 ? v1::MODE_SUM : v1::MODE_REPLICA;
      ASSERT_OK_AND_ASSIGN(Array a, UploadHost(client(), values, ToProto(map, shape), mode));
      const HostArray logical = Logical(values, map, mode);
      std::vector<int32_t> axes;
      for (int d = 0; d < rank; ++d) {
        if (mask & (1 << d)) axes.push_back(rng() % 2 == 0 ? d : d - rank);  // negative axes too
      }
      for (v1::ReduceOp op : kOps) {
        for (bool keepdims : {false, true}) {
          const bool combine = rng() % 2 == 0;
          EXPECT_TRUE(CheckReduce(a, logical, op, axes, keepdims, combine))
              << "layout " << ToProto(map, shape).ShortDebugString() << " " << v1::Mode_Name(mode);
        }
      }
    }
  }
}

TEST_P(ReduceTest, ResultDTypesOfEveryDType) {
  // The model's table at the points the API promises.
  EXPECT_EQ(ReduceResultDType(v1::REDUCE_OP_SUM, v1::DTYPE_BOOL), v1::DTYPE_INT64);
  EXPECT_EQ(ReduceResultDType(v1::REDUCE_OP_SUM, v1::DTYPE_INT8), v1::DTYPE_INT64);
  EXPECT_EQ(ReduceResultDType(v1::REDUCE_OP_SUM, v1::DTYPE_UINT8), v1::DTYPE_UINT64);
  EXPECT_EQ(ReduceResultDType(v1::REDUCE_OP_PROD, v1::DTYPE_UINT32), v1::DTYPE_UINT64);
  EXPECT_EQ(ReduceResultDType(v1::REDUCE_OP_PROD, v1::DTYPE_INT16), v1::DTYPE_INT64);
  EXPECT_EQ(ReduceResultDType(v1::REDUCE_OP_SUM, v1::DTYPE_FLOAT32), v1::DTYPE_FLOAT32);
  EXPECT_EQ(ReduceResultDType(v1::REDUCE_OP_MEAN, v1::DTYPE_INT32), v1::DTYPE_FLOAT64);
  EXPECT_EQ(ReduceResultDType(v1::REDUCE_OP_MEAN, v1::DTYPE_BOOL), v1::DTYPE_FLOAT64);
  EXPECT_EQ(ReduceResultDType(v1::REDUCE_OP_MEAN, v1::DTYPE_FLOAT32), v1::DTYPE_FLOAT32);
  EXPECT_EQ(ReduceResultDType(v1::REDUCE_OP_MAX, v1::DTYPE_INT16), v1::DTYPE_INT16);
  EXPECT_EQ(ReduceResultDType(v1::REDUCE_OP_ALL, v1::DTYPE_FLOAT64), v1::DTYPE_BOOL);
  EXPECT_EQ(ReduceResultDType(v1::REDUCE_OP_ARGMIN, v1::DTYPE_UINT8), v1::DTYPE_INT64);

  std::mt19937_64 rng(202);
  const Shape shape = {3, 4, 5};
  const std::vector<std::vector<int32_t>> axes_list = {{1}, {0, 2}, {}, {-1}};
  for (v1::DType dtype : ImplementedDTypes()) {
    // Integers over their whole range: sums and products wrap in 64 bits.
    const HostArray values = RandomHost(dtype, shape, rng, {.float_lo = -2, .float_hi = 2});
    const TestMap map = RandomMap(shape, devices(), rng);
    ASSERT_OK_AND_ASSIGN(Array a, UploadHost(client(), values, ToProto(map, shape)));
    const HostArray logical = Logical(values, map);
    for (v1::ReduceOp op : kOps) {
      // The mean of full-range 64-bit integers is MeanOfIntegersDoesNotWrap's.
      if (op == v1::REDUCE_OP_MEAN && DTypeBits(dtype) == 64 && !IsFloatDType(dtype)) continue;
      for (const std::vector<int32_t>& axes : axes_list) {
        EXPECT_TRUE(CheckReduce(a, logical, op, axes, /*keepdims=*/false, /*combine=*/false));
      }
    }
  }
}

TEST_P(ReduceTest, OperandsInOpModesUseTheirLogicalValues) {
  std::mt19937_64 rng(203);
  const Shape shape = {6, 7};
  for (v1::Mode mode : {v1::MODE_SUM, v1::MODE_PROD, v1::MODE_MAX, v1::MODE_MIN}) {
    for (v1::DType dtype : {v1::DTYPE_FLOAT64, v1::DTYPE_INT32, v1::DTYPE_FLOAT32}) {
      const HostArray values = ReduceValues(dtype, shape, rng);
      // Gaps read as the mode's identity (-inf for MAX floats, INT32_MAX for MIN int32, ...).
      const TestMap map = RandomMap(shape, devices(), rng);
      ASSERT_OK_AND_ASSIGN(Array a, UploadHost(client(), values, ToProto(map, shape), mode));
      const HostArray logical = Logical(values, map, mode);
      for (v1::ReduceOp op : kOps) {
        for (const std::vector<int32_t>& axes : std::vector<std::vector<int32_t>>{{0}, {1}, {}}) {
          EXPECT_TRUE(CheckReduce(a, logical, op, axes, false, rng() % 2 == 0))
              << v1::Mode_Name(mode) << " layout " << ToProto(map, shape).ShortDebugString();
        }
      }
    }
  }
}

// An op-mode operand whose chunks leave whole outputs uncovered: those outputs reduce the mode's
// identity (a MIN-mode float column with no chunk is all +inf, its argmin 0).
TEST_P(ReduceTest, OutputsWithNoChunkReduceTheIdentity) {
  const v1::IndexMap right_column = MakeIndexMap(
      {MakeChunk(dev(1), {SliceSpec{}, SliceSpec{1, 2, std::nullopt}}),
       MakeChunk(dev(2), {SliceSpec{0, 2, std::nullopt}, SliceSpec{1, 2, std::nullopt}})});
  const std::vector<float> values = {5, -1, 7, 2, 3, 4};  // (3, 2); column 0 is uncovered
  ASSERT_OK_AND_ASSIGN(Array a, Put<float>(values, {3, 2}, right_column, v1::MODE_MIN));
  const float inf = std::numeric_limits<float>::infinity();
  HostArray logical{v1::DTYPE_FLOAT32, {3, 2}, {inf, -1, inf, 2, inf, 4}};
  ASSERT_OK_AND_ASSIGN(HostArray stored, DownloadHost(a));
  ASSERT_TRUE(ValuesMatch(stored, logical, 0));
  for (bool combine : {false, true}) {
    for (v1::ReduceOp op : kOps) {
      EXPECT_TRUE(CheckReduce(a, logical, op, {0}, false, combine));
    }
  }
  ASSERT_OK_AND_ASSIGN(Array mins, Reduce(a, v1::REDUCE_OP_MIN, {0}, false, true));
  EXPECT_EQ(mins.Download<float>().value(), (std::vector<float>{inf, -1}));
  ASSERT_OK_AND_ASSIGN(Array argmins, Reduce(a, v1::REDUCE_OP_ARGMIN, {0}));
  EXPECT_EQ(argmins.Download<int64_t>().value(), (std::vector<int64_t>{0, 0}));
}

// all and any are where a masked copy's value matters most: a copy masked with MAX's identity
// (-inf, truthy) instead of a falsy one made any of zeros true. Values mostly zero (any) or
// mostly nonzero (all), every dtype, replicated, overlapping, gapped and op-mode layouts, every
// reduction, against NumPy's answer on the logical values.
TEST_P(ReduceTest, EveryReductionOfSparseValuesInEveryLayoutAndMode) {
  std::mt19937_64 rng(206);
  const Shape shape = {6, 5};
  const std::vector<TestMap> layouts = {
      {{dev(0), {{0, 6, 1}, {0, 5, 1}}}, {dev(1), {{0, 6, 1}, {0, 5, 1}}}},  // two whole copies
      {{dev(0), {{0, 4, 1}, {0, 5, 1}}}, {dev(1), {{2, 6, 1}, {0, 5, 1}}}},  // rows 2..3 twice
      {{dev(1), {{0, 6, 2}, {0, 5, 1}}}, {dev(2), {{0, 3, 1}, {1, 5, 1}}}},  // gaps, overlaps
  };
  const std::vector<std::vector<int32_t>> axes_list = {{0}, {1}, {}};
  for (v1::DType dtype : ImplementedDTypes()) {
    for (double zeros : {0.85, 0.1}) {
      HostArray values = ReduceValues(dtype, shape, rng);
      for (long double& v : values.values) {
        if (std::uniform_real_distribution<double>(0, 1)(rng) < zeros) v = 0;
      }
      for (const TestMap& map : layouts) {
        for (v1::Mode mode :
             {v1::MODE_REPLICA, v1::MODE_SUM, v1::MODE_PROD, v1::MODE_MAX, v1::MODE_MIN}) {
          ASSERT_OK_AND_ASSIGN(Array a, UploadHost(client(), values, ToProto(map, shape), mode));
          const HostArray logical = Logical(values, map, mode);
          for (v1::ReduceOp op : kOps) {
            for (const std::vector<int32_t>& axes : axes_list) {
              EXPECT_TRUE(CheckReduce(a, logical, op, axes, false, rng() % 2 == 0))
                  << v1::Mode_Name(mode) << " layout " << ToProto(map, shape).ShortDebugString();
            }
          }
        }
      }
    }
  }
}

// The case, spelled out: float64 zeros((3, 2)) with x[2, 0] = 5, two whole copies:
// any(axis=0) is [True, False], and any of all zeros is False, for each dtype it was seen in.
TEST_P(ReduceTest, AnyOfReplicatedZerosIsFalse) {
  const v1::IndexMap both = Replicated(2, {dev(0), dev(1)});
  for (v1::DType dtype : {v1::DTYPE_FLOAT64, v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT16, v1::DTYPE_INT32,
                          v1::DTYPE_COMPLEX128}) {
    const std::string what = DTypeStr(dtype);
    auto upload = [&](const std::vector<long double>& values) -> absl::StatusOr<Array> {
      if (dtype != v1::DTYPE_COMPLEX128) {
        return UploadHost(client(), HostArray{dtype, {3, 2}, values}, both);
      }
      std::vector<C128> z(values.begin(), values.end());
      return client().Upload<C128>(z, {3, 2}, {both});
    };
    ASSERT_OK_AND_ASSIGN(Array x, upload({0, 0, 0, 0, 5, 0}));
    ASSERT_OK_AND_ASSIGN(Array any0, Reduce(x, v1::REDUCE_OP_ANY, {0}, false, true));
    EXPECT_EQ(any0.Download<bool>().value(), (std::vector<bool>{true, false})) << what;
    ASSERT_OK_AND_ASSIGN(Array zeros, upload({0, 0, 0, 0, 0, 0}));
    ASSERT_OK_AND_ASSIGN(Array none, Reduce(zeros, v1::REDUCE_OP_ANY, {}, false, true));
    EXPECT_EQ(none.Download<bool>().value(), (std::vector<bool>{false})) << what;
    ASSERT_OK_AND_ASSIGN(Array all0, Reduce(x, v1::REDUCE_OP_ALL, {0}, false, true));
    EXPECT_EQ(all0.Download<bool>().value(), (std::vector<bool>{false, false})) << what;
  }
}

TEST_P(ReduceTest, ReplicatedElementsCountOnce) {
  std::mt19937_64 rng(204);
  const Shape shape = {10, 3};
  const HostArray values = RandomHost(v1::DTYPE_INT64, shape, rng, {.int_lo = -50, .int_hi = 50});
  const v1::IndexMap everywhere = Replicated(2, AllDevices());
  // Halves that overlap in rows 3..5, and a strided third copy of every other row.
  const v1::IndexMap overlapping = MakeIndexMap({
      MakeChunk(dev(0), {SliceSpec{0, 6, std::nullopt}, SliceSpec{}}),
      MakeChunk(dev(1), {SliceSpec{3, 10, std::nullopt}, SliceSpec{}}),
      MakeChunk(dev(2), {SliceSpec{1, 10, 2}, SliceSpec{}}),
  });
  for (const v1::IndexMap& map : {everywhere, overlapping}) {
    ASSERT_OK_AND_ASSIGN(Array a, UploadHost(client(), values, map));
    for (v1::ReduceOp op : kOps) {
      for (bool combine : {false, true}) {
        EXPECT_TRUE(CheckReduce(a, values, op, {}, false, combine)) << map.ShortDebugString();
        EXPECT_TRUE(CheckReduce(a, values, op, {0}, true, combine)) << map.ShortDebugString();
      }
    }
  }
  // The plain sum, spelled out.
  int64_t sum = 0;
  for (long double v : values.values) sum += static_cast<int64_t>(v);
  ASSERT_OK_AND_ASSIGN(Array a, UploadHost(client(), values, everywhere));
  ASSERT_OK_AND_ASSIGN(Array s, Reduce(a, v1::REDUCE_OP_SUM));
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.Download<int64_t>().value(), std::vector<int64_t>{sum});
}

TEST_P(ReduceTest, PartialsCombineOnDownloadChangeModeOrAtOnce) {
  std::mt19937_64 rng(205);
  const Shape shape = {8, 6};
  const HostArray values = ReduceValues(v1::DTYPE_FLOAT64, shape, rng);
  ASSERT_OK_AND_ASSIGN(Array a,
                       UploadHost(client(), values, BlockGrid2D(8, 6, 2, 2, AllDevices())));
  for (v1::ReduceOp op : kOps) {
    for (const std::vector<int32_t>& axes : std::vector<std::vector<int32_t>>{{0}, {1}, {}}) {
      const ReduceReference ref = ReferenceReduce(op, values, axes, false);
      std::optional<Array> partial;
      // Each output has partials from two blocks of the grid: the result is in the op's mode.
      ASSERT_TRUE(CheckReduce(a, values, op, axes, false, /*combine=*/false, &partial,
                              PartialMode::kPartial));
      // change_mode to REPLICA keeps the logical values.
      ASSERT_OK_AND_ASSIGN(Array replica, partial->ChangeMode(v1::MODE_REPLICA));
      EXPECT_EQ(replica.info().mode(), v1::MODE_REPLICA);
      ASSERT_OK_AND_ASSIGN(HostArray from_replica, DownloadHost(replica));
      EXPECT_TRUE(ValuesMatch(from_replica, ref.result, 0, &ref.abs_tol)) << ReduceName(op);
      // The partial itself is unchanged by that.
      ASSERT_OK_AND_ASSIGN(HostArray again, DownloadHost(*partial));
      EXPECT_TRUE(ValuesMatch(again, ref.result, 0, &ref.abs_tol)) << ReduceName(op);
      // combine=true gives the same values in REPLICA mode at once.
      EXPECT_TRUE(CheckReduce(a, values, op, axes, false, /*combine=*/true));
    }
  }
}

TEST_P(ReduceTest, NaNIsTheExtremeAndPropagates) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const v1::IndexMap halves = Split(1, 0, 8, {dev(0), dev(1)});
  // A NaN in each half, and one only in the second half (the partial of the first has none).
  const std::vector<std::vector<double>> cases = {
      {1, 5, nan, 3, 7, nan, 2, 9},
      {1, 5, 3, 4, 7, nan, 2, 9},
      {-1, nan, nan, 0, 0, 0, 0, 0},
  };
  for (const std::vector<double>& v : cases) {
    ASSERT_OK_AND_ASSIGN(Array a, Put<double>(v, {8}, halves));
    HostArray logical{v1::DTYPE_FLOAT64, {8}, std::vector<long double>(v.begin(), v.end())};
    for (v1::ReduceOp op : kOps) {
      EXPECT_TRUE(CheckReduce(a, logical, op, {}, false, false));
      EXPECT_TRUE(CheckReduce(a, logical, op, {0}, true, true));
    }
  }
  ASSERT_OK_AND_ASSIGN(Array b, Put<double>(cases[1], {8}, halves));
  ASSERT_OK_AND_ASSIGN(Array mx, Reduce(b, v1::REDUCE_OP_MAX));
  EXPECT_TRUE(std::isnan(mx.Download<double>().value()[0]));
  ASSERT_OK_AND_ASSIGN(Array amx, Reduce(b, v1::REDUCE_OP_ARGMAX));
  EXPECT_EQ(amx.Download<int64_t>().value(), std::vector<int64_t>{5});
  ASSERT_OK_AND_ASSIGN(Array amn, Reduce(b, v1::REDUCE_OP_ARGMIN));
  EXPECT_EQ(amn.Download<int64_t>().value(), std::vector<int64_t>{5});
  ASSERT_OK_AND_ASSIGN(Array c, Put<double>(cases[2], {8}, halves));
  ASSERT_OK_AND_ASSIGN(Array first, Reduce(c, v1::REDUCE_OP_ARGMIN));
  EXPECT_EQ(first.Download<int64_t>().value(), std::vector<int64_t>{1});

  // Per row of a 2-D float32 array split by columns: each row's first NaN.
  const float fn = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> m = {1,  2, fn, 4, fn, 6,  //
                                fn, 0, 0,  0, 0,  0,  //
                                3,  1, 4,  1, 5,  9};
  ASSERT_OK_AND_ASSIGN(Array M, Put<float>(m, {3, 6}, Split(2, 1, 6, {dev(2), dev(1), dev(0)})));
  ASSERT_OK_AND_ASSIGN(Array rows, Reduce(M, v1::REDUCE_OP_ARGMAX, {1}));
  EXPECT_EQ(rows.Download<int64_t>().value(), (std::vector<int64_t>{2, 0, 5}));
  ASSERT_OK_AND_ASSIGN(Array rmin, Reduce(M, v1::REDUCE_OP_MIN, {-1}));
  const std::vector<float> rm = rmin.Download<float>().value();
  ASSERT_EQ(rm.size(), 3u);
  EXPECT_TRUE(std::isnan(rm[0]) && std::isnan(rm[1]) && rm[2] == 1) << rm[0] << rm[1] << rm[2];
}

TEST_P(ReduceTest, ArgExtremaTakeTheFirstOccurrence) {
  // The chunks are listed out of index order, so the first occurrence is not the first chunk's.
  const v1::IndexMap reversed = MakeIndexMap({MakeChunk(dev(0), {SliceSpec{3, 6, std::nullopt}}),
                                              MakeChunk(dev(1), {SliceSpec{0, 3, std::nullopt}})});
  ASSERT_OK_AND_ASSIGN(Array a, Put<int8_t>({5, 1, 5, 5, -3, -3}, {6}, reversed));
  ASSERT_OK_AND_ASSIGN(Array amax, Reduce(a, v1::REDUCE_OP_ARGMAX));
  ASSERT_OK_AND_ASSIGN(Array amin, Reduce(a, v1::REDUCE_OP_ARGMIN));
  EXPECT_EQ(amax.info().dtype(), v1::DTYPE_INT64);
  EXPECT_EQ(amax.Download<int64_t>().value(), std::vector<int64_t>{0});
  EXPECT_EQ(amin.Download<int64_t>().value(), std::vector<int64_t>{4});
  // Bools: the first true.
  ASSERT_OK_AND_ASSIGN(Array b, Put<bool>({false, false, true, true, false, true}, {6}, reversed));
  ASSERT_OK_AND_ASSIGN(Array bmax, Reduce(b, v1::REDUCE_OP_ARGMAX));
  EXPECT_EQ(bmax.Download<int64_t>().value(), std::vector<int64_t>{2});
  // A 2-D array with many ties, per axis and flattened.
  std::mt19937_64 rng(206);
  const Shape shape = {5, 7};
  const HostArray ties = RandomHost(v1::DTYPE_UINT16, shape, rng, {.int_lo = 0, .int_hi = 2});
  const TestMap map = RandomMap(shape, devices(), rng);
  ASSERT_OK_AND_ASSIGN(Array t, UploadHost(client(), ties, ToProto(map, shape)));
  const HostArray logical = Logical(ties, map);
  for (v1::ReduceOp op : {v1::REDUCE_OP_ARGMAX, v1::REDUCE_OP_ARGMIN}) {
    for (const std::vector<int32_t>& axes :
         std::vector<std::vector<int32_t>>{{0}, {1}, {-2}, {}, {0, 1}}) {
      EXPECT_TRUE(CheckReduce(t, logical, op, axes, false, false));
      EXPECT_TRUE(CheckReduce(t, logical, op, axes, true, true));
    }
  }
}

TEST_P(ReduceTest, IntegerSumsAndProductsWrapIn64Bits) {
  // int8 values sum in int64, without wrapping at 8 bits.
  const v1::IndexMap split = Split(1, 0, 40, AllDevices());
  ASSERT_OK_AND_ASSIGN(Array small, Put<int8_t>(std::vector<int8_t>(40, 100), {40}, split));
  ASSERT_OK_AND_ASSIGN(Array s8, Reduce(small, v1::REDUCE_OP_SUM));
  EXPECT_EQ(s8.info().dtype(), v1::DTYPE_INT64);
  EXPECT_EQ(s8.Download<int64_t>().value(), std::vector<int64_t>{4000});
  ASSERT_OK_AND_ASSIGN(Array u8, Put<uint8_t>(std::vector<uint8_t>(40, 255), {40}, split));
  ASSERT_OK_AND_ASSIGN(Array su8, Reduce(u8, v1::REDUCE_OP_SUM));
  EXPECT_EQ(su8.info().dtype(), v1::DTYPE_UINT64);
  EXPECT_EQ(su8.Download<uint64_t>().value(), std::vector<uint64_t>{10200});
  // 64-bit sums and products wrap (the partials of each device wrap and combine modulo 2^64).
  ASSERT_OK_AND_ASSIGN(Array big, Put<int64_t>({INT64_MAX, INT64_MAX, 2, INT64_MIN}, {4},
                                               Split(1, 0, 4, AllDevices())));
  ASSERT_OK_AND_ASSIGN(Array sbig, Reduce(big, v1::REDUCE_OP_SUM));
  EXPECT_EQ(sbig.Download<int64_t>().value(), std::vector<int64_t>{INT64_MIN});
  ASSERT_OK_AND_ASSIGN(Array pbig, Reduce(big, v1::REDUCE_OP_PROD));
  EXPECT_EQ(pbig.Download<int64_t>().value(), std::vector<int64_t>{0});
  std::mt19937_64 rng(207);
  for (v1::DType dtype : {v1::DTYPE_INT64, v1::DTYPE_UINT64, v1::DTYPE_UINT32, v1::DTYPE_INT32}) {
    const Shape shape = {6, 9};
    const HostArray values = RandomHost(dtype, shape, rng);  // the whole range
    const TestMap map = RandomMap(shape, devices(), rng);
    ASSERT_OK_AND_ASSIGN(Array a, UploadHost(client(), values, ToProto(map, shape)));
    const HostArray logical = Logical(values, map);
    for (v1::ReduceOp op : {v1::REDUCE_OP_SUM, v1::REDUCE_OP_PROD}) {
      for (const std::vector<int32_t>& axes : std::vector<std::vector<int32_t>>{{0}, {1}, {}}) {
        EXPECT_TRUE(CheckReduce(a, logical, op, axes, false, rng() % 2 == 0));
      }
    }
  }
}

// NumPy computes the mean of integers in float64 (np.mean(a) == np.add.reduce(a, dtype=float64)
// / n): it does not wrap where an int64 sum would.
TEST_P(ReduceTest, MeanOfIntegersDoesNotWrap) {
  ASSERT_OK_AND_ASSIGN(Array a, Put<int64_t>({INT64_MAX, INT64_MAX, INT64_MAX, 1}, {4},
                                             Split(1, 0, 4, {dev(0), dev(1)})));
  ASSERT_OK_AND_ASSIGN(Array m, Reduce(a, v1::REDUCE_OP_MEAN));
  EXPECT_EQ(m.info().dtype(), v1::DTYPE_FLOAT64);
  const double want = (3.0L * INT64_MAX + 1) / 4;
  const double got = m.Download<double>().value()[0];
  EXPECT_NEAR(got, want, 1e-12 * want);
  ASSERT_OK_AND_ASSIGN(
      Array u, Put<uint64_t>({UINT64_MAX, UINT64_MAX}, {2}, Split(1, 0, 2, {dev(2), dev(3)})));
  ASSERT_OK_AND_ASSIGN(Array mu, Reduce(u, v1::REDUCE_OP_MEAN, {0}, false, true));
  EXPECT_NEAR(mu.Download<double>().value()[0], 18446744073709551615.0, 1e4);
}

TEST_P(ReduceTest, ErrorsHaveExactCodes) {
  std::mt19937_64 rng(208);
  const HostArray values = ReduceValues(v1::DTYPE_FLOAT32, {3, 4, 5}, rng);
  ASSERT_OK_AND_ASSIGN(Array a, UploadHost(client(), values, Split(3, 1, 4, AllDevices())));
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  struct Case {
    std::string name;
    v1::ReduceOp op;
    std::vector<int32_t> axes;
  };
  const std::vector<Case> cases = {
      {"axis 3 of a 3-D array", v1::REDUCE_OP_SUM, {3}},
      {"axis -4 of a 3-D array", v1::REDUCE_OP_MAX, {-4}},
      {"axis 0 repeated", v1::REDUCE_OP_SUM, {0, 0}},
      {"axis 2 repeated as -1", v1::REDUCE_OP_MEAN, {2, -1}},
      {"argmax over two axes of three", v1::REDUCE_OP_ARGMAX, {0, 1}},
      {"argmin over two axes of three", v1::REDUCE_OP_ARGMIN, {-1, 0}},
  };
  for (const Case& c : cases) {
    // The model agrees.
    EXPECT_EQ(ReferenceReduce(c.op, values, c.axes, false).code, kInvalid) << c.name;
    EXPECT_TRUE(StatusIs(Reduce(a, c.op, c.axes).status(), kInvalid, {"ax"})) << c.name;
  }
  auto call = [&](v1::ReduceRequest request) { return client().Reduce(request).status(); };
  v1::ReduceRequest scalar;
  scalar.mutable_spec()->set_op(v1::REDUCE_OP_SUM);
  *scalar.mutable_spec()->mutable_operand()->mutable_scalar() = MakeScalar(1.5);
  EXPECT_TRUE(StatusIs(call(scalar), kInvalid, {"operand"}));
  v1::ReduceRequest unset;
  unset.mutable_spec()->set_op(v1::REDUCE_OP_SUM);
  EXPECT_TRUE(StatusIs(call(unset), kInvalid, {"operand"}));
  v1::ReduceRequest unknown;
  unknown.mutable_spec()->set_op(v1::REDUCE_OP_SUM);
  unknown.mutable_spec()->mutable_operand()->set_handle("arr-00000000deadbeef");
  EXPECT_TRUE(StatusIs(call(unknown), absl::StatusCode::kNotFound));
  for (int op : {0, 99}) {
    v1::ReduceRequest bad_op;
    bad_op.mutable_spec()->set_op(static_cast<v1::ReduceOp>(op));
    *bad_op.mutable_spec()->mutable_operand() = a.AsOperand();
    EXPECT_TRUE(StatusIs(call(bad_op), kInvalid, {"op"})) << op;
  }
  // A zero-size axis: max, min and the arg reductions have no identity (zero_size_test.cc has
  // the rest of the zero-size reductions).
  ASSERT_OK_AND_ASSIGN(Array empty, client().Create({3, 0}, v1::DTYPE_FLOAT64, ArrayOpts({})));
  for (v1::ReduceOp op : {v1::REDUCE_OP_MAX, v1::REDUCE_OP_MIN, v1::REDUCE_OP_ARGMAX}) {
    EXPECT_TRUE(StatusIs(Reduce(empty, op, {1}).status(), kInvalid, {"axes"})) << ReduceName(op);
    EXPECT_TRUE(StatusIs(Reduce(empty, op).status(), kInvalid, {"axes"})) << ReduceName(op);
  }
  ASSERT_OK_AND_ASSIGN(Array zeros, Reduce(empty, v1::REDUCE_OP_SUM, {1}));
  EXPECT_EQ(zeros.Download<double>().value(), (std::vector<double>{0, 0, 0}));
  // The operand is intact.
  ASSERT_OK_AND_ASSIGN(HostArray after, DownloadHost(a));
  EXPECT_TRUE(ValuesMatch(after, values, 0));
}

DISTARRAY_INSTANTIATE_BACKENDS(ReduceTest);

}  // namespace
}  // namespace distarray::testing
