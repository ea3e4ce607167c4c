// Matmul (floats, complex, integers and bool) against a long-double host reference, over the
// layouts the block planner has to handle: one device, row-split times replicated, replicated times
// column-split, block grids splitting the shared axis (a SUM-mode result), k blocks on different
// devices (the daemon moves them), random layouts with gaps, op-mode operands and a requested
// result layout; stacks with broadcast batch axes and NumPy's vectors; and the errors.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <optional>
#include <random>

#include "tests/support/backend_fixture.h"
#include "tests/support/compute_reference.h"
#include "tests/support/reference.h"

namespace distarray::testing {
namespace {

struct MatmulReference {
  HostArray c;
  std::vector<long double> abs_tol;
};

// a @ b in long double, batch axes broadcast as NumPy's. Element (..., i, j) may differ from the
// exact value by (k + 4) * unit * sum_k |a_ik b_kj| (unit: the roundoff of the dtype, or of TF32
// when allowed). Integer dtypes are exact, wrapping modulo 2^bits as NumPy's; bool is OR of ANDs.
MatmulReference ReferenceMatmul(const HostArray& a, const HostArray& b, bool tf32 = false);

// NumPy's vectors: a 1-D a is a 1-row matrix, a 1-D b a 1-column one, the added axes dropped
// from the result.
MatmulReference ReferenceMatmulOfVectors(HostArray a, HostArray b, bool tf32) {
  const bool a_vector = a.shape.size() == 1, b_vector = b.shape.size() == 1;
  if (a_vector) a.shape.insert(a.shape.begin(), 1);
  if (b_vector) b.shape.push_back(1);
  MatmulReference ref = ReferenceMatmul(a, b, tf32);
  Shape& shape = ref.c.shape;
  if (b_vector) shape.erase(shape.end() - 1);
  if (a_vector) shape.erase(shape.end() - (b_vector ? 1 : 2));
  return ref;
}

MatmulReference ReferenceMatmul(const HostArray& a, const HostArray& b, bool tf32) {
  if (a.shape.size() < 2 || b.shape.size() < 2) return ReferenceMatmulOfVectors(a, b, tf32);
  const size_t rank_a = a.shape.size(), rank_b = b.shape.size();
  const size_t batch_rank = std::max(rank_a, rank_b) - 2;
  const int64_t m = a.shape[rank_a - 2], k = a.shape[rank_a - 1], n = b.shape[rank_b - 1];
  // Per result batch axis, the extent and how far a's and b's matrices move per step of it.
  Shape shape(batch_rank, 1);
  std::vector<int64_t> a_step(batch_rank, 0), b_step(batch_rank, 0);
  for (const auto& [array, step] : {std::pair{&a, &a_step}, std::pair{&b, &b_step}}) {
    const size_t own = array->shape.size() - 2;
    int64_t stride = array->shape[own] * array->shape[own + 1];
    for (size_t axis = own; axis-- > 0;) {
      const size_t t = axis + batch_rank - own;
      shape[t] = std::max(shape[t], array->shape[axis]);
      if (array->shape[axis] > 1) (*step)[t] = stride;
      stride *= array->shape[axis];
    }
  }
  int64_t entries = 1;
  for (int64_t e : shape) entries *= e;
  shape.push_back(m);
  shape.push_back(n);
  const long double unit =
      tf32 ? std::ldexp(1.0L, -10) : (a.dtype == v1::DTYPE_FLOAT32 ? FLT_EPSILON : DBL_EPSILON);
  MatmulReference ref{HostArray{a.dtype, shape, {}}, {}};
  const bool integer = !IsFloatDType(a.dtype);
  for (int64_t entry = 0; entry < entries; ++entry) {
    int64_t a_base = 0, b_base = 0;
    int64_t rest = entry;
    for (size_t t = batch_rank; t-- > 0;) {
      const int64_t index = rest % shape[t];
      rest /= shape[t];
      a_base += index * a_step[t];
      b_base += index * b_step[t];
    }
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        long double sum = 0, magnitude = 0;
        UInt128 wrapped = 0;  // integers: NumPy's sum modulo 2^bits (bool: non-zero is true)
        for (int64_t p = 0; p < k; ++p) {
          const long double x = a.values[a_base + i * k + p], y = b.values[b_base + p * n + j];
          if (integer) {
            wrapped += BitsOf(x) * BitsOf(y);
          } else {
            sum += x * y;
            magnitude += std::fabs(x * y);
          }
        }
        if (integer) {
          ref.c.values.push_back(a.dtype == v1::DTYPE_BOOL ? (wrapped != 0 ? 1 : 0)
                                                           : WrapInt(a.dtype, wrapped));
          ref.abs_tol.push_back(0);
        } else {
          ref.c.values.push_back(sum);
          ref.abs_tol.push_back((k + 4) * unit * magnitude);
        }
      }
    }
  }
  return ref;
}

std::string Describe(const HostArray& a, const v1::IndexMap& a_map, const HostArray& b,
                     const v1::IndexMap& b_map) {
  return absl::StrCat(Describe(a), " in ", a_map.ShortDebugString(), " @ ", Describe(b), " in ",
                      b_map.ShortDebugString());
}

class MatmulTest : public BackendTest {
 protected:
  std::vector<int> AllDevices() const { return {dev(0), dev(1), dev(2), dev(3)}; }

  // Uploads a (m x k) and b (k x n) of `dtype` in the given layouts and modes, runs a @ b (with
  // `result_index_map` when given) and checks the result's dtype, shape, mode (`modes`: the
  // acceptable ones; empty: any) and values against the reference on the operands' logical
  // values. The result goes to `result_out` when given.
  void Run(v1::DType dtype, int64_t m, int64_t k, int64_t n, const v1::IndexMap& a_map,
           const v1::IndexMap& b_map, std::vector<v1::Mode> modes,
           std::optional<v1::IndexMap> result_index_map = std::nullopt,
           v1::Mode a_mode = v1::MODE_REPLICA, v1::Mode b_mode = v1::MODE_REPLICA,
           bool tf32 = false, std::optional<Array>* result_out = nullptr) {
    RunShapes(dtype, {m, k}, {k, n}, a_map, b_map, std::move(modes), std::move(result_index_map),
              a_mode, b_mode, tf32, result_out);
  }

  // The same for operands of any shapes (batched: the axes before the last two broadcast).
  void RunShapes(v1::DType dtype, const Shape& a_shape, const Shape& b_shape,
                 const v1::IndexMap& a_map, const v1::IndexMap& b_map, std::vector<v1::Mode> modes,
                 std::optional<v1::IndexMap> result_index_map = std::nullopt,
                 v1::Mode a_mode = v1::MODE_REPLICA, v1::Mode b_mode = v1::MODE_REPLICA,
                 bool tf32 = false, std::optional<Array>* result_out = nullptr) {
    const HostArray a = RandomHost(dtype, a_shape, rng_, {.float_lo = -1, .float_hi = 1});
    const HostArray b = RandomHost(dtype, b_shape, rng_, {.float_lo = -1, .float_hi = 1});
    const std::string what = Describe(a, a_map, b, b_map);
    ASSERT_OK_AND_ASSIGN(Array A, UploadHost(client(), a, a_map, a_mode));
    ASSERT_OK_AND_ASSIGN(Array B, UploadHost(client(), b, b_map, b_mode));
    const HostArray a_logical = Logical(a, FromProto(A.info().index_map(), a.shape), a_mode);
    const HostArray b_logical = Logical(b, FromProto(B.info().index_map(), b.shape), b_mode);
    v1::MatmulRequest request;
    *request.mutable_spec()->mutable_a() = A.AsOperand();
    *request.mutable_spec()->mutable_b() = B.AsOperand();
    request.mutable_spec()->set_allow_tf32(tf32);
    if (result_index_map) *request.mutable_spec()->mutable_result_index_map() = *result_index_map;
    absl::StatusOr<Array> C = result_index_map || tf32 ? client().Matmul(request) : Matmul(A, B);
    ASSERT_TRUE(C.ok()) << what << ": " << C.status();
    EXPECT_EQ(C->info().dtype(), dtype) << what;
    const MatmulReference ref = ReferenceMatmul(a_logical, b_logical, tf32);
    EXPECT_EQ(C->shape(), ref.c.shape) << what;
    if (!modes.empty()) {
      EXPECT_TRUE(std::find(modes.begin(), modes.end(), C->info().mode()) != modes.end())
          << what << ": mode " << v1::Mode_Name(C->info().mode());
    }
    if (result_index_map) {
      ASSERT_OK_AND_ASSIGN(v1::IndexMap normalized,
                           NormalizedIndexMap(client(), ref.c.shape, *result_index_map));
      EXPECT_TRUE(SameIndexMap(C->info().index_map(), normalized))
          << C->info().index_map().ShortDebugString() << " vs " << normalized.ShortDebugString();
    }
    HostArray want = ref.c;
    if (result_index_map) {  // elements outside a requested layout read as 0
      const std::vector<bool> covered = Covered(C->info().index_map(), want.shape);
      for (size_t i = 0; i < covered.size(); ++i) {
        if (!covered[i]) want.values[i] = 0;
      }
    }
    ASSERT_OK_AND_ASSIGN(HostArray got, DownloadHost(*C));
    EXPECT_TRUE(ValuesMatch(got, want, 0, &ref.abs_tol)) << what;
    // Combining a SUM-mode result with change_mode gives the same values.
    if (C->info().mode() != v1::MODE_REPLICA) {
      ASSERT_OK_AND_ASSIGN(Array replica, C->ChangeMode(v1::MODE_REPLICA));
      ASSERT_OK_AND_ASSIGN(HostArray combined, DownloadHost(replica));
      EXPECT_TRUE(ValuesMatch(combined, want, 0, &ref.abs_tol)) << what << " after change_mode";
    }
    if (result_out != nullptr) result_out->emplace(*std::move(C));
  }

  // SUM where the shared axis is split over several devices; on one device a daemon may as well
  // multiply whole (REPLICA).
  std::vector<v1::Mode> SplitK() const {
    if (devices() == 1) return {v1::MODE_SUM, v1::MODE_REPLICA};
    return {v1::MODE_SUM};
  }

  std::mt19937_64 rng_{301};
};

const v1::DType kFloatDTypes[] = {v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT64};

TEST_P(MatmulTest, BothOnOneDevice) {
  for (v1::DType dtype : kFloatDTypes) {
    Run(dtype, 37, 53, 29, OnDevice(2, dev(1)), OnDevice(2, dev(1)), {v1::MODE_REPLICA});
    Run(dtype, 37, 53, 29, OnDevice(2, dev(0)), OnDevice(2, dev(3)), {v1::MODE_REPLICA});
    // Degenerate extents: a row times a column, an outer product (k = 1).
    Run(dtype, 1, 53, 1, OnDevice(2, dev(2)), OnDevice(2, dev(2)), {v1::MODE_REPLICA});
    Run(dtype, 5, 1, 7, OnDevice(2, dev(0)), OnDevice(2, dev(1)), {v1::MODE_REPLICA});
  }
}

TEST_P(MatmulTest, RowSplitTimesReplicated) {
  for (v1::DType dtype : kFloatDTypes) {
    Run(dtype, 37, 53, 29, Split(2, 0, 37, AllDevices()), Replicated(2, AllDevices()),
        {v1::MODE_REPLICA});
    Run(dtype, 37, 53, 29, Split(2, 0, 37, {dev(1), dev(2), dev(3)}),
        Replicated(2, {dev(1), dev(2), dev(3)}), {v1::MODE_REPLICA});
  }
}

TEST_P(MatmulTest, ReplicatedTimesColumnSplit) {
  for (v1::DType dtype : kFloatDTypes) {
    Run(dtype, 37, 53, 29, Replicated(2, AllDevices()), Split(2, 1, 29, AllDevices()),
        {v1::MODE_REPLICA});
    // B's column blocks on devices A is not replicated to.
    Run(dtype, 37, 53, 29, Replicated(2, {dev(0), dev(1)}), Split(2, 1, 29, {dev(2), dev(3)}),
        {v1::MODE_REPLICA});
  }
}

TEST_P(MatmulTest, BlockGridsSplitTheSharedAxisIntoASumResult) {
  for (v1::DType dtype : kFloatDTypes) {
    Run(dtype, 37, 53, 29, BlockGrid2D(37, 53, 2, 2, AllDevices()),
        BlockGrid2D(53, 29, 2, 2, AllDevices()), SplitK());
    // Transposed device assignment for B: its k blocks sit where A's are not.
    Run(dtype, 37, 53, 29, BlockGrid2D(37, 53, 2, 2, AllDevices()),
        BlockGrid2D(53, 29, 2, 2, {dev(3), dev(2), dev(1), dev(0)}), SplitK());
  }
}

TEST_P(MatmulTest, KBlocksOnDifferentDevicesAreMoved) {
  for (v1::DType dtype : kFloatDTypes) {
    // A's k blocks on devices 0 and 1, B's on 2 and 3.
    Run(dtype, 37, 53, 29, Split(2, 1, 53, {dev(0), dev(1)}), Split(2, 0, 53, {dev(2), dev(3)}),
        SplitK());
    // k split at different points on the two sides (3 blocks against 2).
    Run(dtype, 37, 53, 29, Split(2, 1, 53, {dev(0), dev(1), dev(2)}),
        Split(2, 0, 53, {dev(3), dev(1)}), SplitK());
    // Only A's k is split; B whole on another device.
    Run(dtype, 37, 53, 29, Split(2, 1, 53, {dev(1), dev(2)}), OnDevice(2, dev(3)), {});
  }
}

TEST_P(MatmulTest, ResultIndexMapIsHonoured) {
  for (v1::DType dtype : kFloatDTypes) {
    Run(dtype, 37, 53, 29, BlockGrid2D(37, 53, 2, 2, AllDevices()),
        BlockGrid2D(53, 29, 2, 2, AllDevices()), {v1::MODE_REPLICA},
        BlockGrid2D(37, 29, 3, 2, AllDevices()));
    Run(dtype, 37, 53, 29, Split(2, 0, 37, AllDevices()), Replicated(2, AllDevices()),
        {v1::MODE_REPLICA}, Split(2, 1, 29, {dev(2), dev(0)}));
    // A raw random layout (reversed and from-the-end slices, overlaps, maybe gaps).
    const v1::IndexMap random = ToProto(RandomMap({37, 29}, devices(), rng_), {37, 29});
    Run(dtype, 37, 53, 29, OnDevice(2, dev(0)), Split(2, 1, 29, AllDevices()), {v1::MODE_REPLICA},
        random);
  }
}

TEST_P(MatmulTest, RandomLayoutsWithOverlapsAndGaps) {
  for (int trial = 0; trial < 6; ++trial) {
    const v1::DType dtype = kFloatDTypes[trial % 2];
    const int64_t m = 5 + rng_() % 30, k = 3 + rng_() % 30, n = 4 + rng_() % 20;
    // Uncovered elements of a REPLICA operand read as 0.
    const v1::IndexMap a_map = ToProto(RandomMap({m, k}, devices(), rng_), {m, k});
    const v1::IndexMap b_map = ToProto(RandomMap({k, n}, devices(), rng_), {k, n});
    Run(dtype, m, k, n, a_map, b_map, {v1::MODE_REPLICA, v1::MODE_SUM});
  }
}

TEST_P(MatmulTest, OperandsInOpModesUseTheirLogicalValues) {
  for (v1::DType dtype : kFloatDTypes) {
    // A: SUM over two full copies (each value stored once). B: PROD with a gap (reads as 1).
    const v1::IndexMap b_map =
        MakeIndexMap({MakeChunk(dev(2), {SliceSpec{0, 20, std::nullopt}, SliceSpec{}}),
                      MakeChunk(dev(3), {SliceSpec{30, 53, std::nullopt}, SliceSpec{}})});
    Run(dtype, 37, 53, 29, Replicated(2, {dev(0), dev(1)}), b_map, {}, std::nullopt, v1::MODE_SUM,
        v1::MODE_PROD);
    Run(dtype, 37, 53, 29, Split(2, 1, 53, AllDevices()), Replicated(2, {dev(1), dev(3)}), {},
        std::nullopt, v1::MODE_MIN, v1::MODE_SUM);
  }
}

TEST_P(MatmulTest, AllowTf32StaysWithinTf32Precision) {
  Run(v1::DTYPE_FLOAT32, 37, 53, 29, BlockGrid2D(37, 53, 2, 2, AllDevices()),
      BlockGrid2D(53, 29, 2, 2, AllDevices()), SplitK(), std::nullopt, v1::MODE_REPLICA,
      v1::MODE_REPLICA, /*tf32=*/true);
}

TEST_P(MatmulTest, BatchedStacksOnOneDevice) {
  for (v1::DType dtype : kFloatDTypes) {
    RunShapes(dtype, {3, 4, 5}, {3, 5, 2}, OnDevice(3, dev(1)), OnDevice(3, dev(1)),
              {v1::MODE_REPLICA});
    // Operands on different devices: the smaller stack moves.
    RunShapes(dtype, {2, 2, 9, 7}, {2, 2, 7, 6}, OnDevice(4, dev(0)), OnDevice(4, dev(3)),
              {v1::MODE_REPLICA});
  }
}

TEST_P(MatmulTest, BatchSplitTimesReplicatedMatrixMovesNothing) {
  for (v1::DType dtype : kFloatDTypes) {
    // One strided batched GEMM per device, the matrix reused for every entry (stride 0).
    RunShapes(dtype, {9, 7, 5}, {5, 3}, Split(3, 0, 9, AllDevices()), Replicated(2, AllDevices()),
              {v1::MODE_REPLICA});
    // And the other way round: a matrix times a stack split along its batch axis.
    RunShapes(dtype, {6, 5}, {4, 5, 3}, Replicated(2, AllDevices()), Split(3, 0, 4, AllDevices()),
              {v1::MODE_REPLICA});
  }
}

TEST_P(MatmulTest, BatchAxesBroadcastAsNumPys) {
  for (v1::DType dtype : kFloatDTypes) {
    // (2, 1) against (5,): a broadcast along one long axis and not the other.
    RunShapes(dtype, {2, 1, 4, 3}, {5, 3, 6}, OnDevice(4, dev(0)), OnDevice(3, dev(1)),
              {v1::MODE_REPLICA});
    // (1, 3) against (4, 1), both split.
    RunShapes(dtype, {1, 3, 5, 2}, {4, 1, 2, 3}, Split(4, 1, 3, AllDevices()),
              Split(4, 0, 4, {dev(2), dev(3)}), {v1::MODE_REPLICA});
  }
}

TEST_P(MatmulTest, BatchedSharedAxisSplitGivesASumResult) {
  for (v1::DType dtype : kFloatDTypes) {
    RunShapes(dtype, {4, 6, 8}, {4, 8, 3}, Split(3, 2, 8, {dev(0), dev(1)}),
              Split(3, 1, 8, {dev(0), dev(1)}), SplitK());
    // Batch split one way, k the other.
    RunShapes(dtype, {4, 6, 8}, {8, 3}, Split(3, 0, 4, {dev(2), dev(3)}),
              Split(2, 0, 8, {dev(0), dev(1)}), {});
  }
}

TEST_P(MatmulTest, BatchedRandomLayoutsModesAndResultMaps) {
  for (int trial = 0; trial < 6; ++trial) {
    const v1::DType dtype = kFloatDTypes[trial % 2];
    const int64_t batch = 1 + rng_() % 5, m = 2 + rng_() % 9, k = 2 + rng_() % 9,
                  n = 2 + rng_() % 9;
    const Shape a_shape{batch, m, k};
    const Shape b_shape = trial % 3 == 0 ? Shape{k, n} : Shape{batch, k, n};
    const v1::IndexMap a_map = ToProto(RandomMap(a_shape, devices(), rng_), a_shape);
    const v1::IndexMap b_map = ToProto(RandomMap(b_shape, devices(), rng_), b_shape);
    const v1::Mode a_mode = trial % 2 == 0 ? v1::MODE_REPLICA : v1::MODE_SUM;
    std::optional<v1::IndexMap> result_map;
    if (trial >= 4) result_map = Split(3, 1, m, AllDevices());
    RunShapes(dtype, a_shape, b_shape, a_map, b_map, {}, result_map, a_mode);
  }
}

TEST_P(MatmulTest, VectorsAreNumPysOneRowAndOneColumnMatrices) {
  for (v1::DType dtype : kFloatDTypes) {
    // vector @ matrix, matrix @ vector, vector @ vector (0-d), a stack @ vector.
    RunShapes(dtype, {53}, {53, 29}, OnDevice(1, dev(1)), Split(2, 1, 29, AllDevices()),
              {v1::MODE_REPLICA});
    RunShapes(dtype, {37, 53}, {53}, Split(2, 0, 37, AllDevices()), Replicated(1, AllDevices()),
              {v1::MODE_REPLICA});
    RunShapes(dtype, {53}, {53}, OnDevice(1, dev(2)), OnDevice(1, dev(2)), {v1::MODE_REPLICA});
    RunShapes(dtype, {4, 6, 5}, {5}, Split(3, 0, 4, AllDevices()), Replicated(1, AllDevices()),
              {v1::MODE_REPLICA});
    // Both split along the shared axis: a 0-d SUM-mode result of partial dot products.
    RunShapes(dtype, {53}, {53}, Split(1, 0, 53, AllDevices()), Split(1, 0, 53, AllDevices()),
              SplitK());
    // An op-mode vector (gathered first).
    RunShapes(dtype, {53}, {53, 29}, Replicated(1, {dev(0), dev(1)}), OnDevice(2, dev(3)), {},
              std::nullopt, v1::MODE_SUM);
  }
}

// Integers wrap modulo 2^bits as NumPy's (full-range values, so the products overflow) and bool
// is OR of ANDs, through the daemon's own kernel: one device, the shared axis split into a SUM
// result (whose partials combine by wrapping addition, or OR), stacks and vectors.
TEST_P(MatmulTest, IntegersWrapAndBoolIsOrOfAnds) {
  const v1::DType kDTypes[] = {v1::DTYPE_BOOL,   v1::DTYPE_INT8,   v1::DTYPE_INT16,
                               v1::DTYPE_INT32,  v1::DTYPE_INT64,  v1::DTYPE_UINT8,
                               v1::DTYPE_UINT16, v1::DTYPE_UINT32, v1::DTYPE_UINT64};
  for (v1::DType dtype : kDTypes) {
    Run(dtype, 37, 53, 29, OnDevice(2, dev(1)), OnDevice(2, dev(1)), {v1::MODE_REPLICA});
    Run(dtype, 37, 53, 29, BlockGrid2D(37, 53, 2, 2, AllDevices()),
        BlockGrid2D(53, 29, 2, 2, {dev(3), dev(2), dev(1), dev(0)}), SplitK());
    Run(dtype, 5, 0, 7, OnDevice(2, dev(0)), OnDevice(2, dev(1)), {});  // k = 0: zeros
  }
  for (v1::DType dtype : {v1::DTYPE_INT64, v1::DTYPE_UINT8, v1::DTYPE_BOOL}) {
    RunShapes(dtype, {3, 1, 17, 20}, {4, 20, 9}, Split(4, 0, 3, AllDevices()), OnDevice(3, dev(2)),
              {v1::MODE_REPLICA});
    RunShapes(dtype, {20}, {6, 20, 9}, Split(1, 0, 20, AllDevices()), Replicated(3, AllDevices()),
              {});
    const v1::IndexMap a_map = ToProto(RandomMap({19, 23}, devices(), rng_), {19, 23});
    const v1::IndexMap b_map = ToProto(RandomMap({23, 11}, devices(), rng_), {23, 11});
    Run(dtype, 19, 23, 11, a_map, b_map, {v1::MODE_REPLICA, v1::MODE_SUM});
  }
}

// a_symmetric: where a is whole on one device the product reads its upper triangle (column >=
// row), mirrored: checked with an a that is NOT symmetric, so a read of the lower triangle shows.
// b as a vector, one column (symv) and three columns (symm). Split over devices the hint does not
// apply (a row block is no symmetric matrix): the plain product. For a symmetric a both agree.
TEST_P(MatmulTest, ASymmetricReadsTheUpperTriangleWhereAIsWhole) {
  constexpr int64_t n = 67;
  for (v1::DType dtype : kFloatDTypes) {
    SCOPED_TRACE(v1::DType_Name(dtype));
    const HostArray a = RandomHost(dtype, {n, n}, rng_, {.float_lo = -1, .float_hi = 1});
    HostArray upper = a, symmetric = a;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < i; ++j) {
        upper.values[i * n + j] = a.values[j * n + i];
        // Summed in a's dtype, as the upload stores it (exactly representable: |a| <= 1).
        symmetric.values[i * n + j] = symmetric.values[j * n + i] = a.values[i * n + j];
      }
    }
    for (const Shape& b_shape : {Shape{n}, Shape{n, 1}, Shape{n, 3}}) {
      SCOPED_TRACE(ShapeStr(b_shape));
      const HostArray b = RandomHost(dtype, b_shape, rng_, {.float_lo = -1, .float_hi = 1});
      const int b_rank = static_cast<int>(b_shape.size());
      ASSERT_OK_AND_ASSIGN(Array B, UploadHost(client(), b, OnDevice(b_rank, dev(1))));
      auto product = [&](const HostArray& host_a, const v1::IndexMap& map) {
        absl::StatusOr<Array> A = UploadHost(client(), host_a, map);
        if (!A.ok()) return absl::StatusOr<Array>(A.status());
        v1::MatmulRequest request;
        *request.mutable_spec()->mutable_a() = A->AsOperand();
        *request.mutable_spec()->mutable_b() = B.AsOperand();
        request.mutable_spec()->set_a_symmetric(true);
        return client().Matmul(request);
      };
      auto expect = [&](const absl::StatusOr<Array>& got, const HostArray& reference_a,
                        const std::string& what) {
        ASSERT_TRUE(got.ok()) << what << ": " << got.status();
        const MatmulReference ref = ReferenceMatmul(reference_a, b);
        ASSERT_OK_AND_ASSIGN(HostArray values, DownloadHost(*got));
        EXPECT_EQ(values.shape, ref.c.shape) << what;
        EXPECT_TRUE(ValuesMatch(values, ref.c, 0, &ref.abs_tol)) << what;
      };
      expect(product(a, OnDevice(2, dev(1))), upper, "whole on one device: the upper triangle");
      expect(product(a, OnDevice(2, dev(2))), upper, "a on another device than b");
      const v1::IndexMap rows = Split(2, 0, n, {dev(0), dev(1)});
      // (One device holds both row blocks where there is one device: one product, the hint.)
      if (devices() > 1) expect(product(a, rows), a, "rows over two devices: the plain product");
      expect(product(symmetric, OnDevice(2, dev(1))), symmetric, "a symmetric a, whole");
      expect(product(symmetric, rows), symmetric, "a symmetric a, rows split");
    }
  }
  // Refusals, naming the field: a non-square a, another dtype, a sparse a.
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  auto refused = [&](v1::DType dtype, const Shape& a_shape, const Shape& b_shape) {
    absl::StatusOr<Array> A = UploadHost(client(), RandomHost(dtype, a_shape, rng_),
                                         OnDevice(static_cast<int>(a_shape.size()), dev(0)));
    absl::StatusOr<Array> B = UploadHost(client(), RandomHost(dtype, b_shape, rng_),
                                         OnDevice(static_cast<int>(b_shape.size()), dev(0)));
    EXPECT_TRUE(A.ok() && B.ok());
    v1::MatmulRequest request;
    *request.mutable_spec()->mutable_a() = A->AsOperand();
    *request.mutable_spec()->mutable_b() = B->AsOperand();
    request.mutable_spec()->set_a_symmetric(true);
    return client().Matmul(request).status();
  };
  EXPECT_TRUE(StatusIs(refused(v1::DTYPE_FLOAT64, {5, 6}, {6, 2}), kInvalid,
                       {"a_symmetric", "(5, 6)", "square"}));
  EXPECT_TRUE(
      StatusIs(refused(v1::DTYPE_FLOAT64, {2, 5, 5}, {5, 2}), kInvalid, {"a_symmetric", "square"}));
  EXPECT_TRUE(StatusIs(refused(v1::DTYPE_INT32, {5, 5}, {5, 2}), kInvalid,
                       {"a_symmetric", "float32 and float64"}));
  EXPECT_TRUE(StatusIs(refused(v1::DTYPE_FLOAT16, {5, 5}, {5, 2}), kInvalid, {"a_symmetric"}));
  v1::MatmulRequest sparse;
  sparse.mutable_spec()->mutable_sparse_a()->mutable_shape()->add_dims(5);
  sparse.mutable_spec()->set_a_symmetric(true);
  EXPECT_TRUE(StatusIs(client().Matmul(sparse).status(), kInvalid, {"a_symmetric", "sparse_a"}));
}

TEST_P(MatmulTest, ErrorsHaveExactCodes) {
  std::mt19937_64 rng(302);
  auto make = [&](v1::DType dtype, const Shape& shape) {
    return UploadHost(client(), RandomHost(dtype, shape, rng),
                      Replicated(static_cast<int>(shape.size()), {dev(0), dev(1)}));
  };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  ASSERT_OK_AND_ASSIGN(Array a, make(v1::DTYPE_FLOAT64, {37, 53}));
  ASSERT_OK_AND_ASSIGN(Array b_wrong, make(v1::DTYPE_FLOAT64, {52, 29}));
  absl::StatusOr<Array> r = Matmul(a, b_wrong);
  EXPECT_TRUE(StatusIs(r.status(), kInvalid));
  EXPECT_TRUE(MentionsShape(r.status().message(), {37, 53}) &&
              MentionsShape(r.status().message(), {52, 29}))
      << r.status();

  // A vector whose length is not the shared axis: named by the shapes as given.
  ASSERT_OK_AND_ASSIGN(Array v, make(v1::DTYPE_FLOAT64, {29}));
  ASSERT_OK_AND_ASSIGN(Array b, make(v1::DTYPE_FLOAT64, {53, 29}));
  r = Matmul(v, b);
  EXPECT_TRUE(StatusIs(r.status(), kInvalid, {"aligned"})) << "1-D @ 2-D";
  EXPECT_TRUE(MentionsShape(r.status().message(), {29}) &&
              MentionsShape(r.status().message(), {53, 29}))
      << r.status();
  r = Matmul(a, v);
  EXPECT_TRUE(StatusIs(r.status(), kInvalid, {"aligned"})) << "2-D @ 1-D";
  EXPECT_TRUE(MentionsShape(r.status().message(), {29})) << r.status();
  // 0-d operands.
  const std::vector<double> two = {2.0};
  ASSERT_OK_AND_ASSIGN(Array s0, client().Upload<double>(two, {}, {OnDevice(0, dev(0))}));
  EXPECT_TRUE(StatusIs(Matmul(s0, b).status(), kInvalid, {"0-d"}));
  // Batch axes that do not broadcast, and stacks whose inner dimensions differ.
  ASSERT_OK_AND_ASSIGN(Array t1, make(v1::DTYPE_FLOAT64, {2, 3, 4}));
  ASSERT_OK_AND_ASSIGN(Array t2, make(v1::DTYPE_FLOAT64, {3, 4, 5}));
  r = Matmul(t1, t2);
  EXPECT_TRUE(StatusIs(r.status(), kInvalid, {"broadcast"})) << r.status();
  EXPECT_TRUE(MentionsShape(r.status().message(), {2, 3, 4}) &&
              MentionsShape(r.status().message(), {3, 4, 5}))
      << r.status();
  ASSERT_OK_AND_ASSIGN(Array t3, make(v1::DTYPE_FLOAT64, {2, 5, 4}));
  r = Matmul(t1, t3);
  EXPECT_TRUE(StatusIs(r.status(), kInvalid, {"aligned"})) << r.status();

  // Mixed float dtypes.
  ASSERT_OK_AND_ASSIGN(Array b32, make(v1::DTYPE_FLOAT32, {53, 29}));
  EXPECT_TRUE(StatusIs(Matmul(a, b32).status(), kInvalid, {"dtype"}));
  // Integer operands of two dtypes (the SDKs promote; the daemon takes one dtype).
  ASSERT_OK_AND_ASSIGN(Array i32, make(v1::DTYPE_INT32, {4, 5}));
  ASSERT_OK_AND_ASSIGN(Array u8, make(v1::DTYPE_UINT8, {5, 3}));
  r = Matmul(i32, u8);
  EXPECT_TRUE(StatusIs(r.status(), kInvalid, {"int32", "uint8"})) << r.status();

  // Operands that are not arrays, unknown handles.
  auto call = [&](v1::MatmulRequest request) { return client().Matmul(request).status(); };
  v1::MatmulRequest scalar;
  *scalar.mutable_spec()->mutable_a() = a.AsOperand();
  *scalar.mutable_spec()->mutable_b()->mutable_scalar() = MakeScalar(2.0);
  EXPECT_TRUE(StatusIs(call(scalar), kInvalid));
  v1::MatmulRequest unset;
  *unset.mutable_spec()->mutable_b() = b.AsOperand();
  EXPECT_TRUE(StatusIs(call(unset), kInvalid));
  v1::MatmulRequest unknown;
  unknown.mutable_spec()->mutable_a()->set_handle("arr-00000000deadbeef");
  *unknown.mutable_spec()->mutable_b() = b.AsOperand();
  EXPECT_TRUE(StatusIs(call(unknown), absl::StatusCode::kNotFound));
  // A result layout of the wrong rank.
  v1::MatmulRequest bad_map;
  *bad_map.mutable_spec()->mutable_a() = a.AsOperand();
  *bad_map.mutable_spec()->mutable_b() = b.AsOperand();
  *bad_map.mutable_spec()->mutable_result_index_map() = OnDevice(1, dev(0));
  EXPECT_TRUE(StatusIs(call(bad_map), kInvalid, {"result_index_map"}));

  // The operands are intact and still multiply.
  ASSERT_OK_AND_ASSIGN(Array c, Matmul(a, b));
  EXPECT_EQ(c.shape(), (Shape{37, 29}));
}

DISTARRAY_INSTANTIATE_BACKENDS(MatmulTest);

}  // namespace
}  // namespace distarray::testing
