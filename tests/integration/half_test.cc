// float16 and bfloat16 arrays end to end: stored in 16 bits, computed in float32 as NumPy's
// float16 loops are. Values are checked against references that do not share the daemon's
// conversion code: the compiler's _Float16 (correctly rounded from double) for float16, and
// round-to-nearest-even of float's upper half for bfloat16, each applied to a long double result.
// A result may differ from the correctly rounded one by one unit in the last place (the daemon
// rounds a float32 result, which double rounding can move by one unit); NaN matches NaN.
#include <cmath>
#include <cstring>
#include <random>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "distarray/graph.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/compute_reference.h"
#include "tests/support/reference.h"

namespace distarray::testing {
namespace {

// ---- the 16-bit formats, independently of the daemon ------------------------------------------

uint16_t ToBits(v1::DType dtype, long double v) {
  if (dtype == v1::DTYPE_FLOAT16) {
    const _Float16 h = static_cast<_Float16>(static_cast<double>(v));
    uint16_t bits;
    std::memcpy(&bits, &h, sizeof bits);
    return bits;
  }
  const auto f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  return static_cast<uint16_t>((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

long double FromBits(v1::DType dtype, uint16_t bits) {
  if (dtype == v1::DTYPE_FLOAT16) {
    _Float16 h;
    std::memcpy(&h, &bits, sizeof bits);
    return static_cast<long double>(static_cast<float>(h));
  }
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

bool IsNaNBits(v1::DType dtype, uint16_t bits) {
  return std::isnan(static_cast<double>(FromBits(dtype, bits)));
}

// Distance in units in the last place between two non-NaN values of one format.
int64_t UlpDistance(uint16_t a, uint16_t b) {
  auto ordered = [](uint16_t x) -> int64_t {
    return (x & 0x8000) != 0 ? -static_cast<int64_t>(x & 0x7fff) : static_cast<int64_t>(x);
  };
  return std::llabs(ordered(a) - ordered(b));
}

struct HalfArray {
  v1::DType dtype;
  Shape shape;
  std::vector<uint16_t> bits;
  long double at(size_t i) const { return FromBits(dtype, bits[i]); }
};

// Random values in [lo, hi), rounded to the format.
HalfArray RandomHalf(v1::DType dtype, const Shape& shape, double lo, double hi,
                     std::mt19937_64& rng) {
  HalfArray a{dtype, shape, std::vector<uint16_t>(NumElements(shape))};
  std::uniform_real_distribution<double> value(lo, hi);
  for (uint16_t& b : a.bits) b = ToBits(dtype, value(rng));
  return a;
}

::testing::AssertionResult BitsMatch(const std::vector<uint16_t>& got, const HalfArray& want,
                                     int64_t max_ulps, const std::string& what) {
  if (got.size() != want.bits.size()) {
    return ::testing::AssertionFailure()
           << what << ": " << got.size() << " elements, want " << want.bits.size();
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const bool got_nan = IsNaNBits(want.dtype, got[i]);
    const bool want_nan = IsNaNBits(want.dtype, want.bits[i]);
    if (got_nan != want_nan || (!got_nan && UlpDistance(got[i], want.bits[i]) > max_ulps)) {
      return ::testing::AssertionFailure()
             << what << ": element " << i << " is "
             << static_cast<double>(FromBits(want.dtype, got[i])) << " (0x" << std::hex << got[i]
             << "), want " << static_cast<double>(want.at(i)) << " (0x" << want.bits[i] << std::dec
             << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

class HalfTest : public BackendTest {
 protected:
  absl::StatusOr<Array> Upload(const HalfArray& a, const v1::IndexMap& map) {
    v1::UploadHeader header;
    v1::ArraySpec* spec = header.mutable_new_array();
    for (int64_t d : a.shape) spec->mutable_shape()->add_dims(d);
    spec->set_dtype(a.dtype);
    *spec->mutable_index_map() = map;
    absl::StatusOr<v1::ArrayInfo> info =
        client().UploadBytes(header, a.bits.data(), static_cast<int64_t>(a.bits.size() * 2));
    if (!info.ok()) return info.status();
    return Array(client(), *std::move(info), /*owned=*/true);
  }

  static absl::StatusOr<std::vector<uint16_t>> Bits(const Array& a) {
    std::vector<uint16_t> out(a.size());
    absl::Status s = a.client().DownloadAll(a.info(), out.data(), a.size() * 2);
    if (!s.ok()) return s;
    return out;
  }

  // Rows split over four devices (modulo the machine's), with one row block copied twice.
  v1::IndexMap RowSplit(const Shape& shape) {
    return Split(static_cast<int>(shape.size()), 0, shape[0], {dev(0), dev(1), dev(2), dev(3)});
  }
};

TEST_P(HalfTest, EveryBitPatternRoundTripsThroughAReshard) {
  for (const v1::DType dtype : {v1::DTYPE_FLOAT16, v1::DTYPE_BFLOAT16}) {
    HalfArray all{dtype, {256, 256}, std::vector<uint16_t>(65536)};
    for (uint32_t b = 0; b < 65536; ++b) all.bits[b] = static_cast<uint16_t>(b);
    ASSERT_OK_AND_ASSIGN(Array a, Upload(all, RowSplit(all.shape)));
    EXPECT_EQ(a.info().dtype(), dtype);
    ASSERT_OK_AND_ASSIGN(Array moved, a.Reshard(Split(2, 1, 256, {dev(1), dev(0)})));
    ASSERT_OK_AND_ASSIGN(std::vector<uint16_t> got, Bits(moved));
    EXPECT_EQ(got, all.bits) << DTypeStr(dtype) << ": bits changed on the way";
  }
}

TEST_P(HalfTest, FillsRoundTheirValuesOnce) {
  for (const v1::DType dtype : {v1::DTYPE_FLOAT16, v1::DTYPE_BFLOAT16}) {
    const Shape shape = {1000};
    v1::Fill arange;
    arange.mutable_arange()->set_start(-3.3);
    arange.mutable_arange()->set_step(0.731);
    ASSERT_OK_AND_ASSIGN(Array a,
                         client().Create(shape, dtype, ArrayOpts(RowSplit(shape)), arange));
    HalfArray want{dtype, shape, std::vector<uint16_t>(1000)};
    for (int i = 0; i < 1000; ++i) want.bits[i] = ToBits(dtype, -3.3 + 0.731 * i);
    ASSERT_OK_AND_ASSIGN(std::vector<uint16_t> got, Bits(a));
    EXPECT_TRUE(BitsMatch(got, want, 0, DTypeStr(dtype) + " arange"));

    v1::Fill constant;
    constant.mutable_full()->mutable_value()->set_float_value(0.1);
    ASSERT_OK_AND_ASSIGN(Array c,
                         client().Create(shape, dtype, ArrayOpts(RowSplit(shape)), constant));
    ASSERT_OK_AND_ASSIGN(got, Bits(c));
    EXPECT_EQ(got, std::vector<uint16_t>(1000, ToBits(dtype, 0.1))) << DTypeStr(dtype);

    v1::Fill uniform;
    uniform.mutable_uniform()->set_low(-2);
    uniform.mutable_uniform()->set_high(2);
    uniform.mutable_uniform()->set_seed(5);
    ASSERT_OK_AND_ASSIGN(Array u,
                         client().Create(shape, dtype, ArrayOpts(RowSplit(shape)), uniform));
    ASSERT_OK_AND_ASSIGN(got, Bits(u));
    std::set<uint16_t> distinct(got.begin(), got.end());
    EXPECT_GT(distinct.size(), 100u) << DTypeStr(dtype) << ": uniform values are not spread";
    for (uint16_t b : got) {
      const long double v = FromBits(dtype, b);
      ASSERT_TRUE(v >= -2 && v < 2)
          << DTypeStr(dtype) << " uniform value " << static_cast<double>(v);
    }
  }
}

TEST_P(HalfTest, ValuesOutsideTheFormatAreRefused) {
  v1::Fill constant;
  constant.mutable_full()->mutable_value()->set_int_value(70000);  // above float16's 65504
  EXPECT_TRUE(StatusIs(
      (client().Create({4}, v1::DTYPE_FLOAT16, ArrayOpts(OnDevice(1, 0)), constant)).status(),
      absl::StatusCode::kInvalidArgument, {"70000"}));
  v1::Fill arange;
  arange.mutable_arange()->set_start(0);
  arange.mutable_arange()->set_step(1000);
  EXPECT_TRUE(StatusIs(
      (client().Create({100}, v1::DTYPE_FLOAT16, ArrayOpts(OnDevice(1, 0)), arange)).status(),
      absl::StatusCode::kInvalidArgument, {"float16"}));
}

// astype to and from every other dtype, through the long double value.
TEST_P(HalfTest, AstypeConvertsOnceInEachDirection) {
  std::mt19937_64 rng(21);
  for (const v1::DType dtype : {v1::DTYPE_FLOAT16, v1::DTYPE_BFLOAT16}) {
    const HalfArray a = RandomHalf(dtype, {64, 33}, -200, 200, rng);
    ASSERT_OK_AND_ASSIGN(Array on_server, Upload(a, RowSplit(a.shape)));
    for (const v1::DType to : ImplementedDTypes()) {
      const std::string what = absl::StrCat(DTypeStr(dtype), " astype ", DTypeStr(to));
      ASSERT_OK_AND_ASSIGN(Array cast, AsType(on_server, to));
      ASSERT_OK_AND_ASSIGN(HostArray got, DownloadHost(cast));
      for (size_t i = 0; i < a.bits.size(); ++i) {
        const long double want = CastValue(a.at(i), dtype, to);
        ASSERT_EQ(got.values[i], want)
            << what << " element " << i << " of " << static_cast<double>(a.at(i));
      }
      // And back: every value of another dtype rounds once into the 16-bit format.
      ASSERT_OK_AND_ASSIGN(Array back, AsType(cast, dtype));
      ASSERT_OK_AND_ASSIGN(std::vector<uint16_t> back_bits, Bits(back));
      HalfArray want{dtype, a.shape, std::vector<uint16_t>(a.bits.size())};
      for (size_t i = 0; i < a.bits.size(); ++i) want.bits[i] = ToBits(dtype, got.values[i]);
      EXPECT_TRUE(BitsMatch(back_bits, want, 0, what + " and back"));
    }
  }
}

struct UnaryCase {
  v1::ElementwiseOp op;
  long double (*fn)(long double);
  double lo, hi;
};

TEST_P(HalfTest, ElementwiseComputesInFloat32AndRoundsOnce) {
  const UnaryCase unary[] = {
      {v1::ELEMENTWISE_OP_SQRT, [](long double x) { return std::sqrt(x); }, 0, 1000},
      {v1::ELEMENTWISE_OP_EXP, [](long double x) { return std::exp(x); }, -8, 8},
      {v1::ELEMENTWISE_OP_SIN, [](long double x) { return std::sin(x); }, -10, 10},
      {v1::ELEMENTWISE_OP_LOG, [](long double x) { return std::log(x); }, 0.01, 100},
      {v1::ELEMENTWISE_OP_NEGATIVE, [](long double x) { return -x; }, -100, 100},
      {v1::ELEMENTWISE_OP_ABS, [](long double x) { return std::fabs(x); }, -100, 100},
      {v1::ELEMENTWISE_OP_FLOOR, [](long double x) { return std::floor(x); }, -100, 100},
      {v1::ELEMENTWISE_OP_TANH, [](long double x) { return std::tanh(x); }, -4, 4},
  };
  std::mt19937_64 rng(3);
  for (const v1::DType dtype : {v1::DTYPE_FLOAT16, v1::DTYPE_BFLOAT16}) {
    for (const UnaryCase& c : unary) {
      const HalfArray a = RandomHalf(dtype, {4096}, c.lo, c.hi, rng);
      ASSERT_OK_AND_ASSIGN(Array x, Upload(a, RowSplit(a.shape)));
      ASSERT_OK_AND_ASSIGN(Array r, Ufunc(c.op, {x}));
      const std::string what =
          absl::StrCat(v1::ElementwiseOp_Name(c.op), "(", DTypeStr(dtype), ")");
      ASSERT_EQ(r.info().dtype(), dtype) << what;
      HalfArray want{dtype, a.shape, std::vector<uint16_t>(a.bits.size())};
      for (size_t i = 0; i < a.bits.size(); ++i) want.bits[i] = ToBits(dtype, c.fn(a.at(i)));
      ASSERT_OK_AND_ASSIGN(std::vector<uint16_t> got, Bits(r));
      EXPECT_TRUE(BitsMatch(got, want, 1, what));
    }

    // Binary ops of two split arrays, and with a weak scalar (which takes the 16-bit dtype
    // first, as in NumPy: x + 0.1 adds the 16-bit value nearest 0.1).
    const HalfArray a = RandomHalf(dtype, {96, 40}, -50, 50, rng);
    const HalfArray b = RandomHalf(dtype, {96, 40}, 0.5, 60, rng);
    ASSERT_OK_AND_ASSIGN(Array x, Upload(a, RowSplit(a.shape)));
    ASSERT_OK_AND_ASSIGN(Array y, Upload(b, Split(2, 1, 40, {dev(2), dev(1)})));
    const long double tenth = FromBits(dtype, ToBits(dtype, 0.1));
    struct BinaryCase {
      v1::ElementwiseOp op;
      bool with_scalar;
      long double (*fn)(long double, long double);
    } binary[] = {
        {v1::ELEMENTWISE_OP_ADD, false, [](long double p, long double q) { return p + q; }},
        {v1::ELEMENTWISE_OP_SUBTRACT, false, [](long double p, long double q) { return p - q; }},
        {v1::ELEMENTWISE_OP_MULTIPLY, false, [](long double p, long double q) { return p * q; }},
        {v1::ELEMENTWISE_OP_DIVIDE, false, [](long double p, long double q) { return p / q; }},
        {v1::ELEMENTWISE_OP_MAXIMUM, false,
         [](long double p, long double q) { return std::max(p, q); }},
        {v1::ELEMENTWISE_OP_POWER, false,
         [](long double p, long double q) { return std::pow(std::fabs(p), q / 30); }},
        {v1::ELEMENTWISE_OP_ADD, true, [](long double p, long double q) { return p + q; }},
        {v1::ELEMENTWISE_OP_MULTIPLY, true, [](long double p, long double q) { return p * q; }},
    };
    for (const BinaryCase& c : binary) {
      const std::string what = absl::StrCat(v1::ElementwiseOp_Name(c.op), "(", DTypeStr(dtype),
                                            c.with_scalar ? ", 0.1)" : ", same)");
      absl::StatusOr<Array> r;
      absl::StatusOr<Array> abs_x, scaled_y;
      if (c.op == v1::ELEMENTWISE_OP_POWER) {
        // pow(|x|, y / 30): exponents in [0.017, 2], bases in [0, 50].
        abs_x = Ufunc(v1::ELEMENTWISE_OP_ABS, {x});
        ASSERT_TRUE(abs_x.ok()) << abs_x.status();
        scaled_y = Ufunc(v1::ELEMENTWISE_OP_DIVIDE, {y, 30});
        ASSERT_TRUE(scaled_y.ok()) << scaled_y.status();
        r = Ufunc(c.op, {*abs_x, *scaled_y});
      } else if (c.with_scalar) {
        r = Ufunc(c.op, {x, 0.1});
      } else {
        r = Ufunc(c.op, {x, y});
      }
      ASSERT_TRUE(r.ok()) << what << ": " << r.status();
      ASSERT_EQ(r->info().dtype(), dtype) << what;
      HalfArray want{dtype, a.shape, std::vector<uint16_t>(a.bits.size())};
      for (size_t i = 0; i < a.bits.size(); ++i) {
        long double q = c.with_scalar ? tenth : b.at(i);
        if (c.op == v1::ELEMENTWISE_OP_POWER) {
          // The exponent the daemon used is y / 30 rounded to the format.
          q = FromBits(dtype, ToBits(dtype, b.at(i) / 30)) * 30;
        }
        want.bits[i] = ToBits(dtype, c.fn(a.at(i), q));
      }
      ASSERT_OK_AND_ASSIGN(std::vector<uint16_t> got, Bits(*r));
      EXPECT_TRUE(BitsMatch(got, want, 1, what));
    }

    // Comparisons and predicates give bool.
    ASSERT_OK_AND_ASSIGN(Array less, Ufunc(v1::ELEMENTWISE_OP_LESS, {x, y}));
    ASSERT_EQ(less.info().dtype(), v1::DTYPE_BOOL);
    ASSERT_OK_AND_ASSIGN(HostArray less_values, DownloadHost(less));
    for (size_t i = 0; i < a.bits.size(); ++i) {
      ASSERT_EQ(less_values.values[i], a.at(i) < b.at(i) ? 1 : 0)
          << DTypeStr(dtype) << " less " << i;
    }
  }
}

TEST_P(HalfTest, PromotionFollowsNumPy) {
  std::mt19937_64 rng(9);
  const HalfArray h = RandomHalf(v1::DTYPE_FLOAT16, {64}, -4, 4, rng);
  const HalfArray bh = RandomHalf(v1::DTYPE_BFLOAT16, {64}, -4, 4, rng);
  ASSERT_OK_AND_ASSIGN(Array x, Upload(h, OnDevice(1, dev(1))));
  ASSERT_OK_AND_ASSIGN(Array bx, Upload(bh, OnDevice(1, dev(1))));
  std::vector<int8_t> small(64, -3);
  ASSERT_OK_AND_ASSIGN(Array i8,
                       client().Upload<int8_t>(small, {64}, ArrayOpts(OnDevice(1, dev(0)))));
  std::vector<float> wide(64, 0.25f);
  ASSERT_OK_AND_ASSIGN(Array f32,
                       client().Upload<float>(wide, {64}, ArrayOpts(OnDevice(1, dev(0)))));

  ASSERT_OK_AND_ASSIGN(Array h_i8, Ufunc(v1::ELEMENTWISE_OP_ADD, {x, i8}));
  EXPECT_EQ(h_i8.info().dtype(), v1::DTYPE_FLOAT16);
  ASSERT_OK_AND_ASSIGN(Array h_f32, Ufunc(v1::ELEMENTWISE_OP_ADD, {x, f32}));
  EXPECT_EQ(h_f32.info().dtype(), v1::DTYPE_FLOAT32);
  ASSERT_OK_AND_ASSIGN(Array h_bh, Ufunc(v1::ELEMENTWISE_OP_ADD, {x, bx}));
  EXPECT_EQ(h_bh.info().dtype(), v1::DTYPE_FLOAT32);
  ASSERT_OK_AND_ASSIGN(HostArray sums, DownloadHost(h_bh));
  for (int i = 0; i < 64; ++i) {
    const long double want = static_cast<float>(h.at(i) + bh.at(i));
    ASSERT_EQ(sums.values[i], want) << i;
  }
  // sqrt of int8 computes in float16, as NumPy's loop does.
  std::vector<int8_t> squares = {0, 1, 4, 9, 16, 25, 36, 49, 64, 81, 100, 121};
  ASSERT_OK_AND_ASSIGN(Array sq, client().Upload<int8_t>(squares, {12}, ArrayOpts(OnDevice(1, 0))));
  ASSERT_OK_AND_ASSIGN(Array roots, Ufunc(v1::ELEMENTWISE_OP_SQRT, {sq}));
  EXPECT_EQ(roots.info().dtype(), v1::DTYPE_FLOAT16);
  ASSERT_OK_AND_ASSIGN(std::vector<uint16_t> root_bits, Bits(roots));
  for (int i = 0; i < 12; ++i) EXPECT_EQ(FromBits(v1::DTYPE_FLOAT16, root_bits[i]), i);
}

TEST_P(HalfTest, ReductionsAccumulateInFloat32) {
  std::mt19937_64 rng(13);
  for (const v1::DType dtype : {v1::DTYPE_FLOAT16, v1::DTYPE_BFLOAT16}) {
    const HalfArray a = RandomHalf(dtype, {200, 30}, -2, 2, rng);
    ASSERT_OK_AND_ASSIGN(Array x, Upload(a, RowSplit(a.shape)));
    for (const std::vector<int32_t>& axes : std::vector<std::vector<int32_t>>{{}, {0}, {1}}) {
      const int64_t outer = axes.empty() ? 1 : (axes[0] == 0 ? 30 : 200);
      for (const v1::ReduceOp op :
           {v1::REDUCE_OP_SUM, v1::REDUCE_OP_MEAN, v1::REDUCE_OP_MAX, v1::REDUCE_OP_ARGMIN}) {
        const std::string what = absl::StrCat(ReduceName(op), "(", DTypeStr(dtype), ", axes=[",
                                              absl::StrJoin(axes, ","), "])");
        ASSERT_OK_AND_ASSIGN(Array r, Reduce(x, op, axes, false, /*combine=*/true));
        ASSERT_EQ(r.info().dtype(), op == v1::REDUCE_OP_ARGMIN ? v1::DTYPE_INT64 : dtype) << what;
        // The reference: long double over each output's elements.
        std::vector<long double> want(outer);
        for (int64_t o = 0; o < outer; ++o) {
          long double sum = 0, abs_sum = 0, best = INFINITY, worst = -INFINITY;
          int64_t argmin = -1, count = 0;
          for (int64_t i = 0; i < 200; ++i) {
            for (int64_t j = 0; j < 30; ++j) {
              if ((axes.size() == 1 && axes[0] == 0 && j != o) ||
                  (axes.size() == 1 && axes[0] == 1 && i != o)) {
                continue;
              }
              const long double v = a.at(i * 30 + j);
              const int64_t flat = axes.empty() ? i * 30 + j : (axes[0] == 0 ? i : j);
              sum += v;
              abs_sum += std::fabs(v);
              ++count;
              worst = std::max(worst, v);
              if (v < best) {
                best = v;
                argmin = flat;
              }
            }
          }
          want[o] = op == v1::REDUCE_OP_SUM    ? sum
                    : op == v1::REDUCE_OP_MEAN ? sum / count
                    : op == v1::REDUCE_OP_MAX  ? worst
                                               : argmin;
          if (op == v1::REDUCE_OP_SUM || op == v1::REDUCE_OP_MEAN) {
            // Float32 partials, each rounded to the format per device, then combined and rounded
            // again: a few units of the format's epsilon times the sum of magnitudes.
            const long double eps = dtype == v1::DTYPE_FLOAT16 ? 0x1p-10L : 0x1p-7L;
            const long double tol =
                4 * eps * (op == v1::REDUCE_OP_MEAN ? abs_sum / count : abs_sum) + eps;
            const long double got = [&] {
              auto bits = Bits(r);
              return bits.ok() ? FromBits(dtype, (*bits)[o]) : NAN;
            }();
            ASSERT_NEAR(static_cast<double>(got), static_cast<double>(want[o]),
                        static_cast<double>(tol))
                << what << " output " << o;
          }
        }
        if (op == v1::REDUCE_OP_MAX) {
          ASSERT_OK_AND_ASSIGN(std::vector<uint16_t> got, Bits(r));
          for (int64_t o = 0; o < outer; ++o) {
            ASSERT_EQ(FromBits(dtype, got[o]), want[o]) << what << " output " << o;
          }
        } else if (op == v1::REDUCE_OP_ARGMIN) {
          ASSERT_OK_AND_ASSIGN(HostArray got, DownloadHost(r));
          for (int64_t o = 0; o < outer; ++o) {
            ASSERT_EQ(got.values[o], want[o]) << what << " output " << o;
          }
        }
      }
    }
  }
}

TEST_P(HalfTest, PartialResultsCombineInTheirMode) {
  // Column sums of a row-split float16 matrix, uncombined: a SUM-mode array whose devices each
  // hold a partial of every column; change_mode and download combine them.
  std::mt19937_64 rng(17);
  const HalfArray a = RandomHalf(v1::DTYPE_FLOAT16, {64, 8}, -8, 8, rng);
  ASSERT_OK_AND_ASSIGN(Array x, Upload(a, RowSplit(a.shape)));
  ASSERT_OK_AND_ASSIGN(Array partial, Reduce(x, v1::REDUCE_OP_SUM, {0}, false, /*combine=*/false));
  EXPECT_EQ(partial.info().dtype(), v1::DTYPE_FLOAT16);
  if (devices() > 1) EXPECT_EQ(partial.info().mode(), v1::MODE_SUM);
  ASSERT_OK_AND_ASSIGN(Array combined, partial.ChangeMode(v1::MODE_REPLICA));
  // change_mode and download may add the partials in different orders (per device first, or
  // chunk by chunk), each rounding to float16: both are checked against the reference.
  ASSERT_OK_AND_ASSIGN(std::vector<uint16_t> changed, Bits(combined));
  ASSERT_OK_AND_ASSIGN(std::vector<uint16_t> downloaded, Bits(partial));
  for (int j = 0; j < 8; ++j) {
    long double sum = 0, abs_sum = 0;
    for (int i = 0; i < 64; ++i) {
      sum += a.at(i * 8 + j);
      abs_sum += std::fabs(a.at(i * 8 + j));
    }
    const double tolerance = static_cast<double>(8 * 0x1p-10L * abs_sum);
    EXPECT_NEAR(static_cast<double>(FromBits(v1::DTYPE_FLOAT16, changed[j])),
                static_cast<double>(sum), tolerance)
        << "change_mode, column " << j;
    EXPECT_NEAR(static_cast<double>(FromBits(v1::DTYPE_FLOAT16, downloaded[j])),
                static_cast<double>(sum), tolerance)
        << "download, column " << j;
  }

  // A REPLICA float16 array into MAX mode and back keeps every value.
  ASSERT_OK_AND_ASSIGN(Array as_max, x.ChangeMode(v1::MODE_MAX));
  ASSERT_OK_AND_ASSIGN(Array back, as_max.ChangeMode(v1::MODE_REPLICA));
  ASSERT_OK_AND_ASSIGN(std::vector<uint16_t> back_bits, Bits(back));
  EXPECT_EQ(back_bits, a.bits);
}

// Products of 16-bit floats multiply and accumulate in float32 (cuBLAS's 16-bit GEMM with a
// float32 compute type; OpenBLAS's sgemm on the host) and round once; a product split along
// the shared axis rounds each device's partial to the 16-bit dtype before they add.
TEST_P(HalfTest, MatmulAccumulatesInFloat32) {
  std::mt19937_64 rng(23);
  constexpr int64_t kM = 48, kK = 40, kN = 24;
  for (const v1::DType dtype : {v1::DTYPE_FLOAT16, v1::DTYPE_BFLOAT16}) {
    const HalfArray a = RandomHalf(dtype, {kM, kK}, -2, 2, rng);
    const HalfArray b = RandomHalf(dtype, {kK, kN}, -2, 2, rng);
    const long double eps = dtype == v1::DTYPE_FLOAT16 ? 0x1p-10L : 0x1p-7L;
    struct Layouts {
      const char* name;
      v1::IndexMap a, b;
    } layouts[] = {
        {"rows of a split, b on one device", RowSplit(a.shape), OnDevice(2, dev(1))},
        {"the shared axis split (partial sums)", Split(2, 1, kK, {dev(0), dev(1)}),
         Split(2, 0, kK, {dev(0), dev(1)})},
    };
    for (const Layouts& layout : layouts) {
      const std::string what = absl::StrCat(DTypeStr(dtype), " matmul, ", layout.name);
      ASSERT_OK_AND_ASSIGN(Array x, Upload(a, layout.a));
      ASSERT_OK_AND_ASSIGN(Array y, Upload(b, layout.b));
      ASSERT_OK_AND_ASSIGN(Array product, Matmul(x, y));
      ASSERT_EQ(product.info().dtype(), dtype) << what;
      ASSERT_OK_AND_ASSIGN(std::vector<uint16_t> got, Bits(product));
      for (int64_t i = 0; i < kM; ++i) {
        for (int64_t j = 0; j < kN; ++j) {
          long double sum = 0, magnitude = 0;
          for (int64_t p = 0; p < kK; ++p) {
            sum += a.at(i * kK + p) * b.at(p * kN + j);
            magnitude += std::fabs(a.at(i * kK + p) * b.at(p * kN + j));
          }
          ASSERT_NEAR(static_cast<double>(FromBits(dtype, got[i * kN + j])),
                      static_cast<double>(sum), static_cast<double>(3 * eps * magnitude))
              << what << " element (" << i << ", " << j << ")";
        }
      }
    }
  }
}

// A RunGraph loop over float16 and bfloat16 arrays: each op computes in float32 and rounds once
// to its 16-bit dtype, fused into one kernel per iteration (the CUDA backend, where each device
// holds one chunk) or op by op (the host backend; several chunks on a device), so every layout
// gives the bits of a host model that rounds the same way.
TEST_P(HalfTest, LoopsOverSixteenBitArraysRoundEveryOpAsTheirStatementsDo) {
  namespace g = graph;
  constexpr int64_t n = 4099;
  std::mt19937_64 rng(17);
  const HalfArray x0 = RandomHalf(v1::DTYPE_FLOAT16, {n}, 0.5, 2.0, rng);
  const HalfArray y0 = RandomHalf(v1::DTYPE_BFLOAT16, {n}, -4.0, 4.0, rng);
  const HalfArray k0{v1::DTYPE_FLOAT16, {n}, std::vector<uint16_t>(n, 0)};
  // while all(k < 20): x = x * 1.01 + 0.25; y = y * 0.75 + 0.1; k = k + 1
  g::ProgramBuilder p;
  g::Vars out = p.WhileLoop([](auto v) { return g::All(v[2] < 20.0); },
                            [](auto v) {
                              return g::Vars{v[0] * 1.01 + 0.25, v[1] * 0.75 + 0.1, v[2] + 1.0};
                            },
                            {p.Input("x"), p.Input("y"), p.Input("k")}, 1000);
  p.Output("x", out[0]);
  p.Output("y", out[1]);

  // The host model: weak scalars take the array's dtype first, each op's float32 result is
  // rounded to the 16-bit dtype.
  auto model = [](HalfArray a, double scale, double offset) {
    auto round = [&](float v) { return ToBits(a.dtype, v); };
    auto value = [&](uint16_t bits) { return static_cast<float>(FromBits(a.dtype, bits)); };
    const float s = value(round(static_cast<float>(scale)));
    const float o = value(round(static_cast<float>(offset)));
    for (int it = 0; it < 20; ++it) {
      for (uint16_t& b : a.bits) b = round(value(round(value(b) * s)) + o);
    }
    return a;
  };
  const HalfArray want_x = model(x0, 1.01, 0.25), want_y = model(y0, 0.75, 0.1);

  const bool cuda = absl::StartsWith(GetParam(), "cuda");
  const std::vector<std::pair<std::string, v1::IndexMap>> layouts = {
      {"one device", Split(1, 0, n, {dev(0)})},
      {"two devices", Split(1, 0, n, {dev(0), dev(1)})},
      {"split", Split(1, 0, n, {dev(0), dev(1), dev(2)})}};
  for (const auto& [label, map] : layouts) {
    SCOPED_TRACE(label);
    ASSERT_OK_AND_ASSIGN(Array x, Upload(x0, map));
    ASSERT_OK_AND_ASSIGN(Array y, Upload(y0, map));
    ASSERT_OK_AND_ASSIGN(Array k, Upload(k0, map));
    ASSERT_OK_AND_ASSIGN(GraphRun run,
                         client().RunGraph(p.program(), {{"x", &x}, {"y", &y}, {"k", &k}}));
    EXPECT_EQ(run.iterations, 20);
    std::set<int> devices;
    for (const auto& chunk : map.chunks()) devices.insert(chunk.device());
    const bool one_chunk_per_device = static_cast<int>(devices.size()) == map.chunks_size();
    // Devices agreeing through NCCL ("cuda_nccl") record loops over several unfused.
    const bool fusable = devices.size() == 1 || GetParam() == "cuda";
    EXPECT_EQ(run.fused_loops, cuda && one_chunk_per_device && fusable ? 1 : 0);
    ASSERT_OK_AND_ASSIGN(std::vector<uint16_t> got_x, Bits(run.outputs.at("x")));
    ASSERT_OK_AND_ASSIGN(std::vector<uint16_t> got_y, Bits(run.outputs.at("y")));
    EXPECT_EQ(got_x, want_x.bits);
    EXPECT_EQ(got_y, want_y.bits);
  }
}

TEST_P(HalfTest, WhatIsNotBuiltSaysSo) {
  std::mt19937_64 rng(19);
  const HalfArray a = RandomHalf(v1::DTYPE_FLOAT16, {16, 16}, -1, 1, rng);
  ASSERT_OK_AND_ASSIGN(Array x, Upload(a, OnDevice(2, dev(0))));
  EXPECT_TRUE(StatusIs((Ufunc(v1::ELEMENTWISE_OP_BITWISE_AND, {x, x})).status(),
                       absl::StatusCode::kInvalidArgument, {"float16"}));
}

DISTARRAY_INSTANTIATE_BACKENDS(HalfTest);

}  // namespace
}  // namespace distarray::testing
