// The elementary functions of complex64/complex128 elements, shared by the host loops and the CUDA
// kernels (and so written with the C math functions only, no std::complex, which device code and
// the runtime compiler lack). They overload real_math.h's templates, so a ufunc functor calls
// `math::exp(x)` for real and complex x alike.
//
// Accuracy is normwise: each result is within a small multiple of the type's epsilon of the exact
// value's magnitude. Where the textbook formula cancels, the formulas are the careful ones:
//  - log: near |z| = 1, log|z| as log1p(|z|^2 - 1) / 2 with |z|^2 - 1 = (x - 1)(x + 1) + y^2;
//  - log1p: log1p of 2x + x^2 + y^2 for small z (NumPy's own loop rounds 1 + z first);
//  - sqrt: the stable half-angle form, scaled near overflow;
//  - tanh and tan: Kahan's form through tan(y) and sinh(x), accurate near the poles;
//  - arcsin and arccos: Kahan's, through sqrt(1 - z) and sqrt(1 + z), accurate near +-1.
// Special values (infinities, NaN, signed zeros) follow C99 Annex G for exp, expm1, log, sqrt,
// sinh, cosh, tanh, arccos, arcsinh, arccosh and arctanh (arctan through arctanh), as NumPy's
// (libm's) do, with the array API standard's choices where the two differ (each function says
// which); arcsin propagates NaN and is not tuned on its branch cuts' signed zeros.
//
// The ordering is NumPy's lexicographic one: by the real parts, then the imaginary parts, with
// NaN in either part of either operand making every ordered comparison false.
#ifndef DISTARRAY_SERVER_KERNELS_COMPLEX_MATH_H_
#define DISTARRAY_SERVER_KERNELS_COMPLEX_MATH_H_

#include <limits>
#include <type_traits>

#include "common/complex.h"
#include "server/kernels/real_math.h"

namespace distarray {
namespace ufunc {
namespace complex_detail {

template <typename R>
DA_HD bool IsNan(R x) {
  return x != x;
}
template <typename R>
DA_HD bool IsInf(R x) {
  return x == std::numeric_limits<R>::infinity() || x == -std::numeric_limits<R>::infinity();
}
template <typename R>
DA_HD bool IsFinite(R x) {
  return x - x == R(0);  // false for inf and NaN
}
template <typename R>
DA_HD R NaN() {
  return std::numeric_limits<R>::quiet_NaN();
}
template <typename R>
DA_HD R Inf() {
  return std::numeric_limits<R>::infinity();
}
template <typename R>
DA_HD bool HasNan(Complex<R> z) {
  return IsNan(z.re) || IsNan(z.im);
}
// i z and -i z, exactly.
template <typename R>
DA_HD Complex<R> TimesI(Complex<R> z) {
  return {-z.im, z.re};
}
template <typename R>
DA_HD Complex<R> TimesMinusI(Complex<R> z) {
  return {z.im, -z.re};
}

// arccos's real part, and the magnitude of arccosh's imaginary part, where x or y is infinite
// (neither NaN): the angle of x + i|y| seen from far away (C99 Annex G's cacos and cacosh).
template <typename R>
DA_HD R AngleAtInfinity(R x, R y) {
  const R pi = R(3.14159265358979323846264338327950288);
  if (!IsInf(x)) return R(0.5) * pi;
  if (IsInf(y)) return x < 0 ? R(0.75) * pi : R(0.25) * pi;
  return x < 0 ? pi : R(0);
}

}  // namespace complex_detail

// ---- NumPy's lexicographic order (its CLT/CLE/CGT/CGE macros).

template <typename R>
DA_HD bool ComplexLess(Complex<R> a, Complex<R> b) {
  using complex_detail::IsNan;
  return (a.re < b.re && !IsNan(a.im) && !IsNan(b.im)) || (a.re == b.re && a.im < b.im);
}
template <typename R>
DA_HD bool ComplexLessEqual(Complex<R> a, Complex<R> b) {
  using complex_detail::IsNan;
  return (a.re < b.re && !IsNan(a.im) && !IsNan(b.im)) || (a.re == b.re && a.im <= b.im);
}

namespace math {

template <typename R>
DA_HD Complex<R> exp(Complex<R> z) {
  using complex_detail::IsFinite;
  using complex_detail::IsInf;
  using complex_detail::NaN;
  R im = z.im;
  if (im == 0) return {exp(z.re), im};  // a real argument stays real, with im's signed zero
  if (IsInf(z.re)) {
    if (z.re < 0) {
      if (!IsFinite(im)) im = R(1);  // exp(-inf + i y) is a zero for every y
    } else if (!IsFinite(im)) {
      return {z.re, IsInf(im) ? NaN<R>() : im};  // exp(+inf + i inf/NaN) = inf + i NaN
    }
  }
  const R e = exp(z.re);
  return {e * cos(im), e * sin(im)};
}

template <typename R>
DA_HD Complex<R> log(Complex<R> z) {
  const R ax = copysign(z.re, R(1)), ay = copysign(z.im, R(1));
  const R big = ax > ay ? ax : ay, small = ax > ay ? ay : ax;
  R re;
  if (big >= R(0.5) && big <= R(2))
    re = R(0.5) * log1p((big - R(1)) * (big + R(1)) + small * small);
  else
    re = log(Magnitude(z));
  return {re, atan2(z.im, z.re)};
}

template <typename R>
DA_HD Complex<R> log1p(Complex<R> z) {
  const R ax = copysign(z.re, R(1)), ay = copysign(z.im, R(1));
  if (ax < R(0.5) && ay < R(0.5))  // |1 + z|^2 - 1 = x (2 + x) + y^2 without rounding 1 + z
    return {R(0.5) * log1p(z.re * (R(2) + z.re) + z.im * z.im), atan2(z.im, R(1) + z.re)};
  return log(Complex<R>(R(1) + z.re, z.im));
}

template <typename R>
DA_HD Complex<R> log2(Complex<R> z) {
  const Complex<R> l = log(z);
  const R log2_e = R(1.44269504088896340735992468100189214);
  return {l.re * log2_e, l.im * log2_e};
}

template <typename R>
DA_HD Complex<R> log10(Complex<R> z) {
  const Complex<R> l = log(z);
  const R log10_e = R(0.434294481903251827651128918916605082);
  return {l.re * log10_e, l.im * log10_e};
}

// NumPy's expm1: exp(x) cos(y) - 1 as expm1(x) cos(y) - 2 sin^2(y / 2). Special values are exp's
// (C99 Annex G) minus one, with the array API's zeros: expm1(+-0 + i0) = 0 + i0 and
// expm1(-inf + i y) = -1 + i0 for every y.
template <typename R>
DA_HD Complex<R> expm1(Complex<R> z) {
  using complex_detail::IsFinite;
  using complex_detail::IsInf;
  using complex_detail::NaN;
  const R x = z.re, y = z.im;
  if (y == 0) return {x == 0 ? R(0) : expm1(x), y};  // a real argument stays real
  if (IsInf(x)) {
    if (x < 0) return {R(-1), IsFinite(y) ? copysign(R(0), sin(y)) : R(0)};
    if (!IsFinite(y)) return {x, NaN<R>()};  // +inf + i inf/NaN = inf + i NaN
    return {x * cos(y), x * sin(y)};
  }
  const R half_sin = sin(y * R(0.5));
  return {expm1(x) * cos(y) - R(2) * half_sin * half_sin, exp(x) * sin(y)};
}

template <typename R>
DA_HD Complex<R> sqrt(Complex<R> z) {
  using complex_detail::Inf;
  using complex_detail::IsInf;
  using complex_detail::IsNan;
  using complex_detail::NaN;
  R x = z.re, y = z.im;
  if (x == 0 && y == 0) return {R(0), y};
  if (IsInf(y)) return {Inf<R>(), y};
  if (IsNan(x)) return {x, NaN<R>()};
  if (IsInf(x)) {
    if (x > 0) return {x, IsNan(y) ? y : copysign(R(0), y)};
    return {IsNan(y) ? y : R(0), copysign(Inf<R>(), y)};
  }
  if (IsNan(y)) return {y, y};
  // sqrt(z) = (t, y / 2t) with t = sqrt((|x| + |z|) / 2) for x >= 0, mirrored for x < 0: no
  // cancellation. A quarter of z keeps |x| + |z| finite; its root is half of z's.
  R scale = 1;
  const R quarter_max = std::numeric_limits<R>::max() / R(4);
  if (copysign(x, R(1)) > quarter_max || copysign(y, R(1)) > quarter_max) {
    x *= R(0.25);
    y *= R(0.25);
    scale = 2;
  }
  const R t = sqrt(R(0.5) * (copysign(x, R(1)) + Magnitude(Complex<R>(x, y))));
  if (x >= 0) return {scale * t, scale * (y / (R(2) * t))};
  return {scale * (copysign(y, R(1)) / (R(2) * t)), scale * copysign(t, y)};
}

template <typename R>
DA_HD Complex<R> sinh(Complex<R> z) {
  using complex_detail::IsFinite;
  using complex_detail::IsInf;
  using complex_detail::NaN;
  if (IsInf(z.re) && !IsFinite(z.im)) return {z.re, NaN<R>()};
  if (z.re == 0 && !IsFinite(z.im)) return {z.re, NaN<R>()};
  if (z.im == 0 && !IsFinite(z.re)) return z;
  return {sinh(z.re) * cos(z.im), cosh(z.re) * sin(z.im)};
}

template <typename R>
DA_HD Complex<R> cosh(Complex<R> z) {
  using complex_detail::IsFinite;
  using complex_detail::IsInf;
  using complex_detail::NaN;
  if (IsInf(z.re) && !IsFinite(z.im)) return {copysign(z.re, R(1)), NaN<R>()};
  if (z.re == 0 && !IsFinite(z.im)) return {NaN<R>(), z.re};
  // cosh is even: the imaginary zero of a real argument carries the sign of x y.
  if (z.im == 0 && !IsFinite(z.re)) return {copysign(z.re, R(1)), copysign(R(0), z.re) * z.im};
  return {cosh(z.re) * cos(z.im), sinh(z.re) * sin(z.im)};
}

// Kahan's tanh: with t = tan(y), s = sinh(x), b = 1 + t^2,
// tanh(z) = (b s sqrt(1 + s^2) + i t) / (1 + b s^2). Unlike sinh(2x) / (cosh(2x) + cos(2y)) it
// does not cancel near the poles at y = pi/2 + k pi. Past |x| = 22 (9 for float) tanh(x) is 1 to
// the type's precision and s^2 would overflow.
template <typename R>
DA_HD Complex<R> tanh(Complex<R> z) {
  using complex_detail::IsFinite;
  using complex_detail::IsInf;
  using complex_detail::IsNan;
  using complex_detail::NaN;
  const R x = z.re, y = z.im;
  // Annex G's special values, with the array API's signed zero: tanh(+-inf + i y) = +-1 + i0
  // signed by y (C99 signs it by sin(2y)).
  if (IsInf(x)) return {copysign(R(1), x), IsFinite(y) ? copysign(R(0), y) : R(0)};
  if (IsNan(x) && y == 0) return z;
  if (!IsFinite(y)) {  // C11: tanh(+-0 + i inf/NaN) = +-0 + i NaN; other finite x: NaN + i NaN
    return {x == 0 ? x : NaN<R>(), NaN<R>()};
  }
  const R large = std::is_same_v<R, float> ? R(9) : R(22);
  if (copysign(x, R(1)) >= large) {
    const R e = exp(-copysign(x, R(1)));
    return {copysign(R(1), x), R(4) * sin(y) * cos(y) * e * e};
  }
  const R t = tan(y);
  const R b = R(1) + t * t;
  const R s = sinh(x);
  const R rho = sqrt(R(1) + s * s);
  const R denominator = R(1) + b * s * s;
  return {b * rho * s / denominator, t / denominator};
}

// sin z = -i sinh(i z), cos z = cosh(i z), tan z = -i tanh(i z).
template <typename R>
DA_HD Complex<R> sin(Complex<R> z) {
  return complex_detail::TimesMinusI(sinh(complex_detail::TimesI(z)));
}
template <typename R>
DA_HD Complex<R> cos(Complex<R> z) {
  return cosh(complex_detail::TimesI(z));
}
template <typename R>
DA_HD Complex<R> tan(Complex<R> z) {
  return complex_detail::TimesMinusI(tanh(complex_detail::TimesI(z)));
}

// Kahan's arcsin ("Branch cuts for complex elementary functions", 1987):
// Re = atan(x / Re(sqrt(1 - z) sqrt(1 + z))), Im = asinh(Im(conj(sqrt(1 - z)) sqrt(1 + z))).
// 1 - z and 1 + z are exact near +-1, where the textbook -i log(iz + sqrt(1 - z^2)) cancels.
template <typename R>
DA_HD Complex<R> asin(Complex<R> z) {
  using complex_detail::IsInf;
  if (IsInf(z.re) && IsInf(z.im))
    return {copysign(R(0.785398163397448309615660845819875721), z.re), z.im};
  const Complex<R> one_minus = sqrt(Complex<R>(R(1) - z.re, -z.im));
  const Complex<R> one_minus_conj = sqrt(Complex<R>(R(1) - z.re, z.im));
  const Complex<R> one_plus = sqrt(Complex<R>(R(1) + z.re, z.im));
  R re;
  if (z.re == 0)
    re = z.re;
  else if (IsInf(z.re))
    re = copysign(R(1.57079632679489661923132169163975144), z.re);
  else
    re = atan2(z.re, one_minus.re * one_plus.re - one_minus.im * one_plus.im);
  const R im =
      asinh(copysign(one_minus_conj.re * one_plus.im + one_minus_conj.im * one_plus.re, z.im));
  return {re, im};
}

// Kahan's arccos: Re = 2 atan(Re sqrt(1 - z) / Re sqrt(1 + z)),
// Im = asinh(Im(conj(sqrt(1 + z)) sqrt(1 - z))).
// Special values: C99 Annex G's cacos.
template <typename R>
DA_HD Complex<R> acos(Complex<R> z) {
  using complex_detail::Inf;
  using complex_detail::IsInf;
  using complex_detail::IsNan;
  using complex_detail::NaN;
  const R x = z.re, y = z.im;
  const R pi = R(3.14159265358979323846264338327950288);
  if (IsNan(x)) return {x, IsInf(y) ? -y : NaN<R>()};  // NaN -+ i inf, or NaN + i NaN
  if (IsNan(y)) {
    if (IsInf(x)) return {y, -x};         // NaN -+ i inf
    if (x == 0) return {R(0.5) * pi, y};  // pi/2 + i NaN
    return {NaN<R>(), NaN<R>()};
  }
  if (IsInf(x) || IsInf(y)) return {complex_detail::AngleAtInfinity(x, y), -copysign(Inf<R>(), y)};
  const Complex<R> one_minus = sqrt(Complex<R>(R(1) - z.re, -z.im));
  const Complex<R> one_plus = sqrt(Complex<R>(R(1) + z.re, z.im));
  const Complex<R> one_plus_conj = sqrt(Complex<R>(R(1) + z.re, -z.im));
  return {R(2) * atan2(one_minus.re, one_plus.re),
          asinh(one_plus_conj.re * one_minus.im + one_plus_conj.im * one_minus.re)};
}

// atanh z = (log1p(z) - log1p(-z)) / 2 with the accurate log1p: no cancellation for small z.
// Special values: C99 Annex G's catanh (odd, and conj(atanh z) = atanh(conj z)).
// arctan z = -i atanh(i z).
template <typename R>
DA_HD Complex<R> atanh(Complex<R> z) {
  using complex_detail::IsInf;
  using complex_detail::IsNan;
  using complex_detail::NaN;
  const R x = z.re, y = z.im;
  const R half_pi = R(1.57079632679489661923132169163975144);
  if (IsNan(x)) {
    if (IsInf(y)) return {copysign(R(0), x), copysign(half_pi, y)};  // +-0 + i pi/2
    return {NaN<R>(), NaN<R>()};
  }
  if (IsNan(y)) {
    if (IsInf(x) || x == 0) return {copysign(R(0), x), y};  // +-0 + i NaN
    return {NaN<R>(), NaN<R>()};
  }
  if (IsInf(x) || IsInf(y)) return {copysign(R(0), x), copysign(half_pi, y)};
  const Complex<R> up = log1p(z), down = log1p(-z);
  // On the imaginary axis the real part is the argument's signed zero (atanh is odd).
  return {x == 0 ? x : R(0.5) * (up.re - down.re), R(0.5) * (up.im - down.im)};
}

// asinh z = -i asin(i z), through Kahan's arcsin for finite z. Special values: C99 Annex G's
// casinh (odd, and conj(asinh z) = asinh(conj z)).
template <typename R>
DA_HD Complex<R> asinh(Complex<R> z) {
  using complex_detail::Inf;
  using complex_detail::IsInf;
  using complex_detail::IsNan;
  using complex_detail::NaN;
  const R x = z.re, y = z.im;
  if (IsNan(x)) {
    if (y == 0) return z;                       // NaN + i0
    if (IsInf(y)) return {Inf<R>(), NaN<R>()};  // +-inf + i NaN (either sign)
    return {NaN<R>(), NaN<R>()};
  }
  if (IsNan(y)) {
    if (IsInf(x)) return z;  // +-inf + i NaN
    return {NaN<R>(), NaN<R>()};
  }
  if (IsInf(x) || IsInf(y)) {
    R im;
    if (!IsInf(y))
      im = R(0);
    else if (IsInf(x))
      im = R(0.785398163397448309615660845819875721);
    else
      im = R(1.57079632679489661923132169163975144);
    return {copysign(Inf<R>(), x), copysign(im, y)};
  }
  return complex_detail::TimesMinusI(asin(complex_detail::TimesI(z)));
}

// Kahan's arccosh: Re = asinh(Re(conj(sqrt(z - 1)) sqrt(z + 1))), Im = 2 atan(Im sqrt(z - 1) /
// Re sqrt(z + 1)); z - 1 and z + 1 are exact near +-1. Special values: C99 Annex G's cacosh
// (conj(acosh z) = acosh(conj z)), and the array API's acosh(+0 + i NaN) = NaN + i pi/2.
template <typename R>
DA_HD Complex<R> acosh(Complex<R> z) {
  using complex_detail::Inf;
  using complex_detail::IsInf;
  using complex_detail::IsNan;
  using complex_detail::NaN;
  const R x = z.re, y = z.im;
  const R pi = R(3.14159265358979323846264338327950288);
  if (IsNan(x)) return {IsInf(y) ? Inf<R>() : NaN<R>(), NaN<R>()};
  if (IsNan(y)) {
    if (IsInf(x)) return {Inf<R>(), y};   // +inf + i NaN
    if (x == 0) return {y, R(0.5) * pi};  // NaN + i pi/2
    return {NaN<R>(), NaN<R>()};
  }
  if (IsInf(x) || IsInf(y)) return {Inf<R>(), copysign(complex_detail::AngleAtInfinity(x, y), y)};
  const Complex<R> minus = sqrt(Complex<R>(x - R(1), y));
  const Complex<R> plus = sqrt(Complex<R>(x + R(1), y));
  return {copysign(asinh(minus.re * plus.re + minus.im * plus.im), R(1)),
          R(2) * atan2(minus.im, plus.re)};
}
template <typename R>
DA_HD Complex<R> atan(Complex<R> z) {
  return complex_detail::TimesMinusI(atanh(complex_detail::TimesI(z)));
}

template <typename R>
DA_HD Complex<R> rint(Complex<R> z) {
  return {rint(z.re), rint(z.im)};
}

// NumPy's complex power (npymath's npy_cpow): z ** 0 is 1; 0 ** w is 0 for a positive real w and
// NaN otherwise; an integer exponent below 100 in magnitude multiplies by repeated squaring;
// everything else is exp(w log z).
template <typename R>
DA_HD Complex<R> pow(Complex<R> z, Complex<R> w) {
  using complex_detail::NaN;
  if (w.re == 0 && w.im == 0) return {R(1), R(0)};
  if (z.re == 0 && z.im == 0) {
    if (w.re > 0 && w.im == 0) return {R(0), R(0)};
    return {NaN<R>(), NaN<R>()};
  }
  if (w.im == 0 && w.re > R(-100) && w.re < R(100) && w.re == trunc(w.re)) {
    const int n = static_cast<int>(w.re);
    if (n == 1) return z;
    if (n == 2) return z * z;
    if (n == 3) return z * (z * z);
    Complex<R> result(R(1), R(0));
    Complex<R> power = z;
    for (unsigned bits = n < 0 ? -n : n;;) {
      if (bits & 1u) result = result * power;
      bits >>= 1;
      if (bits == 0) break;
      power = power * power;
    }
    return n < 0 ? Complex<R>(R(1), R(0)) / result : result;
  }
  return exp(w * log(z));
}

}  // namespace math

// NumPy 2's sign of a complex number: z / |z|, 0 for 0; an infinite part decides alone (both
// infinite is NaN).
template <typename R>
DA_HD Complex<R> ComplexSign(Complex<R> z) {
  using complex_detail::IsInf;
  using complex_detail::IsNan;
  using complex_detail::NaN;
  if (IsInf(z.re)) {
    if (IsInf(z.im)) return {NaN<R>(), NaN<R>()};
    return {copysign(R(1), z.re), R(0)};
  }
  if (IsInf(z.im)) return {R(0), copysign(R(1), z.im)};
  const R magnitude = Magnitude(z);
  if (IsNan(magnitude)) return {NaN<R>(), NaN<R>()};
  if (magnitude == 0) return {R(0), R(0)};
  return {z.re / magnitude, z.im / magnitude};
}

}  // namespace ufunc
}  // namespace distarray

#endif  // DISTARRAY_SERVER_KERNELS_COMPLEX_MATH_H_
