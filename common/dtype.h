// Element types. The numeric values equal distarray.v1.DType so conversion is a cast.
// This header is included by CUDA sources, so it stays free of protobuf and Abseil.
#ifndef DISTARRAY_COMMON_DTYPE_H_
#define DISTARRAY_COMMON_DTYPE_H_

#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>

#include "common/complex.h"
#include "common/half.h"

namespace distarray {

enum class DType : int {
  kUnspecified = 0,
  kBool = 1,
  kInt8 = 2,
  kInt16 = 3,
  kInt32 = 4,
  kInt64 = 5,
  kUInt8 = 6,
  kUInt16 = 7,
  kUInt32 = 8,
  kUInt64 = 9,
  kFloat16 = 10,
  kBFloat16 = 11,
  kFloat32 = 12,
  kFloat64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
};
constexpr int kMaxDType = 15;

// Size in bytes of one element; 0 for kUnspecified or an unknown value.
int64_t DTypeSize(DType dtype);
const char* DTypeName(DType dtype);
// Whether arrays of this dtype can be created, moved and computed with: every declared dtype.
bool IsImplemented(DType dtype);
// Whether real-valued kernels (reductions, fills from generators, fused loops) are instantiated
// for this dtype (DispatchDType). float16 and bfloat16 are storage only: kernels compute them in
// float32 (KernelDType), converting on load and store. Complex dtypes have elementwise kernels
// only (DispatchComputeDType).
bool HasKernels(DType dtype);
// The dtype kernels compute an implemented dtype in: float32 for the 16-bit floats, else itself.
DType KernelDType(DType dtype);
bool IsHalf(DType dtype);
bool IsComplex(DType dtype);
// The real part's dtype of a complex dtype (float32, float64); other dtypes are their own.
DType RealPartDType(DType dtype);
bool IsFloating(DType dtype);
bool IsSignedInteger(DType dtype);
bool IsUnsignedInteger(DType dtype);

// Logs the dtype and aborts: DispatchDType met a dtype it was not built for.
[[noreturn]] void DispatchDTypeFailed(DType dtype);

// Calls `fn` with a value-initialized element of the C++ type of `dtype`. Only dtypes with
// kernels are dispatched: callers validate first (HasKernels), and any other dtype is a bug that
// aborts the process rather than compute with the wrong element size. Usage:
//   DispatchDType(dtype, [&](auto tag) { using T = decltype(tag); ... });
template <typename Fn>
decltype(auto) DispatchDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kBool:
      return fn(bool{});
    case DType::kInt8:
      return fn(int8_t{});
    case DType::kInt16:
      return fn(int16_t{});
    case DType::kInt32:
      return fn(int32_t{});
    case DType::kInt64:
      return fn(int64_t{});
    case DType::kUInt8:
      return fn(uint8_t{});
    case DType::kUInt16:
      return fn(uint16_t{});
    case DType::kUInt32:
      return fn(uint32_t{});
    case DType::kUInt64:
      return fn(uint64_t{});
    case DType::kFloat32:
      return fn(float{});
    case DType::kFloat64:
      return fn(double{});
    default:
      DispatchDTypeFailed(dtype);
  }
}

// DispatchDType plus complex64 and complex128: the compute types of elementwise kernels.
template <typename Fn>
decltype(auto) DispatchComputeDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kComplex64:
      return fn(Complex64{});
    case DType::kComplex128:
      return fn(Complex128{});
    default:
      return DispatchDType(dtype, std::forward<Fn>(fn));
  }
}

// Every implemented dtype: DispatchComputeDType plus the storage-only 16-bit floats (Float16,
// BFloat16). For what moves, fills, casts and combines elements, never for arithmetic kernels.
template <typename Fn>
decltype(auto) DispatchStorageDType(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat16:
      return fn(Float16{});
    case DType::kBFloat16:
      return fn(BFloat16{});
    default:
      return DispatchComputeDType(dtype, std::forward<Fn>(fn));
  }
}

// The dtype of a C++ element type (the implemented dtypes' types).
template <typename T>
constexpr DType DTypeFor() {
  if constexpr (std::is_same_v<T, bool>)
    return DType::kBool;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DType::kInt8;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DType::kInt16;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::kInt32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::kInt64;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DType::kUInt8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return DType::kUInt16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return DType::kUInt32;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return DType::kUInt64;
  else if constexpr (std::is_same_v<T, float>)
    return DType::kFloat32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::kFloat64;
  else if constexpr (std::is_same_v<T, Float16>)
    return DType::kFloat16;
  else if constexpr (std::is_same_v<T, BFloat16>)
    return DType::kBFloat16;
  else if constexpr (std::is_same_v<T, Complex64>)
    return DType::kComplex64;
  else if constexpr (std::is_same_v<T, Complex128>)
    return DType::kComplex128;
  else
    return DType::kUnspecified;
}

}  // namespace distarray

#endif  // DISTARRAY_COMMON_DTYPE_H_
