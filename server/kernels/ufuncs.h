// The elementwise ops ("ufuncs"), each a compile-time functor over its compute type, and the one
// table that lists them. The table drives everything else: the proto mapping, the type rules the
// planner applies, the `features` of GetServerInfo, and which kernels the host loops and the CUDA
// kernels instantiate. Adding an op is one functor and one table row. CUDA-safe header.
//
// Functors take their operands in the op's compute type T (the planner casts operands there
// first) and return the result type; an op that is not defined for T has no matching
// `operator()` and is never instantiated for it (`kAccepts` below mirrors that for the planner).
#ifndef DISTARRAY_SERVER_KERNELS_UFUNCS_H_
#define DISTARRAY_SERVER_KERNELS_UFUNCS_H_

#include <math.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "common/complex.h"
#include "server/kernels/complex_math.h"
#include "server/kernels/real_math.h"
#include "server/kernels/wrapping.h"

namespace distarray {
namespace ufunc {

template <typename T>
inline constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;
template <typename T>
inline constexpr bool kIsFloat = std::is_floating_point_v<T>;
template <typename T>
inline constexpr bool kIsBool = std::is_same_v<T, bool>;
// Float or complex: what true division computes in.
template <typename T>
inline constexpr bool kIsInexact = kIsFloat<T> || kIsComplex<T>;

// `v < 0` without the always-false comparison of an unsigned value (a -Wtype-limits warning).
template <typename T>
DA_HD bool IsNegative(T v) {
  if constexpr (std::is_unsigned_v<T>)
    return false;
  else
    return v < T(0);
}

// Whether a float is neither infinite nor NaN (x - x is NaN for both).
template <typename T>
DA_HD bool IsFiniteValue(T x) {
  return x - x == T(0);
}

// ---- Arithmetic: integers wrap as in NumPy; bool where NumPy defines it (add = or, mul = and).

struct Add {
  template <typename T>
  DA_HD T operator()(T a, T b) const {
    if constexpr (kIsBool<T>)
      return a || b;
    else
      return WrappingAdd(a, b);
  }
};
struct Subtract {
  template <typename T, typename = std::enable_if_t<!kIsBool<T>>>
  DA_HD T operator()(T a, T b) const {
    return WrappingSubtract(a, b);
  }
};
struct Multiply {
  template <typename T>
  DA_HD T operator()(T a, T b) const {
    if constexpr (kIsBool<T>)
      return a && b;
    else
      return WrappingMultiply(a, b);
  }
};
// True division; the planner computes integer inputs in float64, as NumPy does.
struct TrueDivide {
  template <typename T, typename = std::enable_if_t<kIsInexact<T>>>
  DA_HD T operator()(T a, T b) const {
    return a / b;
  }
};
// Python's floor division. Integers: x // 0 is 0 and MIN // -1 wraps to MIN (NumPy's results,
// without its warnings); floats follow NumPy's npy_floor_divide.
struct FloorDivide {
  template <typename T, typename = std::enable_if_t<!kIsBool<T>>>
  DA_HD T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return WrappingSubtract(T(0), a);
      }
      T q = static_cast<T>(a / b);
      if constexpr (std::is_signed_v<T>) {
        if (a % b != 0 && ((a < 0) != (b < 0))) --q;
      }
      return q;
    } else {
      if (b == 0) return a / b;
      // The array API's special cases where NumPy's loop gives NaN and -1: an infinite dividend
      // over a finite divisor is that infinity (signed by the quotient), and a finite dividend
      // over the infinity of the other sign is -0 (floor(-0) is -0, as the exact quotient says).
      if (!IsFiniteValue(a) && a == a && IsFiniteValue(b)) return a / b;
      if (IsFiniteValue(a) && !IsFiniteValue(b) && b == b) {
        if (a == 0 || (a < 0) == (b < 0)) return a / b;  // +-0 by the quotient's sign
        return -T(0);
      }
      T mod = math::fmod(a, b);
      T div = (a - mod) / b;
      if (mod != 0) {
        if ((b < 0) != (mod < 0)) div -= T(1);
      }
      if (div != 0) {
        T floordiv = math::floor(div);
        if (div - floordiv > T(0.5)) floordiv += T(1);
        return floordiv;
      }
      return math::copysign(T(0), a / b);
    }
  }
};
// Python's modulo: the result takes the divisor's sign; x % 0 is 0 for integers.
struct Remainder {
  template <typename T, typename = std::enable_if_t<!kIsBool<T>>>
  DA_HD T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<T>) {
        if (b == T(-1)) return 0;
        T r = static_cast<T>(a % b);
        if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
        return r;
      } else {
        return static_cast<T>(a % b);
      }
    } else {
      T mod = math::fmod(a, b);
      if (b == 0) return mod;
      if (mod != 0) {
        if ((b < 0) != (mod < 0)) mod += b;
        return mod;
      }
      return math::copysign(T(0), b);
    }
  }
};
// Integers: exponentiation by squaring, wrapping; a negative exponent gives 0 except for bases 1
// and -1 (NumPy raises for the whole array; an elementwise kernel cannot).
struct Power {
  template <typename T, typename = std::enable_if_t<!kIsBool<T>>>
  DA_HD T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      if constexpr (std::is_signed_v<T>) {
        if (b < 0) {
          if (a == 1) return 1;
          if (a == -1) return (b & 1) ? T(-1) : T(1);
          return 0;
        }
      }
      T result = 1;
      T base = a;
      for (auto e = static_cast<std::make_unsigned_t<T>>(b); e != 0; e >>= 1) {
        if (e & 1) result = WrappingMultiply(result, base);
        base = WrappingMultiply(base, base);
      }
      return result;
    } else {
      return math::pow(a, b);
    }
  }
};
// NaN propagates (NumPy's maximum/minimum); fmax/fmin prefer the number. Complex numbers are
// ordered as NumPy orders them (complex_math.h), NaN in either part counting as NaN.
struct Maximum {
  template <typename T>
  DA_HD T operator()(T a, T b) const {
    if constexpr (kIsComplex<T>)
      return (a != a || ComplexLessEqual(b, a)) ? a : b;
    else
      return (a > b || a != a) ? a : b;
  }
};
struct Minimum {
  template <typename T>
  DA_HD T operator()(T a, T b) const {
    if constexpr (kIsComplex<T>)
      return (a != a || ComplexLessEqual(a, b)) ? a : b;
    else
      return (a < b || a != a) ? a : b;
  }
};
struct Fmax {
  template <typename T>
  DA_HD T operator()(T a, T b) const {
    if constexpr (kIsComplex<T>)
      return (b != b || ComplexLessEqual(b, a)) ? a : b;
    else if constexpr (kIsFloat<T>)
      return math::fmax(a, b);
    else
      return a > b ? a : b;
  }
};
struct Fmin {
  template <typename T>
  DA_HD T operator()(T a, T b) const {
    if constexpr (kIsComplex<T>)
      return (b != b || ComplexLessEqual(a, b)) ? a : b;
    else if constexpr (kIsFloat<T>)
      return math::fmin(a, b);
    else
      return a < b ? a : b;
  }
};
struct Arctan2 {
  template <typename T, typename = std::enable_if_t<kIsFloat<T>>>
  DA_HD T operator()(T a, T b) const {
    return math::atan2(a, b);
  }
};
struct Hypot {
  template <typename T, typename = std::enable_if_t<kIsFloat<T>>>
  DA_HD T operator()(T a, T b) const {
    return math::hypot(a, b);
  }
};

// ---- Comparisons and logic: bool results. Complex numbers compare lexicographically, as in
// NumPy: a > b is b < a, and a >= b is b <= a, in both orders (NaN makes each false).

struct Less {
  template <typename T>
  DA_HD bool operator()(T a, T b) const {
    if constexpr (kIsComplex<T>)
      return ComplexLess(a, b);
    else
      return a < b;
  }
};
struct LessEqual {
  template <typename T>
  DA_HD bool operator()(T a, T b) const {
    if constexpr (kIsComplex<T>)
      return ComplexLessEqual(a, b);
    else
      return a <= b;
  }
};
struct Greater {
  template <typename T>
  DA_HD bool operator()(T a, T b) const {
    return Less{}(b, a);
  }
};
struct GreaterEqual {
  template <typename T>
  DA_HD bool operator()(T a, T b) const {
    return LessEqual{}(b, a);
  }
};

#define DA_COMPARE(Name, expr)              \
  struct Name {                             \
    template <typename T>                   \
    DA_HD bool operator()(T a, T b) const { \
      return expr;                          \
    }                                       \
  };
DA_COMPARE(Equal, a == b)
DA_COMPARE(NotEqual, a != b)
DA_COMPARE(LogicalAnd, (a != T(0)) && (b != T(0)))
DA_COMPARE(LogicalOr, (a != T(0)) || (b != T(0)))
DA_COMPARE(LogicalXor, (a != T(0)) != (b != T(0)))
#undef DA_COMPARE

// ---- Bitwise: integers and bool.

#define DA_BITWISE(Name, op)                                         \
  struct Name {                                                      \
    template <typename T, typename = std::enable_if_t<!kIsFloat<T>>> \
    DA_HD T operator()(T a, T b) const {                             \
      return static_cast<T>(a op b);                                 \
    }                                                                \
  };
DA_BITWISE(BitwiseAnd, &)
DA_BITWISE(BitwiseOr, |)
DA_BITWISE(BitwiseXor, ^)
#undef DA_BITWISE
// Shifts by a negative count or by the type's width or more give what shifting one bit at a
// time would (0, or -1 for a negative signed value shifted right), never undefined behaviour.
struct LeftShift {
  template <typename T, typename = std::enable_if_t<kIsInt<T>>>
  DA_HD T operator()(T a, T b) const {
    if (IsNegative(b) || b >= T(sizeof(T) * 8)) return 0;
    return static_cast<T>(static_cast<WrapType<T>>(a) << b);
  }
};
struct RightShift {
  template <typename T, typename = std::enable_if_t<kIsInt<T>>>
  DA_HD T operator()(T a, T b) const {
    if (IsNegative(b) || b >= T(sizeof(T) * 8)) return IsNegative(a) ? T(-1) : T(0);
    return static_cast<T>(a >> b);
  }
};

// ---- Unary.

struct Negative {
  template <typename T, typename = std::enable_if_t<!kIsBool<T>>>
  DA_HD T operator()(T a) const {
    return WrappingSubtract(T(0), a);
  }
};
struct Positive {
  template <typename T, typename = std::enable_if_t<!kIsBool<T>>>
  DA_HD T operator()(T a) const {
    return a;
  }
};
// The magnitude of a complex number is real: absolute(complex64) is float32, as in NumPy.
struct Absolute {
  template <typename T>
  DA_HD auto operator()(T a) const {
    if constexpr (kIsComplex<T>)
      return Magnitude(a);
    else if constexpr (kIsFloat<T>)
      return a < 0 ? -a : (a == 0 ? T(0) : a);  // -0.0 -> 0.0
    else if constexpr (std::is_signed_v<T> && !kIsBool<T>)
      return a < 0 ? WrappingSubtract(T(0), a) : a;
    else
      return a;
  }
};
struct Sign {
  template <typename T, typename = std::enable_if_t<!kIsBool<T>>>
  DA_HD T operator()(T a) const {
    if constexpr (kIsComplex<T>) {
      return ComplexSign(a);  // NumPy 2: z / |z|
    } else {
      if (a != a) return a;  // NaN
      return static_cast<T>(int{T(0) < a} - int{IsNegative(a)});
    }
  }
};
struct Square {
  template <typename T, typename = std::enable_if_t<!kIsBool<T>>>
  DA_HD T operator()(T a) const {
    return WrappingMultiply(a, a);
  }
};
struct Invert {
  template <typename T, typename = std::enable_if_t<!kIsFloat<T>>>
  DA_HD T operator()(T a) const {
    if constexpr (kIsBool<T>)
      return !a;
    else
      return static_cast<T>(~a);
  }
};
struct LogicalNot {
  template <typename T>
  DA_HD bool operator()(T a) const {
    return !(a != T(0));
  }
};
struct IsNan {
  template <typename T>
  DA_HD bool operator()(T a) const {
    return a != a;
  }
};
struct IsInf {
  template <typename T>
  DA_HD bool operator()(T a) const {
    if constexpr (kIsComplex<T>)
      return (*this)(a.re) || (*this)(a.im);
    else if constexpr (kIsFloat<T>)
      return a == std::numeric_limits<T>::infinity() || a == -std::numeric_limits<T>::infinity();
    else
      return false;
  }
};
struct IsFinite {
  template <typename T>
  DA_HD bool operator()(T a) const {
    if constexpr (kIsComplex<T>)
      return (*this)(a.re) && (*this)(a.im);
    else if constexpr (kIsFloat<T>)
      return a - a == T(0);  // false for inf and NaN
    else
      return true;
  }
};
// floor/ceil/trunc leave integers as they are, in their own dtype (NumPy 2).
#define DA_ROUNDING(Name, fn)       \
  struct Name {                     \
    template <typename T>           \
    DA_HD T operator()(T a) const { \
      if constexpr (kIsFloat<T>)    \
        return math::fn(a);         \
      else                          \
        return a;                   \
    }                               \
  };
DA_ROUNDING(Floor, floor)
DA_ROUNDING(Ceil, ceil)
DA_ROUNDING(Trunc, trunc)
#undef DA_ROUNDING
// Floating-point functions, real (real_math.h) and complex (complex_math.h); integer inputs are
// computed in a float type the planner picks.
#define DA_FLOAT_FN(Name, fn)                                         \
  struct Name {                                                       \
    template <typename T, typename = std::enable_if_t<kIsInexact<T>>> \
    DA_HD T operator()(T a) const {                                   \
      return math::fn(a);                                             \
    }                                                                 \
  };
DA_FLOAT_FN(Sqrt, sqrt)
DA_FLOAT_FN(Exp, exp)
DA_FLOAT_FN(Expm1, expm1)
DA_FLOAT_FN(Log, log)
DA_FLOAT_FN(Log1p, log1p)
DA_FLOAT_FN(Log2, log2)
DA_FLOAT_FN(Log10, log10)
DA_FLOAT_FN(Sin, sin)
DA_FLOAT_FN(Cos, cos)
DA_FLOAT_FN(Tan, tan)
DA_FLOAT_FN(Arcsin, asin)
DA_FLOAT_FN(Arccos, acos)
DA_FLOAT_FN(Arctan, atan)
DA_FLOAT_FN(Sinh, sinh)
DA_FLOAT_FN(Cosh, cosh)
DA_FLOAT_FN(Tanh, tanh)
DA_FLOAT_FN(Rint, rint)
DA_FLOAT_FN(Arcsinh, asinh)
DA_FLOAT_FN(Arccosh, acosh)
DA_FLOAT_FN(Arctanh, atanh)
#undef DA_FLOAT_FN

// The next float after a towards b. Real floats only: the planner refuses the 16-bit floats,
// whose loops compute in float32 (the float32 neighbour would round back to a).
struct Nextafter {
  template <typename T, typename = std::enable_if_t<kIsFloat<T>>>
  DA_HD T operator()(T a, T b) const {
    return math::nextafter(a, b);
  }
};
// The sign bit, read through copysign so a NaN's sign shows (a comparison cannot see it).
struct Signbit {
  template <typename T, typename = std::enable_if_t<!kIsComplex<T>>>
  DA_HD bool operator()(T a) const {
    if constexpr (kIsFloat<T>)
      return math::copysign(T(1), a) < T(0);
    else if constexpr (kIsBool<T>)
      return false;
    else
      return IsNegative(a);
  }
};

// ---- Ternary. `where`'s condition arrives as bool; clip is minimum(maximum(a, lo), hi).

struct Where {
  template <typename T>
  DA_HD T operator()(bool condition, T x, T y) const {
    return condition ? x : y;
  }
};
struct Clip {
  template <typename T>
  DA_HD T operator()(T a, T lo, T hi) const {
    return Minimum{}(Maximum{}(a, lo), hi);
  }
};

// How the planner turns the operands' promoted dtype into the compute dtype (see
// elementwise_planner.cc; NumPy's loop selection for each class).
enum class TypeRule {
  kSame,        // compute in the promoted dtype; bool where the functor takes it
  kBoolAsInt8,  // like kSame, but bool computes in int8 (NumPy's square, power, // and %)
  kTrueDivide,  // integers and bool in float64
  kFloatMath,   // bool/int8/uint8 in float16, int16/uint16 in float32, wider in float64
  kNoFloat,     // integers and bool only
  kShift,       // integers only; bool computes in int8
  kWhere,       // operand 0 is a condition (cast to bool); operands 1 and 2 promote
};

// Whether an op computes on complex numbers: NumPy defines most ufuncs on complex, and the ones it
// lacks (floor division, rounding, bitwise ops, arctan2, hypot) are a type error.
enum class ComplexSupport {
  kYes,
  kNumPyLacks,
};

}  // namespace ufunc

// The table: X(ProtoSuffix, Functor, numpy_name, arity, rule, complex). ProtoSuffix names
// distarray.v1.ElementwiseOp's ELEMENTWISE_OP_<ProtoSuffix>, and the op's id below; `complex`
// says whether the op takes complex64/complex128 (ComplexSupport).
#define DISTARRAY_ELEMENTWISE_OPS(X)                                        \
  X(ADD, Add, "add", 2, kSame, kYes)                                        \
  X(SUBTRACT, Subtract, "subtract", 2, kSame, kYes)                         \
  X(MULTIPLY, Multiply, "multiply", 2, kSame, kYes)                         \
  X(DIVIDE, TrueDivide, "true_divide", 2, kTrueDivide, kYes)                \
  X(FLOOR_DIVIDE, FloorDivide, "floor_divide", 2, kBoolAsInt8, kNumPyLacks) \
  X(REMAINDER, Remainder, "remainder", 2, kBoolAsInt8, kNumPyLacks)         \
  X(POWER, Power, "power", 2, kBoolAsInt8, kYes)                            \
  X(MAXIMUM, Maximum, "maximum", 2, kSame, kYes)                            \
  X(MINIMUM, Minimum, "minimum", 2, kSame, kYes)                            \
  X(FMAX, Fmax, "fmax", 2, kSame, kYes)                                     \
  X(FMIN, Fmin, "fmin", 2, kSame, kYes)                                     \
  X(ARCTAN2, Arctan2, "arctan2", 2, kFloatMath, kNumPyLacks)                \
  X(HYPOT, Hypot, "hypot", 2, kFloatMath, kNumPyLacks)                      \
  X(LESS, Less, "less", 2, kSame, kYes)                                     \
  X(LESS_EQUAL, LessEqual, "less_equal", 2, kSame, kYes)                    \
  X(GREATER, Greater, "greater", 2, kSame, kYes)                            \
  X(GREATER_EQUAL, GreaterEqual, "greater_equal", 2, kSame, kYes)           \
  X(EQUAL, Equal, "equal", 2, kSame, kYes)                                  \
  X(NOT_EQUAL, NotEqual, "not_equal", 2, kSame, kYes)                       \
  X(LOGICAL_AND, LogicalAnd, "logical_and", 2, kSame, kYes)                 \
  X(LOGICAL_OR, LogicalOr, "logical_or", 2, kSame, kYes)                    \
  X(LOGICAL_XOR, LogicalXor, "logical_xor", 2, kSame, kYes)                 \
  X(BITWISE_AND, BitwiseAnd, "bitwise_and", 2, kNoFloat, kNumPyLacks)       \
  X(BITWISE_OR, BitwiseOr, "bitwise_or", 2, kNoFloat, kNumPyLacks)          \
  X(BITWISE_XOR, BitwiseXor, "bitwise_xor", 2, kNoFloat, kNumPyLacks)       \
  X(LEFT_SHIFT, LeftShift, "left_shift", 2, kShift, kNumPyLacks)            \
  X(RIGHT_SHIFT, RightShift, "right_shift", 2, kShift, kNumPyLacks)         \
  X(NEXTAFTER, Nextafter, "nextafter", 2, kFloatMath, kNumPyLacks)          \
  X(NEGATIVE, Negative, "negative", 1, kSame, kYes)                         \
  X(POSITIVE, Positive, "positive", 1, kSame, kYes)                         \
  X(ABS, Absolute, "absolute", 1, kSame, kYes)                              \
  X(SIGN, Sign, "sign", 1, kSame, kYes)                                     \
  X(SQUARE, Square, "square", 1, kBoolAsInt8, kYes)                         \
  X(SQRT, Sqrt, "sqrt", 1, kFloatMath, kYes)                                \
  X(EXP, Exp, "exp", 1, kFloatMath, kYes)                                   \
  X(EXPM1, Expm1, "expm1", 1, kFloatMath, kYes)                             \
  X(LOG, Log, "log", 1, kFloatMath, kYes)                                   \
  X(LOG1P, Log1p, "log1p", 1, kFloatMath, kYes)                             \
  X(LOG2, Log2, "log2", 1, kFloatMath, kYes)                                \
  X(LOG10, Log10, "log10", 1, kFloatMath, kYes)                             \
  X(SIN, Sin, "sin", 1, kFloatMath, kYes)                                   \
  X(COS, Cos, "cos", 1, kFloatMath, kYes)                                   \
  X(TAN, Tan, "tan", 1, kFloatMath, kYes)                                   \
  X(ARCSIN, Arcsin, "arcsin", 1, kFloatMath, kYes)                          \
  X(ARCCOS, Arccos, "arccos", 1, kFloatMath, kYes)                          \
  X(ARCTAN, Arctan, "arctan", 1, kFloatMath, kYes)                          \
  X(SINH, Sinh, "sinh", 1, kFloatMath, kYes)                                \
  X(COSH, Cosh, "cosh", 1, kFloatMath, kYes)                                \
  X(TANH, Tanh, "tanh", 1, kFloatMath, kYes)                                \
  X(FLOOR, Floor, "floor", 1, kSame, kNumPyLacks)                           \
  X(CEIL, Ceil, "ceil", 1, kSame, kNumPyLacks)                              \
  X(TRUNC, Trunc, "trunc", 1, kSame, kNumPyLacks)                           \
  X(RINT, Rint, "rint", 1, kFloatMath, kYes)                                \
  X(LOGICAL_NOT, LogicalNot, "logical_not", 1, kSame, kYes)                 \
  X(INVERT, Invert, "invert", 1, kNoFloat, kNumPyLacks)                     \
  X(ISNAN, IsNan, "isnan", 1, kSame, kYes)                                  \
  X(ISINF, IsInf, "isinf", 1, kSame, kYes)                                  \
  X(ISFINITE, IsFinite, "isfinite", 1, kSame, kYes)                         \
  X(SIGNBIT, Signbit, "signbit", 1, kSame, kNumPyLacks)                     \
  X(ARCSINH, Arcsinh, "arcsinh", 1, kFloatMath, kYes)                       \
  X(ARCCOSH, Arccosh, "arccosh", 1, kFloatMath, kYes)                       \
  X(ARCTANH, Arctanh, "arctanh", 1, kFloatMath, kYes)                       \
  X(WHERE, Where, "where", 3, kWhere, kYes)                                 \
  X(CLIP, Clip, "clip", 3, kSame, kYes)

// An op's id; the numeric values are internal (the proto enum has its own numbers).
enum class ElementwiseOpId : int {
#define DA_OP_ID(suffix, functor, name, arity, rule, complex) k##functor,
  DISTARRAY_ELEMENTWISE_OPS(DA_OP_ID)
#undef DA_OP_ID
      kCount
};

namespace ufunc {
// Each functor's ComplexSupport, from the table.
template <typename Op>
inline constexpr ComplexSupport kComplexSupport = ComplexSupport::kNumPyLacks;
#define DA_COMPLEX_SUPPORT(suffix, F, name, arity, rule, complex) \
  template <>                                                     \
  inline constexpr ComplexSupport kComplexSupport<F> = ComplexSupport::complex;
DISTARRAY_ELEMENTWISE_OPS(DA_COMPLEX_SUPPORT)
#undef DA_COMPLEX_SUPPORT

// Whether the functor is defined for compute type T (with its operand arity). On complex types
// only the ops the table marks are instantiated: NumPy has no complex loop for the others.
template <typename Op, typename T, int kArity>
constexpr bool Accepts() {
  if constexpr (kIsComplex<T> && kComplexSupport<Op> != ComplexSupport::kYes)
    return false;
  else if constexpr (kArity == 1)
    return std::is_invocable_v<Op, T>;
  else if constexpr (kArity == 2)
    return std::is_invocable_v<Op, T, T>;
  else if constexpr (std::is_same_v<Op, Where>)
    return std::is_invocable_v<Op, bool, T, T>;
  else
    return std::is_invocable_v<Op, T, T, T>;
}
// The result type of the functor on compute type T.
template <typename Op, typename T, int kArity>
struct ResultOf;
template <typename Op, typename T>
struct ResultOf<Op, T, 1> {
  using type = std::invoke_result_t<Op, T>;
};
template <typename Op, typename T>
struct ResultOf<Op, T, 2> {
  using type = std::invoke_result_t<Op, T, T>;
};
template <typename Op, typename T>
struct ResultOf<Op, T, 3> {
  using type = std::invoke_result_t<Op, T, T, T>;
};
template <typename T>
struct ResultOf<Where, T, 3> {  // the condition is bool, not T
  using type = T;
};

// astype: C++ conversion made total. Float to integer saturates and NaN becomes 0 (what CUDA's
// conversion instructions do; in C++ the out-of-range conversion is undefined); anything to bool
// is `!= 0`.
template <typename To, typename From>
DA_HD To Cast(From v) {
  if constexpr (kIsComplex<From> && !kIsComplex<To>) {
    // NumPy's complex -> real: the real part (bool: whether either part is nonzero).
    if constexpr (std::is_same_v<To, bool>)
      return static_cast<bool>(v);
    else
      return Cast<To>(v.re);
  } else if constexpr (kIsComplex<To>) {
    return To(v);  // the real part, or complex64 <-> complex128 part by part
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (kIsFloat<From> && kIsInt<To>) {
    if (v != v) return 0;
    // Bounds as powers of two, exact in From: lowest() and max() + 1.
    const From lo = static_cast<From>(std::numeric_limits<To>::lowest());
    const From hi = static_cast<From>(std::numeric_limits<To>::max() / 2 + 1) * From(2);
    if (v <= lo) return std::numeric_limits<To>::lowest();
    if (v >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}
}  // namespace ufunc

}  // namespace distarray

#endif  // DISTARRAY_SERVER_KERNELS_UFUNCS_H_
