// The tests' own host model of the compute RPCs (Elementwise, Reduce), independent of the
// daemon's code: NumPy 2's type promotion (NEP 50 weak scalars), each ufunc's loop dtype and
// value rule, astype's casts, the reductions and their result dtypes, plus helpers to move
// arrays of any dtype between the host and the daemon and to compare results.
//
// Values are held as long double whatever the dtype: its 64-bit significand holds every value of
// every implemented dtype (int64, uint64, float32, float64) exactly, so the model computes
// integers exactly (wrapping modulo 2^bits through 128-bit arithmetic) and floats with 11 more
// bits than float64.
#ifndef DISTARRAY_TESTS_SUPPORT_COMPUTE_REFERENCE_H_
#define DISTARRAY_TESTS_SUPPORT_COMPUTE_REFERENCE_H_

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "distarray/client.h"
#include "tests/support/reference.h"

namespace distarray::testing {

using Int128 = __int128;
using UInt128 = unsigned __int128;

// ---- dtypes ------------------------------------------------------------------------------------

// The dtypes the generic models cover (float16 and bfloat16 have their own tests in
// half_test.cc; float16 is also the result of NumPy's float loops on bool and 8-bit integers).
inline const std::vector<v1::DType>& ImplementedDTypes() {
  static const std::vector<v1::DType> kAll = {v1::DTYPE_BOOL,    v1::DTYPE_INT8,   v1::DTYPE_INT16,
                                              v1::DTYPE_INT32,   v1::DTYPE_INT64,  v1::DTYPE_UINT8,
                                              v1::DTYPE_UINT16,  v1::DTYPE_UINT32, v1::DTYPE_UINT64,
                                              v1::DTYPE_FLOAT32, v1::DTYPE_FLOAT64};
  return kAll;
}

inline bool IsSignedDType(v1::DType d) {
  return d == v1::DTYPE_INT8 || d == v1::DTYPE_INT16 || d == v1::DTYPE_INT32 ||
         d == v1::DTYPE_INT64;
}
inline bool IsUnsignedDType(v1::DType d) {
  return d == v1::DTYPE_UINT8 || d == v1::DTYPE_UINT16 || d == v1::DTYPE_UINT32 ||
         d == v1::DTYPE_UINT64;
}
inline bool IsIntDType(v1::DType d) { return IsSignedDType(d) || IsUnsignedDType(d); }
inline bool IsFloatDType(v1::DType d) {
  return d == v1::DTYPE_FLOAT16 || d == v1::DTYPE_BFLOAT16 || d == v1::DTYPE_FLOAT32 ||
         d == v1::DTYPE_FLOAT64;
}

inline int DTypeBits(v1::DType d) {
  switch (d) {
    case v1::DTYPE_BOOL:
    case v1::DTYPE_INT8:
    case v1::DTYPE_UINT8:
      return 8;
    case v1::DTYPE_INT16:
    case v1::DTYPE_UINT16:
    case v1::DTYPE_FLOAT16:
    case v1::DTYPE_BFLOAT16:
      return 16;
    case v1::DTYPE_INT32:
    case v1::DTYPE_UINT32:
    case v1::DTYPE_FLOAT32:
      return 32;
    default:
      return 64;
  }
}

// NumPy's name of a dtype ("int32"), as the daemon's messages spell it.
inline std::string DTypeStr(v1::DType d) {
  std::string name = v1::DType_Name(d);
  if (name.rfind("DTYPE_", 0) == 0) name = name.substr(6);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

inline v1::DType SignedOfBits(int bits) {
  switch (bits) {
    case 8:
      return v1::DTYPE_INT8;
    case 16:
      return v1::DTYPE_INT16;
    case 32:
      return v1::DTYPE_INT32;
    default:
      return v1::DTYPE_INT64;
  }
}

// Calls fn(T{}) with the C++ type of an implemented dtype.
template <typename Fn>
decltype(auto) VisitDType(v1::DType d, Fn&& fn) {
  switch (d) {
    case v1::DTYPE_BOOL:
      return fn(bool{});
    case v1::DTYPE_INT8:
      return fn(int8_t{});
    case v1::DTYPE_INT16:
      return fn(int16_t{});
    case v1::DTYPE_INT32:
      return fn(int32_t{});
    case v1::DTYPE_INT64:
      return fn(int64_t{});
    case v1::DTYPE_UINT8:
      return fn(uint8_t{});
    case v1::DTYPE_UINT16:
      return fn(uint16_t{});
    case v1::DTYPE_UINT32:
      return fn(uint32_t{});
    case v1::DTYPE_UINT64:
      return fn(uint64_t{});
    case v1::DTYPE_FLOAT32:
      return fn(float{});
    case v1::DTYPE_FLOAT16:
      return fn(_Float16{});
    default:
      if (d != v1::DTYPE_FLOAT64) ADD_FAILURE() << "no C++ type for dtype " << DTypeStr(d);
      return fn(double{});
  }
}

// The range of an integer or bool dtype.
inline long double IntMin(v1::DType d) {
  return VisitDType(d, [](auto t) -> long double {
    using T = decltype(t);
    return static_cast<long double>(std::numeric_limits<T>::lowest());
  });
}
inline long double IntMax(v1::DType d) {
  return VisitDType(d, [](auto t) -> long double {
    using T = decltype(t);
    return static_cast<long double>(std::numeric_limits<T>::max());
  });
}

// ---- NumPy 2 promotion -------------------------------------------------------------------------

// numpy.result_type(a, b) over bool, the integers and float32/float64.
inline v1::DType ResultType(v1::DType a, v1::DType b) {
  if (a == b) return a;
  if (a == v1::DTYPE_BOOL) return b;
  if (b == v1::DTYPE_BOOL) return a;
  if (IsFloatDType(a) && IsFloatDType(b)) return DTypeBits(a) >= DTypeBits(b) ? a : b;
  if (IsFloatDType(a) || IsFloatDType(b)) {
    const v1::DType f = IsFloatDType(a) ? a : b;
    const v1::DType i = IsFloatDType(a) ? b : a;
    if (f == v1::DTYPE_FLOAT64) return f;
    return DTypeBits(i) <= 16 ? v1::DTYPE_FLOAT32 : v1::DTYPE_FLOAT64;  // float32 with int32: f8
  }
  if (IsSignedDType(a) == IsSignedDType(b)) return DTypeBits(a) >= DTypeBits(b) ? a : b;
  const v1::DType s = IsSignedDType(a) ? a : b;
  const v1::DType u = IsSignedDType(a) ? b : a;
  if (DTypeBits(s) > DTypeBits(u)) return s;
  if (DTypeBits(u) < 64) return SignedOfBits(2 * DTypeBits(u));
  return v1::DTYPE_FLOAT64;  // int64 with uint64
}

enum class ScalarKind { kBool, kInt, kFloat };

inline ScalarKind KindOf(const v1::Scalar& s) {
  switch (s.value_case()) {
    case v1::Scalar::kBoolValue:
      return ScalarKind::kBool;
    case v1::Scalar::kFloatValue:
      return ScalarKind::kFloat;
    default:
      return ScalarKind::kInt;
  }
}

inline long double ValueOf(const v1::Scalar& s) {
  switch (s.value_case()) {
    case v1::Scalar::kBoolValue:
      return s.bool_value() ? 1 : 0;
    case v1::Scalar::kIntValue:
      return static_cast<long double>(s.int_value());
    case v1::Scalar::kUintValue:
      return static_cast<long double>(s.uint_value());
    default:
      return s.float_value();
  }
}

// A weak (Python) scalar with arrays of dtype `d` (NEP 50): it takes the arrays' dtype, except
// that a float scalar lifts bool and integer arrays to float64 and an int scalar lifts bool to
// int64.
inline v1::DType WeakScalarResult(v1::DType d, ScalarKind kind) {
  if (kind == ScalarKind::kFloat && !IsFloatDType(d)) return v1::DTYPE_FLOAT64;
  if (kind == ScalarKind::kInt && d == v1::DTYPE_BOOL) return v1::DTYPE_INT64;
  return d;
}

// The float loop NumPy picks for a float-only ufunc on `d`: bool and 8-bit integers float16,
// 16-bit integers float32, wider integers float64.
inline v1::DType FloatLoopFor(v1::DType d) {
  if (IsFloatDType(d)) return d;
  if (DTypeBits(d) <= 8) return v1::DTYPE_FLOAT16;
  if (DTypeBits(d) == 16) return v1::DTYPE_FLOAT32;
  return v1::DTYPE_FLOAT64;
}

// ---- values and casts --------------------------------------------------------------------------

// The integer dtype `d`'s value with these low bits (two's complement for signed dtypes).
inline long double WrapInt(v1::DType d, UInt128 bits) {
  const int w = DTypeBits(d);
  const UInt128 low = bits & ((UInt128(1) << w) - 1);
  if (IsSignedDType(d) && ((low >> (w - 1)) & 1)) {
    return static_cast<long double>(static_cast<Int128>(low) - (Int128(1) << w));
  }
  return static_cast<long double>(low);
}
// An integral value (|x| <= 2^64) as 128 bits, two's complement.
inline UInt128 BitsOf(long double x) { return static_cast<UInt128>(static_cast<Int128>(x)); }

// numpy's astype (unsafe casting) with the API's choices for what C leaves undefined: float to
// integer truncates and saturates, NaN becomes 0; integer to integer wraps; to bool is != 0.
inline long double CastValue(long double x, v1::DType from, v1::DType to) {
  if (to == v1::DTYPE_BOOL) return x != 0 ? 1 : 0;  // NaN is true
  if (to == v1::DTYPE_FLOAT32) return static_cast<float>(x);
  if (to == v1::DTYPE_FLOAT16) return static_cast<float>(static_cast<_Float16>(x));
  if (to == v1::DTYPE_FLOAT64) return static_cast<double>(x);
  if (IsFloatDType(from)) {
    if (std::isnan(x)) return 0;
    return std::clamp(std::trunc(x), IntMin(to), IntMax(to));
  }
  return WrapInt(to, BitsOf(x));
}

// An array on the host: its dtype, shape and C-order values.
struct HostArray {
  v1::DType dtype = v1::DTYPE_FLOAT64;
  Shape shape;
  std::vector<long double> values;
};

inline std::string ShapeStr(const Shape& shape) {
  return absl::StrCat("(", absl::StrJoin(shape, ", "), shape.size() == 1 ? ",)" : ")");
}
inline std::string Describe(const HostArray& a) {
  return absl::StrCat(DTypeStr(a.dtype), ShapeStr(a.shape));
}

// ArrayOptions with every field given.
inline ArrayOptions ArrayOpts(const v1::IndexMap& map, v1::Mode mode = v1::MODE_REPLICA,
                              std::string name = "") {
  ArrayOptions options;
  options.index_map = map;
  options.mode = mode;
  options.name = std::move(name);
  return options;
}

inline absl::StatusOr<Array> UploadHost(const Client& client, const HostArray& a,
                                        const v1::IndexMap& map, v1::Mode mode = v1::MODE_REPLICA) {
  return VisitDType(a.dtype, [&](auto t) -> absl::StatusOr<Array> {
    using T = decltype(t);
    auto data = std::make_unique<T[]>(a.values.size());
    for (size_t i = 0; i < a.values.size(); ++i) data[i] = static_cast<T>(a.values[i]);
    return client.Upload<T>(std::span<const T>(data.get(), a.values.size()), a.shape,
                            ArrayOpts(map, mode));
  });
}

inline absl::StatusOr<HostArray> DownloadHost(const Array& a) {
  HostArray out{a.info().dtype(), a.shape(), {}};
  const absl::Status status = VisitDType(out.dtype, [&](auto t) -> absl::Status {
    using T = decltype(t);
    auto values = a.Download<T>();
    if (!values.ok()) return values.status();
    out.values.assign(values->begin(), values->end());
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return out;
}

// What an uncovered element of dtype `d` reads as in `mode`.
inline long double ModeIdentity(v1::DType d, v1::Mode mode) {
  return VisitDType(d, [&](auto t) -> long double {
    using T = decltype(t);
    return static_cast<long double>(Identity<T>(mode));
  });
}

// The logical values of `a` uploaded in `map` and `mode` (each value stored once; uncovered
// elements hold the mode's identity).
inline HostArray Logical(const HostArray& a, const TestMap& map, v1::Mode mode = v1::MODE_REPLICA) {
  HostArray out = a;
  const std::vector<int> copies = CopiesPerElement(map, a.shape);
  const long double identity = ModeIdentity(a.dtype, mode);
  for (size_t i = 0; i < out.values.size(); ++i) {
    if (copies[i] == 0) out.values[i] = identity;
  }
  return out;
}

// A normalized index map (as ArrayInfo returns it: explicit bounds, positive steps) as a TestMap.
inline TestMap FromProto(const v1::IndexMap& map, const Shape& shape) {
  TestMap out;
  for (const v1::Chunk& chunk : map.chunks()) {
    TestChunk c{chunk.device(), {}};
    for (int d = 0; d < chunk.slices_size() && d < static_cast<int>(shape.size()); ++d) {
      const v1::Slice& s = chunk.slices(d);
      const int64_t step = s.has_step() ? s.step() : 1;
      EXPECT_GT(step, 0) << "ArrayInfo.index_map is not normalized: " << map.ShortDebugString();
      const int64_t start = s.has_start() ? s.start() : 0;
      const int64_t stop = s.has_stop() ? s.stop() : shape[d];
      c.axes.push_back(AxisSlice{start, stop, std::max<int64_t>(step, 1)});
    }
    out.push_back(c);
  }
  return out;
}

// Which elements (C order) an index map covers.
inline std::vector<bool> Covered(const v1::IndexMap& map, const Shape& shape) {
  const std::vector<int> copies = CopiesPerElement(FromProto(map, shape), shape);
  std::vector<bool> out(copies.size());
  for (size_t i = 0; i < copies.size(); ++i) out[i] = copies[i] > 0;
  return out;
}

// ---- random inputs -----------------------------------------------------------------------------

// Where random values come from: floats uniform in [float_lo, float_hi]; integers (and bools) in
// [int_lo, int_hi] within the dtype's range, a mix of its edge values (the bounds, 0, +-1),
// small values and uniform draws (over the whole range where the bounds are infinite).
struct Domain {
  long double float_lo = -100, float_hi = 100;
  long double int_lo = -std::numeric_limits<long double>::infinity();
  long double int_hi = std::numeric_limits<long double>::infinity();
};

inline long double RandomElement(v1::DType d, const Domain& dom, std::mt19937_64& rng) {
  if (IsFloatDType(d)) {
    const double v = std::uniform_real_distribution<double>(static_cast<double>(dom.float_lo),
                                                            static_cast<double>(dom.float_hi))(rng);
    return CastValue(v, v1::DTYPE_FLOAT64, d);
  }
  const long double lo = std::max(dom.int_lo, IntMin(d));
  const long double hi = std::min(dom.int_hi, IntMax(d));
  auto uniform = [&](long double a, long double b) -> long double {
    if (a >= 0) {
      return static_cast<long double>(std::uniform_int_distribution<uint64_t>(
          static_cast<uint64_t>(a), static_cast<uint64_t>(b))(rng));
    }
    return static_cast<long double>(std::uniform_int_distribution<int64_t>(
        static_cast<int64_t>(a), static_cast<int64_t>(b))(rng));
  };
  switch (rng() % 8) {
    case 0: {
      std::vector<long double> edges;
      for (long double e : {lo, hi, lo + 1, hi - 1, 0.0L, 1.0L, -1.0L}) {
        if (e >= lo && e <= hi) edges.push_back(e);
      }
      return edges[rng() % edges.size()];
    }
    case 1:
    case 2:
      if (std::max(lo, -10.0L) <= std::min(hi, 10.0L)) {
        return uniform(std::max(lo, -10.0L), std::min(hi, 10.0L));
      }
      return uniform(lo, hi);
    default:
      return uniform(lo, hi);
  }
}

inline HostArray RandomHost(v1::DType d, const Shape& shape, std::mt19937_64& rng,
                            const Domain& dom = {}) {
  HostArray a{d, shape, std::vector<long double>(NumElements(shape))};
  for (long double& v : a.values) v = RandomElement(d, dom, rng);
  return a;
}

// A scalar operand holding `value` as the kind a Python scalar of that value would have in an op
// with `d` arrays: bool for bool, int for integers (uint_value above int64), float for floats.
inline v1::Scalar ScalarFor(v1::DType d, long double value) {
  v1::Scalar s;
  if (d == v1::DTYPE_BOOL) {
    s.set_bool_value(value != 0);
  } else if (IsFloatDType(d)) {
    s.set_float_value(static_cast<double>(value));
  } else if (value > static_cast<long double>(std::numeric_limits<int64_t>::max())) {
    s.set_uint_value(static_cast<uint64_t>(value));
  } else {
    s.set_int_value(static_cast<int64_t>(value));
  }
  return s;
}

// ---- comparing ---------------------------------------------------------------------------------

inline std::string Num(long double v) {
  std::ostringstream os;
  os << std::setprecision(21) << v;
  return os.str();
}

// Whether `got` (a value of `dtype`) matches the reference `want`: integers and bools exactly;
// floats within rel * |want| or `abs_tol` (NaN matches NaN; a reference that rounds to an
// infinity in `dtype` must be that infinity).
inline bool ValueMatches(v1::DType dtype, long double got, long double want, long double rel,
                         long double abs_tol = 0) {
  if (!IsFloatDType(dtype)) return got == want;
  if (std::isnan(want)) return std::isnan(got);
  if (std::isnan(got)) return false;
  const long double rounded = CastValue(want, v1::DTYPE_FLOAT64, dtype);
  if (std::isinf(rounded) || std::isinf(got)) return got == rounded;
  const long double tiny = dtype == v1::DTYPE_FLOAT16   ? 0x1p-14L
                           : dtype == v1::DTYPE_FLOAT32 ? FLT_MIN
                                                        : DBL_MIN;
  return std::fabs(got - want) <= std::max(rel * std::max(std::fabs(want), tiny), abs_tol);
}

// `got` has want's dtype, shape and values (element i within abs_tol[i] where given).
inline ::testing::AssertionResult ValuesMatch(const HostArray& got, const HostArray& want,
                                              long double rel,
                                              const std::vector<long double>* abs_tol = nullptr) {
  if (got.dtype != want.dtype) {
    return ::testing::AssertionFailure()
           << "dtype " << DTypeStr(got.dtype) << ", want " << DTypeStr(want.dtype);
  }
  if (got.shape != want.shape) {
    return ::testing::AssertionFailure()
           << "shape " << ShapeStr(got.shape) << ", want " << ShapeStr(want.shape);
  }
  if (got.values.size() != want.values.size()) {
    return ::testing::AssertionFailure()
           << got.values.size() << " values, want " << want.values.size();
  }
  int bad = 0;
  std::ostringstream os;
  for (size_t i = 0; i < want.values.size(); ++i) {
    const long double tol = abs_tol != nullptr ? (*abs_tol)[i] : 0;
    if (ValueMatches(want.dtype, got.values[i], want.values[i], rel, tol)) continue;
    if (++bad <= 6) {
      os << "\n  element " << ShapeStr(Unravel(static_cast<int64_t>(i), want.shape)) << ": got "
         << Num(got.values[i]) << ", want " << Num(want.values[i]);
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << want.values.size() << " elements differ (" << DTypeStr(want.dtype)
         << ShapeStr(want.shape) << ")" << os.str();
}

inline bool SameIndexMap(const v1::IndexMap& a, const v1::IndexMap& b) {
  return google::protobuf::util::MessageDifferencer::Equals(a, b);
}

// The normalized form of `map` for an array of `shape`, as the daemon reports it.
inline absl::StatusOr<v1::IndexMap> NormalizedIndexMap(const Client& client, const Shape& shape,
                                                       const v1::IndexMap& map) {
  auto array = client.Create(shape, v1::DTYPE_BOOL, ArrayOpts(map));
  if (!array.ok()) return array.status();
  return array->info().index_map();
}

inline std::string Lower(absl::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The status has one of `codes` and its message contains each of `needles` (case-insensitive).
inline ::testing::AssertionResult StatusIs(const absl::Status& status,
                                           std::vector<absl::StatusCode> codes,
                                           std::vector<std::string> needles = {}) {
  if (std::find(codes.begin(), codes.end(), status.code()) == codes.end()) {
    std::vector<std::string> names;
    for (absl::StatusCode c : codes) names.push_back(absl::StatusCodeToString(c));
    return ::testing::AssertionFailure()
           << "status " << status << ", want " << absl::StrJoin(names, " or ");
  }
  const std::string message = Lower(status.message());
  for (const std::string& needle : needles) {
    if (message.find(Lower(needle)) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "status " << status << ": the message does not name \"" << needle << "\"";
    }
  }
  return ::testing::AssertionSuccess();
}
inline ::testing::AssertionResult StatusIs(const absl::Status& status, absl::StatusCode code,
                                           std::vector<std::string> needles = {}) {
  return StatusIs(status, std::vector<absl::StatusCode>{code}, std::move(needles));
}

// Whether `message` spells `shape` in one of the usual ways: (4, 5), (4,5), [4, 5], 4x5, and for
// one axis (4,), (4) or [4].
inline bool MentionsShape(absl::string_view message, const Shape& shape) {
  std::vector<std::string> forms;
  for (const char* sep : {", ", ","}) {
    const std::string body = absl::StrJoin(shape, sep);
    forms.push_back("(" + body + ")");
    forms.push_back("[" + body + "]");
    if (shape.size() == 1) forms.push_back("(" + body + ",)");
  }
  if (shape.size() > 1) forms.push_back(absl::StrJoin(shape, "x"));
  for (const std::string& f : forms) {
    if (message.find(f) != absl::string_view::npos) return true;
  }
  return false;
}

// ---- elementwise model -------------------------------------------------------------------------

// How an op turns the promoted dtype of its operands into its loop (compute) and result dtypes.
enum class UfuncRule {
  kSame,        // the promoted dtype
  kNoBool,      // the promoted dtype; bool is INVALID_ARGUMENT (subtract, negative, sign, ...)
  kBoolAsInt8,  // bool computes in int8 (square, power, floor_divide, remainder)
  kTrueDivide,  // bool and integers compute in float64
  kFloatMath,   // FloatLoopFor: float16 for bool and 8-bit integers
  kNoFloat,     // integers and bool only (bitwise, invert)
  kShift,       // integers only; bool computes in int8
  kToBool,      // compares or tests in the promoted dtype; the result is bool
  kWhere,       // operand 0 is a truth value; operands 1 and 2 promote
};

struct UfuncInfo {
  v1::ElementwiseOp op;
  const char* name;  // NumPy's name
  int arity;
  UfuncRule rule;
  bool transcendental;          // computed by a libm function: a looser float32 tolerance
  std::vector<Domain> domains;  // where random operands come from, one per operand
};

inline const std::vector<UfuncInfo>& Ufuncs() {
  using R = UfuncRule;
  const Domain full;
  const Domain positive{.float_lo = 0.01L, .float_hi = 100, .int_lo = 1};
  const Domain non_negative{.float_lo = 0, .float_hi = 100, .int_lo = 0};
  const Domain log1p{.float_lo = -0.99L, .float_hi = 100, .int_lo = 0};
  const Domain exp{.float_lo = -20, .float_hi = 20, .int_lo = -20, .int_hi = 20};
  const Domain trig{.float_lo = -100, .float_hi = 100, .int_lo = -1000, .int_hi = 1000};
  const Domain unit{.float_lo = -1, .float_hi = 1, .int_lo = -1, .int_hi = 1};
  const Domain at_least_one{.float_lo = 1, .float_hi = 100, .int_lo = 1};
  const Domain open_unit{.float_lo = -0.99L, .float_hi = 0.99L, .int_lo = 0, .int_hi = 0};
  const Domain pow_base{.float_lo = 0.1L, .float_hi = 4};
  const Domain pow_exp{.float_lo = -8, .float_hi = 8, .int_lo = -3, .int_hi = 40};
  const Domain shift_count{.float_lo = -100, .float_hi = 100, .int_lo = -2, .int_hi = 70};
  static const std::vector<UfuncInfo> kAll = {
      {v1::ELEMENTWISE_OP_ADD, "add", 2, R::kSame, false, {full, full}},
      {v1::ELEMENTWISE_OP_SUBTRACT, "subtract", 2, R::kNoBool, false, {full, full}},
      {v1::ELEMENTWISE_OP_MULTIPLY, "multiply", 2, R::kSame, false, {full, full}},
      {v1::ELEMENTWISE_OP_DIVIDE, "true_divide", 2, R::kTrueDivide, false, {full, full}},
      {v1::ELEMENTWISE_OP_MAXIMUM, "maximum", 2, R::kSame, false, {full, full}},
      {v1::ELEMENTWISE_OP_MINIMUM, "minimum", 2, R::kSame, false, {full, full}},
      {v1::ELEMENTWISE_OP_POWER, "power", 2, R::kBoolAsInt8, true, {pow_base, pow_exp}},
      {v1::ELEMENTWISE_OP_LESS, "less", 2, R::kToBool, false, {full, full}},
      {v1::ELEMENTWISE_OP_LESS_EQUAL, "less_equal", 2, R::kToBool, false, {full, full}},
      {v1::ELEMENTWISE_OP_GREATER, "greater", 2, R::kToBool, false, {full, full}},
      {v1::ELEMENTWISE_OP_GREATER_EQUAL, "greater_equal", 2, R::kToBool, false, {full, full}},
      {v1::ELEMENTWISE_OP_EQUAL, "equal", 2, R::kToBool, false, {full, full}},
      {v1::ELEMENTWISE_OP_NOT_EQUAL, "not_equal", 2, R::kToBool, false, {full, full}},
      {v1::ELEMENTWISE_OP_FLOOR_DIVIDE, "floor_divide", 2, R::kBoolAsInt8, false, {full, full}},
      {v1::ELEMENTWISE_OP_REMAINDER, "remainder", 2, R::kBoolAsInt8, false, {full, full}},
      {v1::ELEMENTWISE_OP_ARCTAN2, "arctan2", 2, R::kFloatMath, true, {full, full}},
      {v1::ELEMENTWISE_OP_HYPOT, "hypot", 2, R::kFloatMath, true, {full, full}},
      {v1::ELEMENTWISE_OP_FMAX, "fmax", 2, R::kSame, false, {full, full}},
      {v1::ELEMENTWISE_OP_FMIN, "fmin", 2, R::kSame, false, {full, full}},
      {v1::ELEMENTWISE_OP_LOGICAL_AND, "logical_and", 2, R::kToBool, false, {full, full}},
      {v1::ELEMENTWISE_OP_LOGICAL_OR, "logical_or", 2, R::kToBool, false, {full, full}},
      {v1::ELEMENTWISE_OP_LOGICAL_XOR, "logical_xor", 2, R::kToBool, false, {full, full}},
      {v1::ELEMENTWISE_OP_BITWISE_AND, "bitwise_and", 2, R::kNoFloat, false, {full, full}},
      {v1::ELEMENTWISE_OP_BITWISE_OR, "bitwise_or", 2, R::kNoFloat, false, {full, full}},
      {v1::ELEMENTWISE_OP_BITWISE_XOR, "bitwise_xor", 2, R::kNoFloat, false, {full, full}},
      {v1::ELEMENTWISE_OP_LEFT_SHIFT, "left_shift", 2, R::kShift, false, {full, shift_count}},
      {v1::ELEMENTWISE_OP_RIGHT_SHIFT, "right_shift", 2, R::kShift, false, {full, shift_count}},
      {v1::ELEMENTWISE_OP_NEXTAFTER, "nextafter", 2, R::kFloatMath, false, {full, full}},
      {v1::ELEMENTWISE_OP_NEGATIVE, "negative", 1, R::kNoBool, false, {full}},
      {v1::ELEMENTWISE_OP_ABS, "absolute", 1, R::kSame, false, {full}},
      {v1::ELEMENTWISE_OP_SQRT, "sqrt", 1, R::kFloatMath, true, {non_negative}},
      {v1::ELEMENTWISE_OP_EXP, "exp", 1, R::kFloatMath, true, {exp}},
      {v1::ELEMENTWISE_OP_LOG, "log", 1, R::kFloatMath, true, {positive}},
      {v1::ELEMENTWISE_OP_SIN, "sin", 1, R::kFloatMath, true, {trig}},
      {v1::ELEMENTWISE_OP_COS, "cos", 1, R::kFloatMath, true, {trig}},
      {v1::ELEMENTWISE_OP_POSITIVE, "positive", 1, R::kNoBool, false, {full}},
      {v1::ELEMENTWISE_OP_SIGN, "sign", 1, R::kNoBool, false, {full}},
      {v1::ELEMENTWISE_OP_SQUARE, "square", 1, R::kBoolAsInt8, false, {full}},
      {v1::ELEMENTWISE_OP_EXPM1, "expm1", 1, R::kFloatMath, true, {exp}},
      {v1::ELEMENTWISE_OP_LOG1P, "log1p", 1, R::kFloatMath, true, {log1p}},
      {v1::ELEMENTWISE_OP_LOG2, "log2", 1, R::kFloatMath, true, {positive}},
      {v1::ELEMENTWISE_OP_LOG10, "log10", 1, R::kFloatMath, true, {positive}},
      {v1::ELEMENTWISE_OP_TAN, "tan", 1, R::kFloatMath, true, {trig}},
      {v1::ELEMENTWISE_OP_ARCSIN, "arcsin", 1, R::kFloatMath, true, {unit}},
      {v1::ELEMENTWISE_OP_ARCCOS, "arccos", 1, R::kFloatMath, true, {unit}},
      {v1::ELEMENTWISE_OP_ARCTAN, "arctan", 1, R::kFloatMath, true, {trig}},
      {v1::ELEMENTWISE_OP_SINH, "sinh", 1, R::kFloatMath, true, {exp}},
      {v1::ELEMENTWISE_OP_COSH, "cosh", 1, R::kFloatMath, true, {exp}},
      {v1::ELEMENTWISE_OP_TANH, "tanh", 1, R::kFloatMath, true, {exp}},
      {v1::ELEMENTWISE_OP_ARCSINH, "arcsinh", 1, R::kFloatMath, true, {trig}},
      {v1::ELEMENTWISE_OP_ARCCOSH, "arccosh", 1, R::kFloatMath, true, {at_least_one}},
      {v1::ELEMENTWISE_OP_ARCTANH, "arctanh", 1, R::kFloatMath, true, {open_unit}},
      {v1::ELEMENTWISE_OP_FLOOR, "floor", 1, R::kSame, false, {full}},
      {v1::ELEMENTWISE_OP_CEIL, "ceil", 1, R::kSame, false, {full}},
      {v1::ELEMENTWISE_OP_TRUNC, "trunc", 1, R::kSame, false, {full}},
      {v1::ELEMENTWISE_OP_RINT, "rint", 1, R::kFloatMath, false, {full}},
      {v1::ELEMENTWISE_OP_LOGICAL_NOT, "logical_not", 1, R::kToBool, false, {full}},
      {v1::ELEMENTWISE_OP_INVERT, "invert", 1, R::kNoFloat, false, {full}},
      {v1::ELEMENTWISE_OP_ISNAN, "isnan", 1, R::kToBool, false, {full}},
      {v1::ELEMENTWISE_OP_ISINF, "isinf", 1, R::kToBool, false, {full}},
      {v1::ELEMENTWISE_OP_ISFINITE, "isfinite", 1, R::kToBool, false, {full}},
      {v1::ELEMENTWISE_OP_SIGNBIT, "signbit", 1, R::kToBool, false, {full}},
      {v1::ELEMENTWISE_OP_WHERE, "where", 3, R::kWhere, false, {full, full, full}},
      {v1::ELEMENTWISE_OP_CLIP, "clip", 3, R::kSame, false, {full, full, full}},
  };
  return kAll;
}

inline const UfuncInfo& UfuncFor(v1::ElementwiseOp op) {
  for (const UfuncInfo& u : Ufuncs()) {
    if (u.op == op) return u;
  }
  ADD_FAILURE() << "no model for " << v1::ElementwiseOp_Name(op);
  return Ufuncs().front();
}

inline bool IsComparison(v1::ElementwiseOp op) {
  return op == v1::ELEMENTWISE_OP_LESS || op == v1::ELEMENTWISE_OP_LESS_EQUAL ||
         op == v1::ELEMENTWISE_OP_GREATER || op == v1::ELEMENTWISE_OP_GREATER_EQUAL ||
         op == v1::ELEMENTWISE_OP_EQUAL || op == v1::ELEMENTWISE_OP_NOT_EQUAL;
}

// The outcome of typing an op: an error code, or its loop and result dtypes.
struct UfuncTyping {
  absl::StatusCode code = absl::StatusCode::kOk;
  v1::DType compute = v1::DTYPE_UNSPECIFIED;
  v1::DType result = v1::DTYPE_UNSPECIFIED;
};

// `dtypes`: the operands' dtypes (a weak scalar's as WeakScalarResult gives it; WHERE's condition
// left out). NumPy picks the first loop every operand casts to safely: for most ops the
// result_type of the operands; for float-only ops the result_type of each operand's float loop
// (arctan2(int8, uint8) runs in float16, not in int16's float32).
inline UfuncTyping TypeUfunc(const UfuncInfo& u, const std::vector<v1::DType>& dtypes) {
  v1::DType promoted = dtypes.front();
  v1::DType float_loop = FloatLoopFor(dtypes.front());
  for (v1::DType d : dtypes) {
    promoted = ResultType(promoted, d);
    float_loop = ResultType(float_loop, FloatLoopFor(d));
  }
  UfuncTyping t{absl::StatusCode::kOk, promoted, promoted};
  const bool is_bool = promoted == v1::DTYPE_BOOL;
  const bool is_float = IsFloatDType(promoted);
  switch (u.rule) {
    case UfuncRule::kSame:
    case UfuncRule::kWhere:
      break;
    case UfuncRule::kNoBool:
      if (is_bool) t.code = absl::StatusCode::kInvalidArgument;
      break;
    case UfuncRule::kBoolAsInt8:
      if (is_bool) t.compute = t.result = v1::DTYPE_INT8;
      break;
    case UfuncRule::kTrueDivide:
      if (!is_float) t.compute = t.result = v1::DTYPE_FLOAT64;
      break;
    case UfuncRule::kFloatMath:
      t.compute = t.result = float_loop;
      // nextafter is not served in the 16-bit floats, whose loops compute in float32.
      if (u.op == v1::ELEMENTWISE_OP_NEXTAFTER &&
          (float_loop == v1::DTYPE_FLOAT16 || float_loop == v1::DTYPE_BFLOAT16)) {
        t.code = absl::StatusCode::kUnimplemented;
      }
      break;
    case UfuncRule::kNoFloat:
      if (is_float) t.code = absl::StatusCode::kInvalidArgument;
      break;
    case UfuncRule::kShift:
      if (is_float) t.code = absl::StatusCode::kInvalidArgument;
      if (is_bool) t.compute = t.result = v1::DTYPE_INT8;
      break;
    case UfuncRule::kToBool:
      t.result = v1::DTYPE_BOOL;
      break;
  }
  return t;
}

// NumPy's npy_divmod: Python's floor division and modulo of floats.
inline long double FloatDivmod(long double a, long double b, long double* mod_out) {
  long double mod = std::fmod(a, b);
  if (b == 0) {
    *mod_out = mod;
    return a / b;
  }
  long double div = (a - mod) / b;
  if (mod != 0) {
    if ((b < 0) != (mod < 0)) {
      mod += b;
      div -= 1;
    }
  } else {
    mod = std::copysign(0.0L, b);
  }
  long double floordiv;
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5L) floordiv += 1;
  } else {
    floordiv = std::copysign(0.0L, a / b);
  }
  *mod_out = mod;
  return floordiv;
}

// The op on operand values already in the compute dtype `c` (WHERE's x[0]: the condition's
// value in its own dtype). Integer results are wrapped to `c`; float results are exact or in long
// double, not rounded to `c`; truth values are 0 or 1.
inline long double ApplyUfunc(v1::ElementwiseOp op, v1::DType c, const long double* x) {
  const bool is_int = IsIntDType(c);
  const bool is_bool = c == v1::DTYPE_BOOL;
  const long double a = x[0], b = x[1];
  const long double nan = std::numeric_limits<long double>::quiet_NaN();
  auto wrap = [&](UInt128 v) { return WrapInt(c, v); };
  auto I = [](long double v) { return static_cast<Int128>(v); };
  auto U = [](long double v) { return BitsOf(v); };
  auto truth = [](long double v) -> long double { return v != 0 ? 1 : 0; };
  auto maximum = [&](long double p, long double q) {
    return std::isnan(p) || std::isnan(q) ? nan : std::max(p, q);
  };
  auto minimum = [&](long double p, long double q) {
    return std::isnan(p) || std::isnan(q) ? nan : std::min(p, q);
  };
  long double mod = 0;
  switch (op) {
    case v1::ELEMENTWISE_OP_ADD:
      if (is_bool) return truth(a != 0 || b != 0);
      return is_int ? wrap(U(a) + U(b)) : a + b;
    case v1::ELEMENTWISE_OP_SUBTRACT:
      return is_int ? wrap(U(a) - U(b)) : a - b;
    case v1::ELEMENTWISE_OP_MULTIPLY:
      if (is_bool) return truth(a != 0 && b != 0);
      return is_int ? wrap(U(a) * U(b)) : a * b;
    case v1::ELEMENTWISE_OP_DIVIDE:
      return a / b;
    case v1::ELEMENTWISE_OP_MAXIMUM:
      return maximum(a, b);
    case v1::ELEMENTWISE_OP_MINIMUM:
      return minimum(a, b);
    case v1::ELEMENTWISE_OP_FMAX:
      if (std::isnan(a)) return b;
      if (std::isnan(b)) return a;
      return std::max(a, b);
    case v1::ELEMENTWISE_OP_FMIN:
      if (std::isnan(a)) return b;
      if (std::isnan(b)) return a;
      return std::min(a, b);
    case v1::ELEMENTWISE_OP_POWER: {
      if (!is_int) return std::pow(a, b);
      if (I(b) < 0) {
        if (I(a) == 1) return 1;
        if (I(a) == -1) return I(b) % 2 != 0 ? -1 : 1;
        return 0;
      }
      UInt128 result = 1, base = U(a);
      for (Int128 e = I(b); e > 0; e >>= 1) {
        if (e & 1) result *= base;
        base *= base;
      }
      return wrap(result);
    }
    case v1::ELEMENTWISE_OP_LESS:
      return truth(a < b);
    case v1::ELEMENTWISE_OP_LESS_EQUAL:
      return truth(a <= b);
    case v1::ELEMENTWISE_OP_GREATER:
      return truth(a > b);
    case v1::ELEMENTWISE_OP_GREATER_EQUAL:
      return truth(a >= b);
    case v1::ELEMENTWISE_OP_EQUAL:
      return truth(a == b);
    case v1::ELEMENTWISE_OP_NOT_EQUAL:
      return truth(a != b);
    case v1::ELEMENTWISE_OP_FLOOR_DIVIDE: {
      if (!is_int) return FloatDivmod(a, b, &mod);
      const Int128 p = I(a), q = I(b);
      if (q == 0) return 0;
      Int128 r = p / q;
      if (p % q != 0 && ((p < 0) != (q < 0))) --r;
      return wrap(static_cast<UInt128>(r));
    }
    case v1::ELEMENTWISE_OP_REMAINDER: {
      if (!is_int) {
        FloatDivmod(a, b, &mod);
        return mod;
      }
      const Int128 p = I(a), q = I(b);
      if (q == 0) return 0;
      Int128 r = p % q;
      if (r != 0 && ((r < 0) != (q < 0))) r += q;
      return wrap(static_cast<UInt128>(r));
    }
    case v1::ELEMENTWISE_OP_ARCTAN2:
      return std::atan2(a, b);
    case v1::ELEMENTWISE_OP_HYPOT:
      return std::hypot(a, b);
    case v1::ELEMENTWISE_OP_LOGICAL_AND:
      return truth(a != 0 && b != 0);
    case v1::ELEMENTWISE_OP_LOGICAL_OR:
      return truth(a != 0 || b != 0);
    case v1::ELEMENTWISE_OP_LOGICAL_XOR:
      return truth((a != 0) != (b != 0));
    case v1::ELEMENTWISE_OP_BITWISE_AND:
      return is_bool ? truth(a != 0 && b != 0) : wrap(U(a) & U(b));
    case v1::ELEMENTWISE_OP_BITWISE_OR:
      return is_bool ? truth(a != 0 || b != 0) : wrap(U(a) | U(b));
    case v1::ELEMENTWISE_OP_BITWISE_XOR:
      return is_bool ? truth((a != 0) != (b != 0)) : wrap(U(a) ^ U(b));
    case v1::ELEMENTWISE_OP_LEFT_SHIFT: {
      const Int128 s = I(b);
      if (s < 0 || s >= DTypeBits(c)) return 0;
      return wrap(U(a) << static_cast<int>(s));
    }
    case v1::ELEMENTWISE_OP_RIGHT_SHIFT: {
      const Int128 v = I(a), s = I(b);
      if (s < 0 || s >= DTypeBits(c)) return v < 0 ? -1 : 0;
      const int k = static_cast<int>(s);
      return static_cast<long double>(v >= 0 ? (v >> k) : -((-v - 1) >> k) - 1);
    }
    case v1::ELEMENTWISE_OP_NEGATIVE:
      return is_int ? wrap(UInt128(0) - U(a)) : -a;
    case v1::ELEMENTWISE_OP_POSITIVE:
      return a;
    case v1::ELEMENTWISE_OP_ABS:
      if (is_int) return wrap(I(a) < 0 ? UInt128(0) - U(a) : U(a));
      return is_bool ? a : std::fabs(a);
    case v1::ELEMENTWISE_OP_SQRT:
      return std::sqrt(a);
    case v1::ELEMENTWISE_OP_EXP:
      return std::exp(a);
    case v1::ELEMENTWISE_OP_LOG:
      return std::log(a);
    case v1::ELEMENTWISE_OP_SIN:
      return std::sin(a);
    case v1::ELEMENTWISE_OP_COS:
      return std::cos(a);
    case v1::ELEMENTWISE_OP_SIGN:
      if (std::isnan(a)) return nan;
      return static_cast<long double>((a > 0) - (a < 0));
    case v1::ELEMENTWISE_OP_SQUARE:
      return is_int ? wrap(U(a) * U(a)) : a * a;
    case v1::ELEMENTWISE_OP_EXPM1:
      return std::expm1(a);
    case v1::ELEMENTWISE_OP_LOG1P:
      return std::log1p(a);
    case v1::ELEMENTWISE_OP_LOG2:
      return std::log2(a);
    case v1::ELEMENTWISE_OP_LOG10:
      return std::log10(a);
    case v1::ELEMENTWISE_OP_TAN:
      return std::tan(a);
    case v1::ELEMENTWISE_OP_ARCSIN:
      return std::asin(a);
    case v1::ELEMENTWISE_OP_ARCCOS:
      return std::acos(a);
    case v1::ELEMENTWISE_OP_ARCTAN:
      return std::atan(a);
    case v1::ELEMENTWISE_OP_SINH:
      return std::sinh(a);
    case v1::ELEMENTWISE_OP_COSH:
      return std::cosh(a);
    case v1::ELEMENTWISE_OP_TANH:
      return std::tanh(a);
    case v1::ELEMENTWISE_OP_ARCSINH:
      return std::asinh(a);
    case v1::ELEMENTWISE_OP_ARCCOSH:
      return std::acosh(a);
    case v1::ELEMENTWISE_OP_ARCTANH:
      return std::atanh(a);
    case v1::ELEMENTWISE_OP_NEXTAFTER:  // exact in the compute dtype
      if (c == v1::DTYPE_FLOAT32) {
        return std::nextafter(static_cast<float>(a), static_cast<float>(b));
      }
      return std::nextafter(static_cast<double>(a), static_cast<double>(b));
    case v1::ELEMENTWISE_OP_SIGNBIT:
      return truth(std::signbit(a));
    case v1::ELEMENTWISE_OP_FLOOR:
      return IsFloatDType(c) ? std::floor(a) : a;
    case v1::ELEMENTWISE_OP_CEIL:
      return IsFloatDType(c) ? std::ceil(a) : a;
    case v1::ELEMENTWISE_OP_TRUNC:
      return IsFloatDType(c) ? std::trunc(a) : a;
    case v1::ELEMENTWISE_OP_RINT:
      return std::nearbyint(a);  // the default rounding mode: half to even
    case v1::ELEMENTWISE_OP_LOGICAL_NOT:
      return truth(a == 0);
    case v1::ELEMENTWISE_OP_INVERT:
      return is_bool ? truth(a == 0) : wrap(~U(a));
    case v1::ELEMENTWISE_OP_ISNAN:
      return truth(std::isnan(a));
    case v1::ELEMENTWISE_OP_ISINF:
      return truth(std::isinf(a));
    case v1::ELEMENTWISE_OP_ISFINITE:
      return truth(std::isfinite(a));
    case v1::ELEMENTWISE_OP_WHERE:
      return a != 0 ? x[1] : x[2];
    case v1::ELEMENTWISE_OP_CLIP:
      return minimum(maximum(a, x[1]), x[2]);
    default:
      ADD_FAILURE() << "no model for " << v1::ElementwiseOp_Name(op);
      return nan;
  }
}

// NumPy's broadcast of shapes; nullopt where they are incompatible.
inline std::optional<Shape> BroadcastShapes(const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    for (size_t e = 0; e < s.size(); ++e) {
      int64_t& o = out[rank - s.size() + e];
      if (s[e] == o || s[e] == 1) continue;
      if (o != 1) return std::nullopt;
      o = s[e];
    }
  }
  return out;
}

// The linear index into an operand of `shape` that result element `index` (of a result of rank
// index.size()) reads under broadcasting.
inline int64_t BroadcastSource(const std::vector<int64_t>& index, const Shape& shape) {
  int64_t linear = 0;
  const size_t offset = index.size() - shape.size();
  for (size_t e = 0; e < shape.size(); ++e) {
    linear = linear * shape[e] + (shape[e] == 1 ? 0 : index[offset + e]);
  }
  return linear;
}

// An operand of the model: an array's logical values, or a weak scalar.
struct RefOperand {
  const HostArray* array = nullptr;
  v1::Scalar scalar;
};

struct UfuncReference {
  absl::StatusCode code = absl::StatusCode::kOk;
  v1::DType compute = v1::DTYPE_UNSPECIFIED;
  HostArray result;  // values not rounded to the result dtype (compare with a tolerance)
};

// What the daemon must answer for `op` on `operands` (ELEMENTWISE_OP_ASTYPE: `astype_dtype`).
// Only codes the model decides: promotion, an op's dtype rule, an out-of-range int scalar,
// incompatible shapes.
inline UfuncReference ReferenceUfunc(v1::ElementwiseOp op, const std::vector<RefOperand>& operands,
                                     v1::DType astype_dtype = v1::DTYPE_UNSPECIFIED) {
  UfuncReference ref;
  std::vector<Shape> shapes;
  for (const RefOperand& o : operands) {
    if (o.array != nullptr) shapes.push_back(o.array->shape);
  }
  const std::optional<Shape> shape = BroadcastShapes(shapes);
  if (!shape) {
    ref.code = absl::StatusCode::kInvalidArgument;
    return ref;
  }
  if (op == v1::ELEMENTWISE_OP_ASTYPE) {
    const HostArray& a = *operands[0].array;
    ref.compute = astype_dtype;
    ref.result = HostArray{astype_dtype, a.shape, {}};
    for (long double v : a.values) ref.result.values.push_back(CastValue(v, a.dtype, astype_dtype));
    return ref;
  }
  const UfuncInfo& u = UfuncFor(op);
  // Promotion: the arrays by result_type; each weak scalar takes its dtype from theirs
  // (WHERE's condition takes no part).
  const size_t first = u.rule == UfuncRule::kWhere ? 1 : 0;
  std::optional<v1::DType> arrays;
  for (size_t i = first; i < operands.size(); ++i) {
    if (operands[i].array != nullptr) {
      arrays = arrays ? ResultType(*arrays, operands[i].array->dtype) : operands[i].array->dtype;
    }
  }
  std::vector<v1::DType> dtypes;
  for (size_t i = first; i < operands.size(); ++i) {
    if (operands[i].array != nullptr) {
      dtypes.push_back(operands[i].array->dtype);
      continue;
    }
    const ScalarKind kind = KindOf(operands[i].scalar);
    if (arrays) {
      dtypes.push_back(WeakScalarResult(*arrays, kind));
    } else {  // scalars only (WHERE's x and y): Python's own types
      dtypes.push_back(kind == ScalarKind::kBool  ? v1::DTYPE_BOOL
                       : kind == ScalarKind::kInt ? v1::DTYPE_INT64
                                                  : v1::DTYPE_FLOAT64);
    }
  }
  const UfuncTyping typing = TypeUfunc(u, dtypes);
  ref.code = typing.code;
  ref.compute = typing.compute;
  if (ref.code != absl::StatusCode::kOk) return ref;
  // An int scalar must fit the integer dtype it computes in (NumPy 2 raises OverflowError);
  // comparisons and logical ops take any int (NumPy 2 compares Python ints exactly).
  if (IsIntDType(typing.compute) && u.rule != UfuncRule::kToBool) {
    for (size_t i = first; i < operands.size(); ++i) {
      if (operands[i].array != nullptr || KindOf(operands[i].scalar) != ScalarKind::kInt) continue;
      const long double v = ValueOf(operands[i].scalar);
      if (v < IntMin(typing.compute) || v > IntMax(typing.compute)) {
        ref.code = absl::StatusCode::kInvalidArgument;
        return ref;
      }
    }
  }
  // NumPy 2 compares mixed signed/unsigned integers exactly (no float64 loop).
  bool all_integers = IsComparison(op);
  for (const RefOperand& o : operands) {
    const bool integer =
        o.array != nullptr ? !IsFloatDType(o.array->dtype) : KindOf(o.scalar) != ScalarKind::kFloat;
    all_integers = all_integers && integer;
  }
  ref.result = HostArray{typing.result, *shape, std::vector<long double>(NumElements(*shape))};
  for (int64_t i = 0; i < NumElements(*shape); ++i) {
    const std::vector<int64_t> index = Unravel(i, *shape);
    long double x[3] = {0, 0, 0};
    for (size_t k = 0; k < operands.size() && k < 3; ++k) {
      const RefOperand& o = operands[k];
      const long double v = o.array != nullptr
                                ? o.array->values[BroadcastSource(index, o.array->shape)]
                                : ValueOf(o.scalar);
      const v1::DType from = o.array != nullptr                                ? o.array->dtype
                             : KindOf(o.scalar) == ScalarKind::kFloat          ? v1::DTYPE_FLOAT64
                             : o.scalar.value_case() == v1::Scalar::kUintValue ? v1::DTYPE_UINT64
                                                                               : v1::DTYPE_INT64;
      const bool keep = (k == 0 && u.rule == UfuncRule::kWhere) || all_integers;
      x[k] = keep ? v : CastValue(v, from, typing.compute);
    }
    ref.result.values[i] = ApplyUfunc(op, typing.compute, x);
  }
  return ref;
}

// The relative tolerance of an op's float results in `dtype`.
inline long double UfuncTolerance(v1::ElementwiseOp op, v1::DType dtype) {
  if (op == v1::ELEMENTWISE_OP_ASTYPE) return 0;  // casts are exact (correctly rounded)
  const bool transcendental = UfuncFor(op).transcendental;
  if (dtype == v1::DTYPE_FLOAT32) return transcendental ? 1e-5L : 2e-6L;
  // float16 loops compute in float32 and round once: within 1.5 units of 2^-10.
  if (dtype == v1::DTYPE_FLOAT16) return 1.5e-3L;
  return 1e-12L;
}

// ---- reductions model --------------------------------------------------------------------------

inline std::string ReduceName(v1::ReduceOp op) {
  std::string name = v1::ReduceOp_Name(op);
  if (name.rfind("REDUCE_OP_", 0) == 0) name = name.substr(10);
  return Lower(name);
}

inline v1::DType ReduceResultDType(v1::ReduceOp op, v1::DType d) {
  switch (op) {
    case v1::REDUCE_OP_SUM:
    case v1::REDUCE_OP_PROD:
      if (IsFloatDType(d)) return d;
      return IsUnsignedDType(d) ? v1::DTYPE_UINT64 : v1::DTYPE_INT64;
    case v1::REDUCE_OP_MEAN:
      return IsFloatDType(d) ? d : v1::DTYPE_FLOAT64;
    case v1::REDUCE_OP_ALL:
    case v1::REDUCE_OP_ANY:
      return v1::DTYPE_BOOL;
    case v1::REDUCE_OP_ARGMAX:
    case v1::REDUCE_OP_ARGMIN:
      return v1::DTYPE_INT64;
    default:
      return d;
  }
}

// The mode of an uncombined (partial) result.
inline v1::Mode ReducePartialMode(v1::ReduceOp op) {
  switch (op) {
    case v1::REDUCE_OP_SUM:
    case v1::REDUCE_OP_MEAN:
      return v1::MODE_SUM;
    case v1::REDUCE_OP_PROD:
      return v1::MODE_PROD;
    case v1::REDUCE_OP_MAX:
    case v1::REDUCE_OP_ANY:
      return v1::MODE_MAX;
    default:
      return v1::MODE_MIN;
  }
}

struct ReduceReference {
  absl::StatusCode code = absl::StatusCode::kOk;
  HostArray result;
  std::vector<long double> abs_tol;  // per element, for float sums, products and means
};

// NumPy's reduction of `a` (its logical values) over `axes` (empty: all; negative from the end).
// Sums and products of integers wrap in 64 bits; the mean of integers is computed without
// wrapping (NumPy accumulates it in float64).
inline ReduceReference ReferenceReduce(v1::ReduceOp op, const HostArray& a,
                                       std::vector<int32_t> axes, bool keepdims) {
  ReduceReference ref;
  const int rank = static_cast<int>(a.shape.size());
  std::vector<bool> reduced(rank, axes.empty());
  for (int32_t axis : axes) {
    const int32_t norm = axis < 0 ? axis + rank : axis;
    if (norm < 0 || norm >= rank || reduced[norm]) {
      ref.code = absl::StatusCode::kInvalidArgument;
      return ref;
    }
    reduced[norm] = true;
  }
  const int n_reduced = static_cast<int>(std::count(reduced.begin(), reduced.end(), true));
  const bool arg = op == v1::REDUCE_OP_ARGMAX || op == v1::REDUCE_OP_ARGMIN;
  if (arg && n_reduced > 1 && n_reduced < rank) {
    ref.code = absl::StatusCode::kInvalidArgument;
    return ref;
  }
  int arg_axis = -1;
  if (arg && n_reduced == 1 && rank > 1) {
    arg_axis = static_cast<int>(std::find(reduced.begin(), reduced.end(), true) - reduced.begin());
  }
  Shape kept_shape, out_shape;
  int64_t count = 1;
  for (int d = 0; d < rank; ++d) {
    if (reduced[d]) {
      count *= a.shape[d];
      if (keepdims) out_shape.push_back(1);
    } else {
      kept_shape.push_back(a.shape[d]);
      out_shape.push_back(a.shape[d]);
    }
  }
  if (count == 0 && (op == v1::REDUCE_OP_MAX || op == v1::REDUCE_OP_MIN || arg)) {
    ref.code = absl::StatusCode::kInvalidArgument;
    return ref;
  }
  const v1::DType out_dtype = ReduceResultDType(op, a.dtype);
  const bool is_float = IsFloatDType(a.dtype);
  struct Acc {
    UInt128 isum = 0, iprod = 1;
    long double fsum = 0, fabs = 0, fprod = 1, ext = 0;
    bool has = false, all = true, any = false;
    int64_t arg = 0;
  };
  std::vector<Acc> acc(NumElements(kept_shape));
  for (int64_t i = 0; i < static_cast<int64_t>(a.values.size()); ++i) {
    const std::vector<int64_t> index = Unravel(i, a.shape);
    int64_t o = 0;
    for (int d = 0; d < rank; ++d) {
      if (!reduced[d]) o = o * a.shape[d] + index[d];
    }
    Acc& s = acc[o];
    const long double v = a.values[i];
    s.isum += is_float ? 0 : BitsOf(v);
    s.iprod *= is_float ? 1 : BitsOf(v);
    s.fsum += v;
    s.fabs += std::fabs(v);
    s.fprod *= v;
    s.all = s.all && v != 0;
    s.any = s.any || v != 0;
    const int64_t position = arg_axis >= 0 ? index[arg_axis] : i;
    const bool want_max = op == v1::REDUCE_OP_MAX || op == v1::REDUCE_OP_ARGMAX;
    if (!s.has) {
      s.has = true;
      s.ext = v;
      s.arg = position;
    } else if (!std::isnan(s.ext) && (std::isnan(v) || (want_max ? v > s.ext : v < s.ext))) {
      s.ext = v;  // the first NaN wins, and stays
      s.arg = position;
    }
  }
  const long double eps = a.dtype == v1::DTYPE_FLOAT32 ? FLT_EPSILON : DBL_EPSILON;
  ref.result = HostArray{out_dtype, out_shape, {}};
  for (const Acc& s : acc) {
    long double v = 0, tol = 0;
    switch (op) {
      case v1::REDUCE_OP_SUM:
        v = is_float ? s.fsum : WrapInt(out_dtype, s.isum);
        tol = (count + 4) * eps * s.fabs;
        break;
      case v1::REDUCE_OP_PROD:
        v = is_float ? s.fprod : WrapInt(out_dtype, s.iprod);
        tol = (count + 4) * eps * std::fabs(s.fprod);
        break;
      case v1::REDUCE_OP_MEAN:
        v = s.fsum / static_cast<long double>(count);
        tol =
            (count + 4) * (is_float ? eps : DBL_EPSILON) * s.fabs / static_cast<long double>(count);
        break;
      case v1::REDUCE_OP_MAX:
      case v1::REDUCE_OP_MIN:
        v = s.ext;
        break;
      case v1::REDUCE_OP_ALL:
        v = s.all;
        break;
      case v1::REDUCE_OP_ANY:
        v = s.any;
        break;
      default:
        v = static_cast<long double>(s.arg);
        break;
    }
    ref.result.values.push_back(v);
    ref.abs_tol.push_back(std::isfinite(tol) ? tol : 0);
  }
  return ref;
}

}  // namespace distarray::testing

#endif  // DISTARRAY_TESTS_SUPPORT_COMPUTE_REFERENCE_H_
