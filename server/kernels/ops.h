// Element-level operations shared by the host loops and the CUDA kernels, so both backends
// compute bit-identical generated values and the same arithmetic. CUDA-safe header.
#ifndef DISTARRAY_SERVER_KERNELS_OPS_H_
#define DISTARRAY_SERVER_KERNELS_OPS_H_

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "common/complex.h"
#include "common/half.h"
#include "common/mode.h"
#include "common/strided_box.h"
#include "server/kernels/complex_math.h"
#include "server/kernels/wrapping.h"

namespace distarray {

enum class Combine { kAssign, kAdd, kMultiply, kMax, kMin };

// How copies of an element combine in `mode`; REPLICA copies are equal, so one just overwrites.
constexpr Combine CombineFor(Mode mode) {
  switch (mode) {
    case Mode::kSum:
      return Combine::kAdd;
    case Mode::kProd:
      return Combine::kMultiply;
    case Mode::kMax:
      return Combine::kMax;
    case Mode::kMin:
      return Combine::kMin;
    default:
      return Combine::kAssign;
  }
}

// A value for every element from its global C-order index alone, so any layout (and any number
// of devices) holds the same array.
struct Generator {
  enum class Kind { kArange, kUniform, kNormal, kIntegers, kLinspace, kEye, kTri };
  Kind kind = Kind::kArange;
  double start = 0, step = 1;  // arange: start + i * step; linspace: the same, last = stop
  double stop = 0;             // linspace with endpoint: the last element's exact value
  int64_t last_index = -1;     // linspace with endpoint: the last element's index (else -1)
  double low = 0, high = 1;    // uniform in [low, high); normal: mean (low), stddev (high)
  int64_t integer_low = 0;     // integers in [integer_low, integer_low + integer_span)
  uint64_t integer_span = 1;
  uint64_t seed = 0;
  // eye and tri: the last two axes' extents, and the diagonal k.
  int64_t rows = 1, cols = 1, diagonal = 0;
};

template <typename T>
DA_HD T ApplyCombine(Combine c, T old_value, T value) {
  switch (c) {
    case Combine::kAdd:
      if constexpr (std::is_same_v<T, bool>)
        return old_value || value;
      else
        return WrappingAdd(old_value, value);
    case Combine::kMultiply:
      if constexpr (std::is_same_v<T, bool>)
        return old_value && value;
      else
        return WrappingMultiply(old_value, value);
    // NaN propagates, as in NumPy's maximum/minimum: a NaN copy of an element makes its MAX/MIN
    // value NaN whichever copy comes first (`x != x` is the NaN test that compiles on both
    // sides and is false for every integer; a complex value is NaN where either part is).
    // Complex numbers compare in NumPy's lexicographic order.
    case Combine::kMax:
      if constexpr (kIsComplex<T>)
        return (ufunc::ComplexLess(old_value, value) || value != value) ? value : old_value;
      else
        return (value > old_value || value != value) ? value : old_value;
    case Combine::kMin:
      if constexpr (kIsComplex<T>)
        return (ufunc::ComplexLess(value, old_value) || value != value) ? value : old_value;
      else
        return (value < old_value || value != value) ? value : old_value;
    default:
      return value;
  }
}

// SplitMix64: a 64-bit mixer (the registry derives handles with it).
DA_HD uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): a
// counter-based generator, so a draw depends only on (seed, counter) and any layout on any number
// of devices produces the same array. The counter is the element's linear index.
struct Philox4x32 {
  uint32_t v[4];
};
DA_HD Philox4x32 Philox(uint64_t seed, uint64_t counter) {
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
  uint32_t c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0;
    const uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2;
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Philox4x32{{c0, c1, c2, c3}};
}

// 53 random bits as a double in [0, 1).
DA_HD double UnitDouble(uint32_t hi, uint32_t lo) {
  const uint64_t bits = (static_cast<uint64_t>(hi) << 32 | lo) >> 11;
  return static_cast<double>(bits) * (1.0 / 9007199254740992.0);
}

// The high 64 bits of a 64 x 64-bit product (Lemire's unbiased-enough range reduction).
DA_HD uint64_t MulHigh64(uint64_t a, uint64_t b) {
#ifdef __CUDA_ARCH__
  return __umul64hi(a, b);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64);
#endif
}

// A real value of the generator at `linear_index` (double; the caller converts).
DA_HD double GeneratedReal(const Generator& g, int64_t linear_index) {
  switch (g.kind) {
    case Generator::Kind::kArange:
      return g.start + g.step * static_cast<double>(linear_index);
    case Generator::Kind::kLinspace:
      if (linear_index == g.last_index) return g.stop;
      return g.start + static_cast<double>(linear_index) * g.step;
    case Generator::Kind::kEye:
    case Generator::Kind::kTri: {
      const int64_t column = linear_index % g.cols;
      const int64_t row = (linear_index / g.cols) % g.rows;
      const int64_t offset = column - row;
      return (g.kind == Generator::Kind::kEye ? offset == g.diagonal : offset <= g.diagonal) ? 1.0
                                                                                             : 0.0;
    }
    case Generator::Kind::kNormal: {
      // Box-Muller on two uniform draws, the first in (0, 1] so its logarithm is finite.
      const Philox4x32 r = Philox(g.seed, static_cast<uint64_t>(linear_index));
      const double u1 = 1.0 - UnitDouble(r.v[0], r.v[1]);
      const double u2 = UnitDouble(r.v[2], r.v[3]);
      return g.low + g.high * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    }
    default:
      return 0;  // uniform and integers convert by dtype in GeneratedValue
  }
}

template <typename T>
DA_HD T GeneratedValue(const Generator& g, int64_t linear_index) {
  if constexpr (kIsComplex<T>) {
    // Deterministic kinds are real (as numpy.arange with real start and step); random ones draw
    // both parts independently, the real part from stream 2i and the imaginary part from 2i + 1.
    using R = typename T::Real;
    if (g.kind != Generator::Kind::kUniform && g.kind != Generator::Kind::kNormal) {
      return T(GeneratedValue<R>(g, linear_index));
    }
    return T(GeneratedValue<R>(g, 2 * linear_index), GeneratedValue<R>(g, 2 * linear_index + 1));
  }
  if (g.kind == Generator::Kind::kIntegers) {
    const Philox4x32 r = Philox(g.seed, static_cast<uint64_t>(linear_index));
    const uint64_t bits = static_cast<uint64_t>(r.v[0]) << 32 | r.v[1];
    // low + a draw below the span, in unsigned arithmetic: the span may be up to 2^64 - 1.
    const uint64_t value = static_cast<uint64_t>(g.integer_low) + MulHigh64(bits, g.integer_span);
    if constexpr (std::is_same_v<T, bool>) {
      return value != 0;
    } else if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(value);
    } else {
      return static_cast<T>(static_cast<double>(static_cast<int64_t>(value)));
    }
  }
  if (g.kind != Generator::Kind::kUniform) {
    if constexpr (std::is_same_v<T, bool>) {
      return GeneratedReal(g, linear_index) != 0;
    } else {
      return static_cast<T>(GeneratedReal(g, linear_index));
    }
  }
  const Philox4x32 r = Philox(g.seed, static_cast<uint64_t>(linear_index));
  const double u = UnitDouble(r.v[0], r.v[1]);  // [0, 1)
  if constexpr (std::is_same_v<T, bool>) {
    return u < 0.5;
  } else if constexpr (kIsFloatStorage<T>) {
    T v = static_cast<T>(g.low + u * (g.high - g.low));
    return v < static_cast<T>(g.high) ? v : static_cast<T>(g.low);  // float rounding can hit high
  } else {
    // Integers: floor of a uniform real in [low, high). Floored in double: u * span can pass
    // INT64_MAX for a uint64 range, and rounding can land on `high` itself (outside T for
    // high = 2^64), so that value maps to `low` as the float branch does.
    const double span = g.high - g.low;
    const double v = g.low + floor(u * span);
    return static_cast<T>(v < g.high ? v : g.low);
  }
}

// Element offset of the `linear`-th element (C order) of a strided box. Kernels call it per
// element, so the division is what a strided kernel spends its time on: a 1-d box needs none, and
// on the GPU a 64-bit division (a long emulated sequence) becomes a 32-bit one when both operands
// fit, as they do below 2^32 elements (the sum over axis 0 of a 16384^2 matrix ran at 0.29x of
// the copy rate, compute-bound on 64-bit divisions).
DA_HD int64_t BoxOffset(const StridedBox& box, int64_t linear) {
  if (box.rank == 1) return box.offset + linear * box.stride[0];
  int64_t offset = box.offset;
  for (int d = box.rank - 1; d >= 0; --d) {
    const int64_t c = box.count[d];
    int64_t quotient;
#ifdef __CUDA_ARCH__
    if (((static_cast<uint64_t>(linear) | static_cast<uint64_t>(c)) >> 32) == 0) {
      quotient = static_cast<uint32_t>(linear) / static_cast<uint32_t>(c);
    } else {
      quotient = linear / c;
    }
#else
    quotient = linear / c;
#endif
    offset += (linear - quotient * c) * box.stride[d];
    linear = quotient;
  }
  return offset;
}

}  // namespace distarray

#endif  // DISTARRAY_SERVER_KERNELS_OPS_H_
