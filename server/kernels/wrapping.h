// NumPy's wrapping integer arithmetic, and the host/device function marker every element-level
// header uses. Depends on nothing but <type_traits>, so the runtime compiler (NVRTC), which fuses
// loop bodies from the ufunc functors, can compile it too (server/cuda/fusion/).
#ifndef DISTARRAY_SERVER_KERNELS_WRAPPING_H_
#define DISTARRAY_SERVER_KERNELS_WRAPPING_H_

#include <type_traits>

#ifdef __CUDACC__
#define DA_HD __host__ __device__ __forceinline__
#else
#define DA_HD inline
#endif

namespace distarray {

// Integer arithmetic wraps modulo 2^bits, as NumPy's does, instead of overflowing (undefined
// behaviour for signed types, and for small unsigned types promoted to int): compute in an
// unsigned type at least as wide as unsigned int, then convert back (modular since C++20).
template <typename T>
using WrapType =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

template <typename T>
DA_HD T WrappingAdd(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
  } else {
    return static_cast<T>(a + b);
  }
}
template <typename T>
DA_HD T WrappingSubtract(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return static_cast<T>(static_cast<WrapType<T>>(a) - static_cast<WrapType<T>>(b));
  } else {
    return static_cast<T>(a - b);
  }
}
template <typename T>
DA_HD T WrappingMultiply(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
  } else {
    return static_cast<T>(a * b);
  }
}

}  // namespace distarray

#endif  // DISTARRAY_SERVER_KERNELS_WRAPPING_H_
