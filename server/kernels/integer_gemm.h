// Integer and bool matrix products as NumPy's matmul computes them, shared by the host loop and the
// CUDA kernel so both backends give the same bits. CUDA-safe header.
//
// NumPy's integer matmul wraps modulo 2^bits. Sums and products modulo 2^64 reduce to the same
// residues modulo 2^8, 2^16 and 2^32, so every integer dtype accumulates in uint64 (signed values
// sign-extended first) and is truncated once at the end: the same result as accumulating in the
// dtype itself, with one accumulator type. A bool product is the OR of ANDs: 0/1 multiply as AND,
// and a sum of them is non-zero exactly when one product is true.
#ifndef DISTARRAY_SERVER_KERNELS_INTEGER_GEMM_H_
#define DISTARRAY_SERVER_KERNELS_INTEGER_GEMM_H_

#include <cstdint>
#include <type_traits>

#include "server/kernels/wrapping.h"

namespace distarray {

template <typename T>
inline constexpr bool kHasIntegerGemm = std::is_integral_v<T>;  // bool included

template <typename T>
DA_HD uint64_t WidenForGemm(T value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? 1 : 0;
  } else if constexpr (std::is_signed_v<T>) {
    return static_cast<uint64_t>(static_cast<int64_t>(value));
  } else {
    return static_cast<uint64_t>(value);
  }
}

// One step of the dot product: acc + a * b modulo 2^64. For bool the count of true products can
// not wrap to 0 (at most 2^63 terms fit any buffer).
DA_HD uint64_t GemmMultiplyAdd(uint64_t acc, uint64_t a, uint64_t b) { return acc + a * b; }

template <typename T>
DA_HD T NarrowFromGemm(uint64_t acc) {
  if constexpr (std::is_same_v<T, bool>) {
    return acc != 0;
  } else {
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(acc));  // modular (C++20)
  }
}

}  // namespace distarray

#endif  // DISTARRAY_SERVER_KERNELS_INTEGER_GEMM_H_
