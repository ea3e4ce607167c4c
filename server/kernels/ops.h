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

struct Generator {
  enum class Kind { kArange, kUniform };
  Kind kind = Kind::kArange;
  double start = 0, step = 1;  // arange: start + i * step
  double low = 0, high = 1;    // uniform in [low, high)
  uint64_t seed = 0;
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

// SplitMix64: a counter-based generator, so a value depends only on (seed, index) and any
// layout produces the same array.
DA_HD uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <typename T>
DA_HD T GeneratedValue(const Generator& g, int64_t linear_index) {
  if constexpr (kIsComplex<T>) {
    // arange is real (as numpy.arange with real start and step); uniform draws both parts
    // independently, the real part from stream 2i and the imaginary part from 2i + 1.
    using R = typename T::Real;
    if (g.kind == Generator::Kind::kArange) return T(GeneratedValue<R>(g, linear_index));
    return T(GeneratedValue<R>(g, 2 * linear_index), GeneratedValue<R>(g, 2 * linear_index + 1));
  }
  if (g.kind == Generator::Kind::kArange) {
    return static_cast<T>(g.start + g.step * static_cast<double>(linear_index));
  }
  const uint64_t bits = SplitMix64(g.seed ^ SplitMix64(static_cast<uint64_t>(linear_index)));
  const double u = static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
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
