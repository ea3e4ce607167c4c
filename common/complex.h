// complex64 and complex128 elements: two floats, real part first, laid out as NumPy's and
// cuComplex's are, so uploaded bytes need no conversion. The arithmetic is what NumPy's loops
// compute (npymath): the textbook product, and Smith's algorithm for the quotient, which scales by
// the larger part of the divisor so that |b|^2 neither overflows nor underflows where the quotient
// itself is representable. Shared by the host loops and the CUDA kernels. CUDA-safe: no Abseil or
// protobuf.
#ifndef DISTARRAY_COMMON_COMPLEX_H_
#define DISTARRAY_COMMON_COMPLEX_H_

#include <math.h>

#include <type_traits>

#ifdef __CUDACC__
#define DA_COMPLEX_HD __host__ __device__ __forceinline__
#else
#define DA_COMPLEX_HD inline
#endif

namespace distarray {

template <typename R>
struct alignas(2 * sizeof(R)) Complex {
  static_assert(std::is_floating_point_v<R>);
  using Real = R;
  // No default member initializers: a trivial default constructor lets kernels keep complex
  // accumulators in __shared__ arrays. Value-initialization (`Complex{}`) is zero.
  R re;
  R im;

  Complex() = default;
  DA_COMPLEX_HD constexpr Complex(R real, R imag) : re(real), im(imag) {}
  // A real value is the real part (a 16-bit float converts through float first: CastElement).
  // Explicit, so real and complex operands never mix by an accidental conversion. Only the
  // type traits the runtime compiler's minimal <type_traits> has (fusion/rtc_std) are used here.
  template <typename U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>
  DA_COMPLEX_HD constexpr explicit Complex(U v) : re(static_cast<R>(v)), im(0) {}
  // complex64 <-> complex128, part by part (NumPy's astype).
  template <typename S, std::enable_if_t<!std::is_same_v<S, R>, int> = 0>
  DA_COMPLEX_HD constexpr explicit Complex(Complex<S> v)
      : re(static_cast<R>(v.re)), im(static_cast<R>(v.im)) {}

  // Complex to real is NumPy's: the real part (NumPy also warns that the imaginary part is
  // discarded; an elementwise kernel cannot), and to bool, whether either part is nonzero.
  template <typename U, std::enable_if_t<std::is_arithmetic_v<U>, int> = 0>
  DA_COMPLEX_HD constexpr explicit operator U() const {
    if constexpr (std::is_same_v<U, bool>)
      return re != 0 || im != 0;
    else
      return static_cast<U>(re);
  }
};

using Complex64 = Complex<float>;
using Complex128 = Complex<double>;

template <typename T>
inline constexpr bool kIsComplex = false;
template <typename R>
inline constexpr bool kIsComplex<Complex<R>> = true;

template <typename R>
DA_COMPLEX_HD bool operator==(Complex<R> a, Complex<R> b) {
  return a.re == b.re && a.im == b.im;
}
template <typename R>
DA_COMPLEX_HD bool operator!=(Complex<R> a, Complex<R> b) {
  return !(a == b);
}
template <typename R>
DA_COMPLEX_HD Complex<R> operator+(Complex<R> a, Complex<R> b) {
  return {a.re + b.re, a.im + b.im};
}
template <typename R>
DA_COMPLEX_HD Complex<R> operator-(Complex<R> a, Complex<R> b) {
  return {a.re - b.re, a.im - b.im};
}
template <typename R>
DA_COMPLEX_HD Complex<R> operator-(Complex<R> a) {
  return {-a.re, -a.im};
}
template <typename R>
DA_COMPLEX_HD Complex<R> operator*(Complex<R> a, Complex<R> b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}

namespace complex_internal {
template <typename R>
DA_COMPLEX_HD R Abs(R x) {
  return x < 0 ? -x : x;
}
}  // namespace complex_internal

// Smith's algorithm, as npymath's nc_quot: divide through by the divisor's larger part. A zero
// divisor gives a / 0 part by part (inf or NaN), as NumPy does.
template <typename R>
DA_COMPLEX_HD Complex<R> operator/(Complex<R> a, Complex<R> b) {
  using complex_internal::Abs;
  const R abs_br = Abs(b.re), abs_bi = Abs(b.im);
  if (abs_br >= abs_bi) {
    if (abs_br == 0 && abs_bi == 0) return {a.re / abs_br, a.im / abs_bi};
    const R ratio = b.im / b.re;
    const R scale = R(1) / (b.re + b.im * ratio);
    return {(a.re + a.im * ratio) * scale, (a.im - a.re * ratio) * scale};
  }
  const R ratio = b.re / b.im;
  const R scale = R(1) / (b.im + b.re * ratio);
  return {(a.re * ratio + a.im) * scale, (a.im * ratio - a.re) * scale};
}

// |z| without overflow or underflow in the squares (hypot), as NumPy's absolute.
template <typename R>
DA_COMPLEX_HD R Magnitude(Complex<R> z) {
  if constexpr (std::is_same_v<R, float>)
    return ::hypotf(z.re, z.im);
  else
    return ::hypot(z.re, z.im);
}

}  // namespace distarray

#endif  // DISTARRAY_COMMON_COMPLEX_H_
