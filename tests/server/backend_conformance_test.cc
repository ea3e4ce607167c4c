// The backend conformance suite: the same in-process cases of elementwise ops, casts, reductions
// and GEMM against every backend, each result compared with a long double host reference on
// fresh random inputs. The sizes cross the kernels' internal boundaries (16-byte packs, a block's
// step, a split reduction's ranges, a grid-stride loop with several steps), so a fast path that
// drops or repeats elements fails here. The "cuda" cases skip where no GPU is usable, unless
// DISTARRAY_REQUIRE_BACKENDS names cuda.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "server/backend/backend.h"
#include "server/daemon/backend_factory.h"
#include "tests/support/in_process_backend.h"
#include "tests/support/shared_backend_test.h"

namespace distarray {
namespace {

using testing::AllOf;
using testing::ArrayArg;
using testing::BackendRequired;
using testing::HostElement;
using testing::OverMatrixAxis;
using testing::ReadFrom;
using testing::ScalarArg;
using testing::TransposedView;
using testing::UploadTo;

// Element counts around the kernels' boundaries: below one pack, one pack and a bit, one block
// step and a bit, several blocks with a partial last step, and more than one resident wave.
const std::vector<int64_t> kSizes = {
    1, 7, 17, 2053, (int64_t{1} << 20) + 7, (int64_t{1} << 22) + 5};

template <typename T>
std::vector<T> Random(int64_t n, uint64_t seed, double low, double high) {
  std::mt19937_64 rng(seed);
  std::vector<T> values(n);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<double> dist(low, high);
    for (T& v : values) v = static_cast<T>(dist(rng));
  } else {
    std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(low),
                                                static_cast<int64_t>(high));
    for (T& v : values) v = static_cast<T>(dist(rng));
  }
  return values;
}

// Every value of an integer type T is equally likely: wrapping arithmetic gets exercised.
template <typename T>
std::vector<T> AnyValues(int64_t n, uint64_t seed) {
  return Random<T>(n, seed, std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
}

class BackendConformanceTest : public testing::SharedBackendTest {
 protected:
  BackendOptions OptionsFor(const std::string& kind) const override {
    BackendOptions options;
    options.kind = kind;
    options.host_devices = 1;
    return options;
  }

  // Runs op over `args` into a new buffer of n elements of Out and reads it back.
  template <typename Out>
  absl::StatusOr<std::vector<HostElement<Out>>> RunElementwise(
      ElementwiseOpId op, DType compute, int64_t n, const std::vector<ElementwiseArg>& args) {
    ASSIGN_OR_RETURN(BufferPtr out, backend().Allocate(0, n * int64_t{sizeof(Out)}));
    RETURN_IF_ERROR(backend().Elementwise(op, compute, out, n, args));
    return ReadFrom<Out>(backend(), out, n);
  }

  template <typename Out>
  absl::StatusOr<std::vector<HostElement<Out>>> RunReduce(ReduceKind kind, DType in,
                                                          const BufferPtr& src,
                                                          const ReduceGeometry& g,
                                                          const BufferPtr& extreme = nullptr,
                                                          double scale = 1) {
    ASSIGN_OR_RETURN(BufferPtr out, backend().Allocate(0, g.outputs() * int64_t{sizeof(Out)}));
    RETURN_IF_ERROR(backend().Reduce(kind, in, src, g, out, scale, extreme));
    return ReadFrom<Out>(backend(), out, g.outputs());
  }
};

// Every element of `got` equals `want(i)` within `tolerance(i)`; reports the first mismatch.
template <typename G>
void ExpectElements(const std::vector<G>& got, const std::function<long double(int64_t)>& want,
                    const std::function<long double(int64_t)>& tolerance, const std::string& what) {
  for (int64_t i = 0; i < static_cast<int64_t>(got.size()); ++i) {
    const long double w = want(i);
    // Written so that a NaN (a skipped element of a reused buffer, a bad combine) fails too.
    if (!(std::fabs(static_cast<long double>(got[i]) - w) <= tolerance(i))) {
      ADD_FAILURE() << what << ": element " << i << " of " << got.size() << " is "
                    << static_cast<long double>(got[i]) << ", want " << w;
      return;
    }
  }
}

long double Exact(int64_t) { return 0; }

TEST_P(BackendConformanceTest, BinaryOpsOnDenseOperandsOfEverySize) {
  for (const int64_t n : kSizes) {
    SCOPED_TRACE(::testing::Message() << "n = " << n);
    const auto a = Random<float>(n, 10 + n, -1, 1);
    const auto b = Random<float>(n, 20 + n, -1, 1);
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr da, UploadTo(backend(), a));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr db, UploadTo(backend(), b));
    DA_ASSERT_OK_AND_ASSIGN(auto sum, RunElementwise<float>(ElementwiseOpId::kAdd, DType::kFloat32,
                                                            n, {ArrayArg(da), ArrayArg(db)}));
    // float addition is correctly rounded: the float of the exact sum.
    ExpectElements(
        sum, [&](int64_t i) { return static_cast<float>(static_cast<long double>(a[i]) + b[i]); },
        Exact, "add float32");
    DA_ASSERT_OK_AND_ASSIGN(auto less, RunElementwise<bool>(ElementwiseOpId::kLess, DType::kFloat32,
                                                            n, {ArrayArg(da), ArrayArg(db)}));
    ExpectElements(
        less, [&](int64_t i) { return a[i] < b[i] ? 1.0L : 0.0L; }, Exact, "less float32");

    const auto x = AnyValues<int32_t>(n, 30 + n);
    const auto y = AnyValues<int32_t>(n, 40 + n);
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr dx, UploadTo(backend(), x));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr dy, UploadTo(backend(), y));
    DA_ASSERT_OK_AND_ASSIGN(auto diff,
                            RunElementwise<int32_t>(ElementwiseOpId::kSubtract, DType::kInt32, n,
                                                    {ArrayArg(dx), ArrayArg(dy)}));
    // NumPy's int32 arithmetic wraps modulo 2^32.
    ExpectElements(
        diff,
        [&](int64_t i) {
          return static_cast<int32_t>(static_cast<uint32_t>(x[i]) - static_cast<uint32_t>(y[i]));
        },
        Exact, "subtract int32");
  }
}

// complex64 moves two elements per 16-byte pack and complex128 one, so both take the dense
// path's packs and its tail; a real scalar operand is the real part.
template <typename R>
void CheckComplexProductsAndQuotients(
    Backend& backend, const std::function<absl::StatusOr<std::vector<Complex<R>>>(
                          ElementwiseOpId, int64_t, const std::vector<ElementwiseArg>&)>& run) {
  using C = Complex<R>;
  const long double eps = std::numeric_limits<R>::epsilon();
  for (const int64_t n : kSizes) {
    SCOPED_TRACE(::testing::Message() << DTypeName(DTypeFor<C>()) << ", n = " << n);
    const auto parts = Random<R>(4 * n, 50 + n, -2, 2);
    std::vector<C> a(n), b(n);
    for (int64_t i = 0; i < n; ++i) {
      a[i] = C(parts[4 * i], parts[4 * i + 1]);
      b[i] = C(parts[4 * i + 2], parts[4 * i + 3]);
    }
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr da, UploadTo(backend, a));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr db, UploadTo(backend, b));
    DA_ASSERT_OK_AND_ASSIGN(auto product,
                            run(ElementwiseOpId::kMultiply, n, {ArrayArg(da), ArrayArg(db)}));
    DA_ASSERT_OK_AND_ASSIGN(auto quotient,
                            run(ElementwiseOpId::kTrueDivide, n, {ArrayArg(da), ArrayArg(db)}));
    DA_ASSERT_OK_AND_ASSIGN(auto scaled,
                            run(ElementwiseOpId::kMultiply, n, {ArrayArg(da), ScalarArg(0.75)}));
    for (int64_t i = 0; i < n; ++i) {
      const std::complex<long double> x(a[i].re, a[i].im), y(b[i].re, b[i].im);
      const std::complex<long double> p = x * y, q = x / y;
      const long double p_tol = 4 * eps * std::abs(x) * std::abs(y);
      const long double q_tol = 8 * eps * std::abs(x) / std::abs(y);
      // Written so that a NaN fails too.
      if (!(std::fabs(product[i].re - p.real()) <= p_tol &&
            std::fabs(product[i].im - p.imag()) <= p_tol &&
            std::fabs(quotient[i].re - q.real()) <= q_tol &&
            std::fabs(quotient[i].im - q.imag()) <= q_tol && scaled[i].re == a[i].re * R(0.75) &&
            scaled[i].im == a[i].im * R(0.75))) {
        FAIL() << "element " << i << ": product (" << product[i].re << ", " << product[i].im
               << "), quotient (" << quotient[i].re << ", " << quotient[i].im << "), scaled ("
               << scaled[i].re << ", " << scaled[i].im << ")";
      }
    }
  }
}

// Reads into the backend's own staging memory (what a download sends its messages from): the
// bytes of the region asked for, after the work that wrote them, several in flight at once; a
// read dropped before Wait is harmless; more than kMaxStagedReadBytes is refused.
TEST_P(BackendConformanceTest, StagedReadsReturnTheRegionsBytes) {
  const int64_t n = (int64_t{1} << 20) + 7;
  const std::vector<uint32_t> values = AnyValues<uint32_t>(n, 31);
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr source, UploadTo(backend(), values));
  // Written after the upload, so a read that does not wait for the writer sees old values.
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr doubled, backend().Allocate(0, n * 4));
  DA_ASSERT_OK(backend().Elementwise(ElementwiseOpId::kAdd, DType::kUInt32, doubled, n,
                                     {ArrayArg(source), ArrayArg(source)}));
  struct Region {
    int64_t first, count;
  };
  const Region regions[] = {{0, n}, {5, 1}, {n - 9, 9}, {123, 4096}, {0, 0}};
  std::vector<std::unique_ptr<StagedRead>> reads;
  for (const Region& r : regions) {
    DA_ASSERT_OK_AND_ASSIGN(auto read, backend().ReadToStaging(doubled, r.first * 4, r.count * 4));
    reads.push_back(std::move(read));
  }
  DA_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StagedRead> dropped,
                          backend().ReadToStaging(doubled, 0, n * 4));
  dropped.reset();
  for (size_t k = 0; k < reads.size(); ++k) {
    DA_ASSERT_OK_AND_ASSIGN(absl::string_view bytes, reads[k]->Wait());
    ASSERT_EQ(bytes.size(), static_cast<size_t>(regions[k].count * 4)) << "region " << k;
    for (int64_t i = 0; i < regions[k].count; ++i) {
      uint32_t got;
      std::memcpy(&got, bytes.data() + i * 4, 4);
      ASSERT_EQ(got, static_cast<uint32_t>(values[regions[k].first + i] * 2u))
          << "region " << k << ", element " << i;
    }
  }
  EXPECT_EQ(backend().ReadToStaging(doubled, 0, kMaxStagedReadBytes + 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(BackendConformanceTest, ComplexProductsAndQuotients) {
  CheckComplexProductsAndQuotients<float>(
      backend(), [&](ElementwiseOpId op, int64_t n, const std::vector<ElementwiseArg>& args) {
        return RunElementwise<Complex64>(op, DType::kComplex64, n, args);
      });
  CheckComplexProductsAndQuotients<double>(
      backend(), [&](ElementwiseOpId op, int64_t n, const std::vector<ElementwiseArg>& args) {
        return RunElementwise<Complex128>(op, DType::kComplex128, n, args);
      });
}

TEST_P(BackendConformanceTest, ScalarsNarrowTypesAndTernaryOps) {
  for (const int64_t n : kSizes) {
    SCOPED_TRACE(::testing::Message() << "n = " << n);
    const auto d = Random<double>(n, 50 + n, -100, 100);
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr dd, UploadTo(backend(), d));
    // The scalar on the left.
    DA_ASSERT_OK_AND_ASSIGN(auto scaled,
                            RunElementwise<double>(ElementwiseOpId::kMultiply, DType::kFloat64, n,
                                                   {ScalarArg(Scalar::Float(-2.5)), ArrayArg(dd)}));
    ExpectElements(
        scaled, [&](int64_t i) { return static_cast<double>(-2.5L * d[i]); }, Exact,
        "-2.5 * float64");

    const auto i8 = Random<int8_t>(n, 60 + n, -128, 127);
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr di8, UploadTo(backend(), i8));
    DA_ASSERT_OK_AND_ASSIGN(auto negated, RunElementwise<int8_t>(ElementwiseOpId::kNegative,
                                                                 DType::kInt8, n, {ArrayArg(di8)}));
    ExpectElements(
        negated, [&](int64_t i) { return static_cast<int8_t>(-static_cast<int>(i8[i])); }, Exact,
        "negative int8");

    const auto i16a = Random<int16_t>(n, 70 + n, -30000, 30000);
    const auto i16b = Random<int16_t>(n, 80 + n, -30000, 30000);
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr dia, UploadTo(backend(), i16a));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr dib, UploadTo(backend(), i16b));
    DA_ASSERT_OK_AND_ASSIGN(auto larger,
                            RunElementwise<int16_t>(ElementwiseOpId::kMaximum, DType::kInt16, n,
                                                    {ArrayArg(dia), ArrayArg(dib)}));
    ExpectElements(
        larger, [&](int64_t i) { return std::max(i16a[i], i16b[i]); }, Exact, "maximum int16");

    std::vector<uint8_t> condition(n);
    for (int64_t i = 0; i < n; ++i) condition[i] = i16a[i] > i16b[i];
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr dc, UploadTo(backend(), condition));
    DA_ASSERT_OK_AND_ASSIGN(auto either,
                            RunElementwise<bool>(ElementwiseOpId::kLogicalXor, DType::kBool, n,
                                                 {ArrayArg(dc), ScalarArg(Scalar::Bool(true))}));
    ExpectElements(
        either, [&](int64_t i) { return condition[i] ? 0.0L : 1.0L; }, Exact, "logical_xor bool");
    DA_ASSERT_OK_AND_ASSIGN(
        auto chosen,
        RunElementwise<double>(ElementwiseOpId::kWhere, DType::kFloat64, n,
                               {ArrayArg(dc), ArrayArg(dd), ScalarArg(Scalar::Float(0.5))}));
    ExpectElements(
        chosen, [&](int64_t i) { return condition[i] ? d[i] : 0.5L; }, Exact, "where float64");
  }
}

// One-byte elements take 16 to a pack: only a larger array reaches a second grid-stride step.
TEST_P(BackendConformanceTest, OneByteElementsOverSeveralGridSteps) {
  const int64_t n = (int64_t{1} << 24) + 3;
  const auto i8 = Random<int8_t>(n, 61, -128, 127);
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr di8, UploadTo(backend(), i8));
  DA_ASSERT_OK_AND_ASSIGN(auto negated, RunElementwise<int8_t>(ElementwiseOpId::kNegative,
                                                               DType::kInt8, n, {ArrayArg(di8)}));
  ExpectElements(
      negated, [&](int64_t i) { return static_cast<int8_t>(-static_cast<int>(i8[i])); }, Exact,
      "negative int8");
  std::vector<uint8_t> mask(n);
  for (int64_t i = 0; i < n; ++i) mask[i] = i8[i] > 0;
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr dm, UploadTo(backend(), mask));
  DA_ASSERT_OK_AND_ASSIGN(auto flipped, RunElementwise<bool>(ElementwiseOpId::kLogicalNot,
                                                             DType::kBool, n, {ArrayArg(dm)}));
  ExpectElements(
      flipped, [&](int64_t i) { return mask[i] ? 0.0L : 1.0L; }, Exact, "logical_not bool");
}

TEST_P(BackendConformanceTest, StridedAndBroadcastOperands) {
  // a (rows x cols) + the transpose of b (cols x rows) + a row broadcast down the rows.
  for (const auto& [rows, cols] :
       std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {3, 5}, {129, 67}, {1031, 1024}}) {
    SCOPED_TRACE(::testing::Message() << rows << " x " << cols);
    const int64_t n = rows * cols;
    const auto a = Random<float>(n, 90 + n, -1, 1);
    const auto b = Random<float>(n, 91 + n, -1, 1);
    const auto row = Random<float>(cols, 92 + n, -1, 1);
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr da, UploadTo(backend(), a));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr db, UploadTo(backend(), b));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr drow, UploadTo(backend(), row));
    ElementwiseArg transposed = ArrayArg(db);
    transposed.contiguous = false;
    transposed.view = TransposedView(rows, cols);
    ElementwiseArg broadcast = ArrayArg(drow);
    broadcast.contiguous = false;
    broadcast.view = transposed.view;
    broadcast.view.stride[0] = 0;
    broadcast.view.stride[1] = 1;
    DA_ASSERT_OK_AND_ASSIGN(auto t, RunElementwise<float>(ElementwiseOpId::kAdd, DType::kFloat32, n,
                                                          {ArrayArg(da), transposed}));
    ExpectElements(
        t,
        [&](int64_t i) {
          return static_cast<float>(static_cast<long double>(a[i]) +
                                    b[(i % cols) * rows + i / cols]);
        },
        Exact, "a + b.T");
    DA_ASSERT_OK_AND_ASSIGN(auto r,
                            RunElementwise<float>(ElementwiseOpId::kSubtract, DType::kFloat32, n,
                                                  {broadcast, ArrayArg(da)}));
    ExpectElements(
        r,
        [&](int64_t i) {
          return static_cast<float>(static_cast<long double>(row[i % cols]) - a[i]);
        },
        Exact, "row - a");
  }
}

TEST_P(BackendConformanceTest, Casts) {
  for (const int64_t n : kSizes) {
    SCOPED_TRACE(::testing::Message() << "n = " << n);
    const auto d = Random<double>(n, 100 + n, -1e6, 1e6);
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr src, UploadTo(backend(), d));
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr dst, backend().Allocate(0, n * 4));
    DA_ASSERT_OK(backend().Cast(DType::kFloat64, DType::kInt32, src, dst, n));
    DA_ASSERT_OK_AND_ASSIGN(auto got, ReadFrom<int32_t>(backend(), dst, n));
    ExpectElements(
        got, [&](int64_t i) { return std::trunc(static_cast<long double>(d[i])); }, Exact,
        "astype float64 -> int32");
  }
}

// Reductions of float32, int32 and bool over everything, over rows and over columns, against
// long double sums; float sums are held in double and rounded once, so within 2 ulp of float.
TEST_P(BackendConformanceTest, ReductionsOverEveryShapeOfGeometry) {
  struct Case {
    int64_t rows, cols;
    int axis;  // -1: everything
  };
  std::vector<Case> cases;
  for (const int64_t n : kSizes) cases.push_back({1, n, -1});
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {3, 100003},
           {1000, 1031},
           {1031, 1000},
           {100003, 3},
           {2, 1},
           {1, 2},
           // Few columns over many rows: the thread path with so many splits that a block
           // combines each output's partials.
           {100000, 64}}) {
    cases.push_back({rows, cols, 0});
    cases.push_back({rows, cols, 1});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << c.rows << " x " << c.cols << " over " << (c.axis < 0 ? "all" : "axis ")
                 << (c.axis < 0 ? "" : std::to_string(c.axis)));
    const int64_t n = c.rows * c.cols;
    const ReduceGeometry g = c.axis < 0 ? AllOf(n) : OverMatrixAxis(c.rows, c.cols, c.axis);
    const int64_t outputs = g.outputs();
    // Output o's element r, as the reference walks it.
    auto at = [&](int64_t o, int64_t r) {
      if (c.axis < 0) return r;
      return c.axis == 1 ? o * c.cols + r : r * c.cols + o;
    };
    const int64_t per_output = n / outputs;

    const auto f = Random<float>(n, 200 + n + c.axis, -1, 1);
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr df, UploadTo(backend(), f));
    DA_ASSERT_OK_AND_ASSIGN(auto sums, RunReduce<float>(ReduceKind::kSum, DType::kFloat32, df, g));
    std::vector<long double> want_sum(outputs, 0), magnitude(outputs, 0);
    std::vector<float> want_max(outputs, -2);
    std::vector<int64_t> want_argmax(outputs, 0);
    for (int64_t o = 0; o < outputs; ++o) {
      for (int64_t r = 0; r < per_output; ++r) {
        const float v = f[at(o, r)];
        want_sum[o] += v;
        magnitude[o] += std::fabs(v);
        if (v > want_max[o]) {
          want_max[o] = v;
          want_argmax[o] = r;
        }
      }
    }
    ExpectElements(
        sums, [&](int64_t o) { return want_sum[o]; },
        [&](int64_t o) {
          return std::fabs(want_sum[o]) * 2 * std::numeric_limits<float>::epsilon() +
                 magnitude[o] * 1e-14L;
        },
        "sum float32");
    DA_ASSERT_OK_AND_ASSIGN(auto maxima,
                            RunReduce<float>(ReduceKind::kMax, DType::kFloat32, df, g));
    ExpectElements(
        maxima, [&](int64_t o) { return want_max[o]; }, Exact, "max float32");
    // argmax's second pass: the first index of each output's maximum (kArgMatch).
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr dmax, UploadTo(backend(), want_max));
    DA_ASSERT_OK_AND_ASSIGN(
        auto first, RunReduce<int64_t>(ReduceKind::kArgMatch, DType::kFloat32, df, g, dmax));
    ExpectElements(
        first, [&](int64_t o) { return want_argmax[o]; }, Exact, "argmax float32");

    const auto i = AnyValues<int32_t>(n, 300 + n + c.axis);
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr di, UploadTo(backend(), i));
    DA_ASSERT_OK_AND_ASSIGN(auto isums, RunReduce<int64_t>(ReduceKind::kSum, DType::kInt32, di, g));
    ExpectElements(
        isums,
        [&](int64_t o) {
          long double s = 0;
          for (int64_t r = 0; r < per_output; ++r) s += i[at(o, r)];
          return s;
        },
        Exact, "sum int32 -> int64");

    // all() of a mask that is true except, for every third output, at its last element.
    std::vector<uint8_t> mask(n, 1);
    for (int64_t o = 0; o < outputs; o += 3) mask[at(o, per_output - 1)] = 0;
    DA_ASSERT_OK_AND_ASSIGN(BufferPtr dm, UploadTo(backend(), mask));
    DA_ASSERT_OK_AND_ASSIGN(auto all, RunReduce<bool>(ReduceKind::kAll, DType::kBool, dm, g));
    ExpectElements(
        all, [&](int64_t o) { return o % 3 == 0 ? 0.0L : 1.0L; }, Exact, "all bool");

    DA_ASSERT_OK_AND_ASSIGN(auto means, RunReduce<float>(ReduceKind::kMean, DType::kFloat32, df, g,
                                                         nullptr, 1.0 / per_output));
    ExpectElements(
        means, [&](int64_t o) { return want_sum[o] / per_output; },
        [&](int64_t o) {
          return std::fabs(want_sum[o] / per_output) * 2 * std::numeric_limits<float>::epsilon() +
                 magnitude[o] / per_output * 1e-14L;
        },
        "mean float32");
  }
}

TEST_P(BackendConformanceTest, GemmAgainstLongDoubleProducts) {
  for (const auto& [m, n, k] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 1, 1}, {37, 29, 131}, {128, 64, 256}, {5, 3, 0}}) {
    SCOPED_TRACE(::testing::Message() << m << " x " << k << " @ " << k << " x " << n);
    for (const DType dtype : {DType::kFloat32, DType::kFloat64}) {
      const bool f32 = dtype == DType::kFloat32;
      const auto a = Random<double>(m * k, 400 + m, -1, 1);
      const auto b = Random<double>(k * n, 500 + n, -1, 1);
      std::vector<float> a32(a.begin(), a.end()), b32(b.begin(), b.end());
      BufferPtr da, db;
      if (f32) {
        DA_ASSERT_OK_AND_ASSIGN(da, UploadTo(backend(), a32));
        DA_ASSERT_OK_AND_ASSIGN(db, UploadTo(backend(), b32));
      } else {
        DA_ASSERT_OK_AND_ASSIGN(da, UploadTo(backend(), a));
        DA_ASSERT_OK_AND_ASSIGN(db, UploadTo(backend(), b));
      }
      const int64_t size = f32 ? 4 : 8;
      DA_ASSERT_OK_AND_ASSIGN(BufferPtr dc,
                              backend().Allocate(0, std::max<int64_t>(1, m * n) * size));
      DA_ASSERT_OK(backend().Gemm(dtype, da, db, dc, m, n, k, /*allow_tf32=*/false));
      std::vector<long double> want(m * n, 0), magnitude(m * n, 0);
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t col = 0; col < n; ++col) {
          for (int64_t j = 0; j < k; ++j) {
            const long double x = f32 ? a32[r * k + j] : a[r * k + j];
            const long double y = f32 ? b32[j * n + col] : b[j * n + col];
            want[r * n + col] += x * y;
            magnitude[r * n + col] += std::fabs(x * y);
          }
        }
      }
      const long double eps =
          f32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
      // The classic bound of a k-term dot product: k ulps of the sum of magnitudes.
      auto tolerance = [&](int64_t i) {
        return (magnitude[i] + 1) * eps * std::max<int64_t>(k, 2);
      };
      if (f32) {
        DA_ASSERT_OK_AND_ASSIGN(auto got, ReadFrom<float>(backend(), dc, m * n));
        ExpectElements(
            got, [&](int64_t i) { return want[i]; }, tolerance, "gemm float32");
      } else {
        DA_ASSERT_OK_AND_ASSIGN(auto got, ReadFrom<double>(backend(), dc, m * n));
        ExpectElements(
            got, [&](int64_t i) { return want[i]; }, tolerance, "gemm float64");
      }
    }
  }
}

TEST_P(BackendConformanceTest, BatchedGemmWithAStrideOfZero) {
  // c[i] = a[i] @ b for i < 5: a a stack, b one matrix reused (stride 0), float64.
  constexpr int64_t kBatch = 5, kM = 7, kN = 6, kK = 9;
  const auto a = Random<double>(kBatch * kM * kK, 601, -1, 1);
  const auto b = Random<double>(kK * kN, 602, -1, 1);
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr da, UploadTo(backend(), a));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr db, UploadTo(backend(), b));
  DA_ASSERT_OK_AND_ASSIGN(BufferPtr dc, backend().Allocate(0, kBatch * kM * kN * 8));
  const GemmShape shape{.m = kM,
                        .n = kN,
                        .k = kK,
                        .batch = kBatch,
                        .stride_a = kM * kK,
                        .stride_b = 0,
                        .stride_c = kM * kN};
  DA_ASSERT_OK(backend().Gemm(DType::kFloat64, da, db, dc, shape, /*allow_tf32=*/false));
  std::vector<long double> want(kBatch * kM * kN, 0), magnitude(want.size(), 0);
  for (int64_t e = 0; e < kBatch; ++e) {
    for (int64_t r = 0; r < kM; ++r) {
      for (int64_t col = 0; col < kN; ++col) {
        for (int64_t j = 0; j < kK; ++j) {
          const long double term =
              static_cast<long double>(a[(e * kM + r) * kK + j]) * b[j * kN + col];
          want[(e * kM + r) * kN + col] += term;
          magnitude[(e * kM + r) * kN + col] += std::fabs(term);
        }
      }
    }
  }
  DA_ASSERT_OK_AND_ASSIGN(auto got, ReadFrom<double>(backend(), dc, kBatch * kM * kN));
  ExpectElements(
      got, [&](int64_t i) { return want[i]; },
      [&](int64_t i) { return (magnitude[i] + 1) * kK * std::numeric_limits<double>::epsilon(); },
      "batched gemm float64");

  // A batch that reaches past a buffer is refused before any BLAS sees a pointer.
  GemmShape past = shape;
  past.batch = kBatch + 1;
  EXPECT_EQ(backend().Gemm(DType::kFloat64, da, db, dc, past, false).code(),
            absl::StatusCode::kInternal);
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendConformanceTest, ::testing::Values("host", "cuda"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace distarray
