// Sparse matrices on every backend: CSR blocks built by the C++ SDK from COO triplets, their
// products with vectors and matrices (row-split and transposed, one device and split), their
// densification and transpose, a product inside a recorded loop, each against a host reference
// in long double on fresh random matrices (empty rows and columns included); and the errors: parts
// that do not fit their blocks, and index values that point outside them, which must neither crash
// the daemon nor touch another array.
#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "distarray/graph.h"
#include "distarray/index_maps.h"
#include "distarray/sparse.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/reference.h"
#include "tests/support/server_state.h"

namespace distarray::testing {
namespace {

// A random m x n matrix as COO triplets: about `density` of the entries, some positions listed
// twice (summed), in random order; rows and columns listed in `empty_rows`/`empty_cols` get none.
template <typename T>
struct Coo {
  int64_t m = 0, n = 0;
  std::vector<int64_t> rows, cols;
  std::vector<T> values;
  // The dense matrix in long double (complex: real and imaginary parts).
  std::vector<std::complex<long double>> Dense() const {
    std::vector<std::complex<long double>> dense(m * n);
    for (size_t i = 0; i < rows.size(); ++i) {
      dense[rows[i] * n + cols[i]] += std::complex<long double>(values[i]);
    }
    return dense;
  }
};

template <typename T>
T RandomValue(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(u(rng));
  } else {
    using R = typename T::value_type;
    return T(static_cast<R>(u(rng)), static_cast<R>(u(rng)));
  }
}

template <typename T>
Coo<T> RandomCoo(int64_t m, int64_t n, double density, std::mt19937_64& rng,
                 const std::vector<int64_t>& empty_rows = {},
                 const std::vector<int64_t>& empty_cols = {}) {
  Coo<T> coo{m, n, {}, {}, {}};
  std::bernoulli_distribution keep(density), twice(0.1);
  auto excluded = [](const std::vector<int64_t>& list, int64_t i) {
    return std::find(list.begin(), list.end(), i) != list.end();
  };
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      if (excluded(empty_rows, r) || excluded(empty_cols, c) || !keep(rng)) continue;
      for (int copies = twice(rng) ? 2 : 1; copies > 0; --copies) {
        coo.rows.push_back(r);
        coo.cols.push_back(c);
        coo.values.push_back(RandomValue<T>(rng));
      }
    }
  }
  std::vector<size_t> order(coo.rows.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  Coo<T> shuffled{m, n, {}, {}, {}};
  for (size_t i : order) {
    shuffled.rows.push_back(coo.rows[i]);
    shuffled.cols.push_back(coo.cols[i]);
    shuffled.values.push_back(coo.values[i]);
  }
  return shuffled;
}

template <typename T>
double Tolerance() {
  const bool single = std::is_same_v<T, float> || std::is_same_v<T, std::complex<float>>;
  return single ? 1e-5 : 1e-12;
}

// Expects got (rows x k, row-major) to equal dense (m x n) @ x (n x k) within T's tolerance,
// relative to the sum of the terms' magnitudes.
template <typename T>
void ExpectProduct(const std::vector<T>& got, const std::vector<std::complex<long double>>& dense,
                   int64_t m, int64_t n, const std::vector<T>& x, int64_t k,
                   const std::string& what) {
  ASSERT_EQ(static_cast<int64_t>(got.size()), m * k) << what;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < k; ++j) {
      std::complex<long double> want = 0;
      long double scale = 0;
      for (int64_t c = 0; c < n; ++c) {
        const std::complex<long double> term =
            dense[r * n + c] * std::complex<long double>(x[c * k + j]);
        want += term;
        scale += std::abs(term);
      }
      const long double error = std::abs(std::complex<long double>(got[r * k + j]) - want);
      EXPECT_LE(error, Tolerance<T>() * (scale + 1e-30L))
          << what << " at (" << r << ", " << j << "): got " << got[r * k + j] << ", want "
          << static_cast<double>(want.real()) << "+" << static_cast<double>(want.imag()) << "j";
    }
  }
}

class SparseTest : public BystanderTest {
 protected:
  std::vector<std::vector<int>> DeviceSets() const {
    std::vector<std::vector<int>> sets = {{0}};
    if (devices() > 1) sets.push_back({0, 1});
    if (devices() > 2) sets.push_back({2, 0, 1});
    return sets;
  }

  template <typename T>
  void CheckProducts(const Coo<T>& coo, std::mt19937_64& rng) {
    const auto dense = coo.Dense();
    for (const std::vector<int>& on : DeviceSets()) {
      const std::string what = absl::StrCat(coo.m, "x", coo.n, " over ", on.size(), " devices");
      ASSERT_OK_AND_ASSIGN(CsrMatrix a, CsrMatrix::FromCoo<T>(client(), coo.m, coo.n, coo.rows,
                                                              coo.cols, coo.values, on));
      // A @ x with x on one device, A @ X (3 columns) split by rows.
      const std::vector<T> x = RandomValuesOf<T>(coo.n, rng);
      ASSERT_OK_AND_ASSIGN(Array xa, client().Upload<T>(x, {coo.n}, {OnDevice(1, on.back())}));
      ASSERT_OK_AND_ASSIGN(Array y, SparseMatmul(a, xa));
      EXPECT_EQ(y.info().mode(), v1::MODE_REPLICA) << what;
      ExpectProduct<T>(*y.template Download<T>(), dense, coo.m, coo.n, x, 1, what + " A @ x");
      const std::vector<T> xs = RandomValuesOf<T>(coo.n * 3, rng);
      ASSERT_OK_AND_ASSIGN(Array xsa, client().Upload<T>(xs, {coo.n, 3}, {Split(2, 0, coo.n, on)}));
      ASSERT_OK_AND_ASSIGN(Array ys, SparseMatmul(a, xsa));
      ExpectProduct<T>(*ys.template Download<T>(), dense, coo.m, coo.n, xs, 3, what + " A @ X");
      // A.T @ v: one partial product per block, summed on download.
      ASSERT_OK_AND_ASSIGN(CsrMatrix t, a.Transpose());
      EXPECT_EQ(t.shape(), (std::vector<int64_t>{coo.n, coo.m}));
      EXPECT_EQ(t.nnz(), a.nnz());
      std::vector<std::complex<long double>> dense_t(coo.n * coo.m);
      for (int64_t r = 0; r < coo.m; ++r) {
        for (int64_t c = 0; c < coo.n; ++c) dense_t[c * coo.m + r] = dense[r * coo.n + c];
      }
      const std::vector<T> v = RandomValuesOf<T>(coo.m, rng);
      ASSERT_OK_AND_ASSIGN(Array va, client().Upload<T>(v, {coo.m}, {Split(1, 0, coo.m, on)}));
      ASSERT_OK_AND_ASSIGN(Array z, SparseMatmul(t, va));
      if (t.blocks().chunks_size() > 1) EXPECT_EQ(z.info().mode(), v1::MODE_SUM) << what;
      ExpectProduct<T>(*z.template Download<T>(), dense_t, coo.n, coo.m, v, 1, what + " A.T @ v");
      // The dense matrix, and the transpose's.
      ASSERT_OK_AND_ASSIGN(Array d, a.ToDense());
      const std::vector<T> got = *d.template Download<T>();
      ASSERT_EQ(static_cast<int64_t>(got.size()), coo.m * coo.n);
      for (int64_t i = 0; i < coo.m * coo.n; ++i) {
        EXPECT_LE(std::abs(std::complex<long double>(got[i]) - dense[i]), Tolerance<T>() * 4)
            << what << " to_dense at " << i;
      }
      ASSERT_OK_AND_ASSIGN(Array dt, t.ToDense());
      const std::vector<T> got_t = *dt.template Download<T>();
      for (int64_t i = 0; i < coo.m * coo.n; ++i) {
        EXPECT_LE(std::abs(std::complex<long double>(got_t[i]) - dense_t[i]), Tolerance<T>() * 4)
            << what << " transpose's to_dense at " << i;
      }
    }
  }

  template <typename T>
  static std::vector<T> RandomValuesOf(int64_t n, std::mt19937_64& rng) {
    std::vector<T> out;
    for (int64_t i = 0; i < n; ++i) out.push_back(RandomValue<T>(rng));
    return out;
  }
};

TEST_P(SparseTest, ProductsMatchTheHostInEveryDtype) {
  std::mt19937_64 rng(71);
  CheckProducts(RandomCoo<double>(37, 23, 0.2, rng, {0, 5, 36}, {3, 22}), rng);
  CheckProducts(RandomCoo<float>(19, 41, 0.3, rng, {7}), rng);
  CheckProducts(RandomCoo<std::complex<double>>(16, 16, 0.25, rng, {}, {0}), rng);
  CheckProducts(RandomCoo<std::complex<float>>(9, 30, 0.4, rng), rng);
  // Long rows (a warp per row on the GPU) and short ones (a thread per row).
  CheckProducts(RandomCoo<double>(64, 900, 0.5, rng), rng);
  CheckProducts(RandomCoo<double>(700, 40, 0.02, rng), rng);
  ExpectBystanderIntact();
}

TEST_P(SparseTest, DuplicatesAreSummedAndEmptyMatricesWork) {
  // (0,1) listed three times, out of order; row 1 and column 2 empty.
  const std::vector<int64_t> rows = {2, 0, 0, 2, 0};
  const std::vector<int64_t> cols = {0, 1, 1, 3, 1};
  const std::vector<double> values = {4, 1, 2, 5, 0.5};
  ASSERT_OK_AND_ASSIGN(CsrMatrix a, CsrMatrix::FromCoo<double>(client(), 3, 4, rows, cols, values,
                                                               {dev(0), dev(1), dev(2)}));
  EXPECT_EQ(a.nnz(), 3);
  ASSERT_OK_AND_ASSIGN(Array d, a.ToDense());
  EXPECT_EQ(*d.Download<double>(), (std::vector<double>{0, 3.5, 0, 0, 0, 0, 0, 0, 4, 0, 0, 5}));
  // No entries at all, and a matrix with no columns (no blocks): products are zeros.
  ASSERT_OK_AND_ASSIGN(CsrMatrix none,
                       CsrMatrix::FromCoo<double>(client(), 5, 3, {}, {}, {}, {dev(0), dev(1)}));
  ASSERT_OK_AND_ASSIGN(
      Array x, client().Upload<double>(std::vector<double>{1, 2, 3}, {3}, {OnDevice(1, dev(0))}));
  ASSERT_OK_AND_ASSIGN(Array y, SparseMatmul(none, x));
  EXPECT_EQ(*y.Download<double>(), std::vector<double>(5, 0.0));
  ASSERT_OK_AND_ASSIGN(CsrMatrix thin,
                       CsrMatrix::FromCoo<double>(client(), 4, 0, {}, {}, {}, {dev(0)}));
  ASSERT_OK_AND_ASSIGN(Array empty, client().Create({0}, v1::DTYPE_FLOAT64, {OnDevice(1, dev(0))}));
  ASSERT_OK_AND_ASSIGN(Array zeros, SparseMatmul(thin, empty));
  EXPECT_EQ(*zeros.Download<double>(), std::vector<double>(4, 0.0));
  ExpectBystanderIntact();
}

TEST_P(SparseTest, ProductsRunInsideRecordedLoops) {
  // x <- A @ x * 0.5, five times, in a while loop; A split over the devices.
  std::mt19937_64 rng(5);
  const Coo<double> coo = RandomCoo<double>(30, 30, 0.2, rng, {4});
  std::vector<int> on = {dev(0)};
  if (devices() > 1) on.push_back(dev(1));
  ASSERT_OK_AND_ASSIGN(CsrMatrix a, CsrMatrix::FromCoo<double>(client(), 30, 30, coo.rows, coo.cols,
                                                               coo.values, on));
  const std::vector<double> x0 = RandomValuesOf<double>(30, rng);
  ASSERT_OK_AND_ASSIGN(Array x, client().Upload<double>(x0, {30}, {Replicated(1, on)}));
  namespace g = graph;
  g::ProgramBuilder p;
  const g::Var indptr = p.Input("indptr"), indices = p.Input("indices"), data = p.Input("data");
  const v1::CsrMatrix shape_and_blocks = a.proto();
  g::Vars out =
      p.WhileLoop([](auto v) { return g::All(v[1] < 5.0); },
                  [&](auto v) {
                    // The product comes in A's row blocks; x stays whole on every
                    // device.
                    g::ProgramBuilder& b = v[0].builder();
                    g::Var product = b.SparseMatmul(indptr, indices, data, shape_and_blocks, v[0]);
                    return g::Vars{b.Reshard(product * 0.5, Replicated(1, on)), v[1] + 1.0};
                  },
                  {p.Input("x"), p.Input("k")}, 100);
  p.Output("x", out[0]);
  ASSERT_OK_AND_ASSIGN(Array k,
                       client().Upload<double>(std::vector<double>{0}, {1}, {Replicated(1, on)}));
  for (int run = 0; run < 2; ++run) {  // the second replays the cached graph
    ASSERT_OK_AND_ASSIGN(GraphRun result, client().RunGraph(p.program(), {{"indptr", &a.indptr()},
                                                                          {"indices", &a.indices()},
                                                                          {"data", &a.data()},
                                                                          {"x", &x},
                                                                          {"k", &k}}));
    EXPECT_EQ(result.iterations, 5);
    std::vector<long double> want(x0.begin(), x0.end());
    const auto dense = coo.Dense();
    for (int it = 0; it < 5; ++it) {
      std::vector<long double> next(30, 0);
      for (int64_t r = 0; r < 30; ++r) {
        for (int64_t c = 0; c < 30; ++c) next[r] += dense[r * 30 + c].real() * want[c];
        next[r] *= 0.5L;
      }
      want = next;
    }
    const std::vector<double> got = *result.outputs.at("x").Download<double>();
    for (int64_t i = 0; i < 30; ++i) {
      EXPECT_NEAR(got[i], static_cast<double>(want[i]), 1e-12 * (1 + std::abs(want[i])))
          << "run " << run << " at " << i;
    }
  }
  ExpectBystanderIntact();
}

TEST_P(SparseTest, PartsThatDoNotFitTheirBlocksAreRefusedNamingTheField) {
  std::mt19937_64 rng(9);
  const Coo<double> coo = RandomCoo<double>(6, 5, 0.5, rng);
  ASSERT_OK_AND_ASSIGN(CsrMatrix a, CsrMatrix::FromCoo<double>(client(), 6, 5, coo.rows, coo.cols,
                                                               coo.values, {dev(0), dev(1)}));
  ASSERT_OK_AND_ASSIGN(
      Array x, client().Upload<double>(RandomValuesOf<double>(5, rng), {5}, {OnDevice(1, dev(0))}));
  auto matmul = [&](const v1::CsrMatrix& matrix, const Array& b) {
    v1::MatmulRequest request;
    *request.mutable_spec()->mutable_sparse_a() = matrix;
    *request.mutable_spec()->mutable_b() = b.AsOperand();
    return client().Matmul(request).status();
  };
  auto expect = [](const absl::Status& status, absl::StatusCode code, const std::string& text) {
    EXPECT_EQ(status.code(), code) << status;
    EXPECT_TRUE(absl::StrContains(status.message(), text)) << status;
  };
  v1::CsrMatrix m = a.proto();
  m.mutable_shape()->add_dims(1);
  expect(matmul(m, x), absl::StatusCode::kInvalidArgument,
         "spec.sparse_a.shape: a sparse matrix has two axes");
  m = a.proto();
  *m.mutable_indptr() = a.data().AsOperand();
  expect(matmul(m, x), absl::StatusCode::kInvalidArgument,
         "spec.sparse_a.indptr: dtype float64; row offsets are int64");
  m = a.proto();
  *m.mutable_indices() = a.indptr().AsOperand();  // int64 but of other lengths
  expect(matmul(m, x), absl::StatusCode::kInvalidArgument, "spec.sparse_a.indices.index_map");
  m = a.proto();
  m.mutable_blocks()->mutable_chunks()->RemoveLast();
  expect(matmul(m, x), absl::StatusCode::kInvalidArgument,
         "spec.sparse_a.indptr: 2 chunks; the matrix has 1 blocks");
  m = a.proto();
  m.mutable_blocks()->mutable_chunks(0)->mutable_slices(0)->set_stop(2);
  expect(matmul(m, x), absl::StatusCode::kInvalidArgument,
         "spec.sparse_a.indptr.index_map.chunks[0]");
  m = a.proto();
  m.mutable_data()->mutable_scalar()->set_float_value(1);
  expect(matmul(m, x), absl::StatusCode::kInvalidArgument,
         "spec.sparse_a.data: a sparse matrix's parts are arrays");
  // b of another dtype or length.
  ASSERT_OK_AND_ASSIGN(
      Array xf, client().Upload<float>(std::vector<float>(5, 1.0f), {5}, {OnDevice(1, dev(0))}));
  expect(matmul(a.proto(), xf), absl::StatusCode::kInvalidArgument,
         "spec.b: dtype float32 does not match the sparse matrix's float64");
  ASSERT_OK_AND_ASSIGN(
      Array x6, client().Upload<double>(std::vector<double>(6, 1.0), {6}, {OnDevice(1, dev(0))}));
  expect(matmul(a.proto(), x6), absl::StatusCode::kInvalidArgument,
         "spec.b: shape (6,) does not fit the matrix's (6, 5)");
  // Both a and sparse_a.
  v1::MatmulRequest both;
  *both.mutable_spec()->mutable_sparse_a() = a.proto();
  *both.mutable_spec()->mutable_a() = x.AsOperand();
  *both.mutable_spec()->mutable_b() = x.AsOperand();
  expect(client().Matmul(both).status(), absl::StatusCode::kInvalidArgument,
         "spec.a: give a dense a or a sparse_a, not both");
  // Client-side checks of the triplets.
  expect(CsrMatrix::FromCoo<double>(client(), 2, 2, std::vector<int64_t>{0, 2},
                                    std::vector<int64_t>{0, 1}, std::vector<double>{1, 2}, {dev(0)})
             .status(),
         absl::StatusCode::kInvalidArgument, "rows[1]: 2 is out of range for 2 rows");
  expect(CsrMatrix::FromCoo<double>(client(), 2, 2, std::vector<int64_t>{0},
                                    std::vector<int64_t>{0, 1}, std::vector<double>{1}, {dev(0)})
             .status(),
         absl::StatusCode::kInvalidArgument, "lengths 1, 2 and 1 differ");
  // Sparse ops: results and names.
  v1::SparseRequest request;
  *request.mutable_spec()->mutable_transpose() = a.proto();
  request.add_result_names("only-one");
  expect(client().Sparse(request).status(), absl::StatusCode::kInvalidArgument,
         "result_names: transpose has three results");
  expect(client().Sparse(v1::SparseRequest()).status(), absl::StatusCode::kInvalidArgument,
         "spec: give an op");
  ExpectBystanderIntact();
}

TEST_P(SparseTest, IndexValuesOutsideTheirBlockNeverReachOutsideTheBuffers) {
  // Parts uploaded by hand: offsets past the entries, decreasing, negative; columns past the
  // block and negative. Products give some values, the daemon stays up, nothing else changes.
  const std::vector<int64_t> indptr = {0, 5, -3, 1 << 30, 2};  // 4 rows, 2 stored entries
  const std::vector<int64_t> indices = {7, -2};
  const std::vector<double> data = {1.5, 2.5};
  v1::IndexMap one = OnDevice(1, dev(1));
  ASSERT_OK_AND_ASSIGN(Array p, client().Upload<int64_t>(indptr, {5}, {one}));
  ASSERT_OK_AND_ASSIGN(Array i, client().Upload<int64_t>(indices, {2}, {one}));
  ASSERT_OK_AND_ASSIGN(Array d, client().Upload<double>(data, {2}, {one}));
  v1::CsrMatrix matrix;
  *matrix.mutable_indptr() = p.AsOperand();
  *matrix.mutable_indices() = i.AsOperand();
  *matrix.mutable_data() = d.AsOperand();
  matrix.mutable_shape()->add_dims(4);
  matrix.mutable_shape()->add_dims(3);
  *matrix.mutable_blocks() = MakeIndexMap({MakeChunk(dev(1), {SliceSpec{0, 4}, SliceSpec{0, 3}})});
  ASSERT_OK_AND_ASSIGN(
      Array x, client().Upload<double>(std::vector<double>{1, 2, 3}, {3}, {OnDevice(1, dev(0))}));
  v1::MatmulRequest product;
  *product.mutable_spec()->mutable_sparse_a() = matrix;
  *product.mutable_spec()->mutable_b() = x.AsOperand();
  ASSERT_OK_AND_ASSIGN(Array y, client().Matmul(product));
  // Every column is out of range: every row sums nothing.
  EXPECT_EQ(*y.Download<double>(), std::vector<double>(4, 0.0));
  v1::SparseRequest dense;
  *dense.mutable_spec()->mutable_to_dense() = matrix;
  ASSERT_OK_AND_ASSIGN(std::vector<Array> densified, client().Sparse(dense));
  EXPECT_EQ(*densified[0].Download<double>(), std::vector<double>(12, 0.0));
  v1::SparseRequest transpose;
  *transpose.mutable_spec()->mutable_transpose() = matrix;
  ASSERT_OK_AND_ASSIGN(std::vector<Array> parts, client().Sparse(transpose));
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(*parts[0].Download<int64_t>(), (std::vector<int64_t>{0, 0, 0, 0}));
  ExpectBystanderIntact();
}

TEST_P(SparseTest, ABlockTooWideToTransposeOrDensifyIsRefused) {
  // One row, 2^40 columns, one entry: the parts are tiny, the transpose's offsets and the dense
  // matrix are not. Both are refused for memory, before any host memory is set aside.
  const int64_t wide = int64_t{1} << 40;
  v1::IndexMap one = OnDevice(1, dev(0));
  ASSERT_OK_AND_ASSIGN(Array p, client().Upload<int64_t>(std::vector<int64_t>{0, 1}, {2}, {one}));
  ASSERT_OK_AND_ASSIGN(Array i, client().Upload<int32_t>(std::vector<int32_t>{7}, {1}, {one}));
  ASSERT_OK_AND_ASSIGN(Array d, client().Upload<double>(std::vector<double>{2.5}, {1}, {one}));
  v1::CsrMatrix matrix;
  *matrix.mutable_indptr() = p.AsOperand();
  *matrix.mutable_indices() = i.AsOperand();
  *matrix.mutable_data() = d.AsOperand();
  matrix.mutable_shape()->add_dims(1);
  matrix.mutable_shape()->add_dims(wide);
  *matrix.mutable_blocks() =
      MakeIndexMap({MakeChunk(dev(0), {SliceSpec{0, 1}, SliceSpec{0, wide}})});
  v1::SparseRequest transpose;
  *transpose.mutable_spec()->mutable_transpose() = matrix;
  const absl::Status t = client().Sparse(transpose).status();
  EXPECT_EQ(t.code(), absl::StatusCode::kResourceExhausted) << t;
  v1::SparseRequest dense;
  *dense.mutable_spec()->mutable_to_dense() = matrix;
  const absl::Status to_dense = client().Sparse(dense).status();
  EXPECT_EQ(to_dense.code(), absl::StatusCode::kResourceExhausted) << to_dense;
  ExpectBystanderIntact();
}

DISTARRAY_INSTANTIATE_BACKENDS(SparseTest);

}  // namespace
}  // namespace distarray::testing
