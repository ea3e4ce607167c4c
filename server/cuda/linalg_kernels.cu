#include "server/cuda/linalg_kernels.h"

#include <math.h>

#include "common/complex.h"

namespace distarray::cuda {
namespace {

constexpr int kThreads = 256;

template <typename T>
struct Parts {
  using Real = T;
  static __device__ Real Abs(T x) { return fabs(x); }
};
template <typename R>
struct Parts<Complex<R>> {
  using Real = R;
  static __device__ Real Abs(Complex<R> x) { return hypot(x.re, x.im); }
};

template <typename T>
__device__ T Scale(T x, typename Parts<T>::Real s) {
  if constexpr (std::is_floating_point_v<T>) {
    return x * s;
  } else {
    return T(x.re * s, x.im * s);
  }
}

template <typename T>
__device__ T Times(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return a * b;
  } else {
    return T(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
  }
}

template <typename T>
__device__ T Conj(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return x;
  } else {
    return T(x.re, -x.im);
  }
}

// One thread per matrix: the same product of unit factors and sum of logarithms the host
// backend computes.
template <typename T>
__global__ void SlogdetKernel(const T* lu, const int* pivots, int64_t batch, int64_t n, bool det,
                              T* out0, typename Parts<T>::Real* out1) {
  using R = typename Parts<T>::Real;
  const int64_t b = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (b >= batch) return;
  const T* m = lu + b * n * n;
  const int* p = pivots + b * n;
  bool odd = false;
  T sign = T(1);
  R log_sum = 0;
  bool singular = false;
  for (int64_t i = 0; i < n; ++i) {
    odd ^= p[i] != i + 1;
    const T d = m[i + i * n];
    const R magnitude = Parts<T>::Abs(d);
    if (magnitude == 0) singular = true;
    if (!singular) {
      sign = Times(sign, Scale(d, R(1) / magnitude));
      log_sum += log(magnitude);
    }
  }
  if (singular) {
    sign = T(0);
    log_sum = -INFINITY;
  } else if (odd) {
    sign = Scale(sign, R(-1));
  }
  if (det) {
    out0[b] = Scale(sign, exp(log_sum));
  } else {
    out0[b] = sign;
    out1[b] = log_sum;
  }
}

template <typename T>
__global__ void ConjugateTransposeKernel(const T* src, int64_t rows, int64_t cols, T* dst) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= rows * cols) return;
  const int64_t r = i % rows, c = i / rows;  // src(r, c) at r + c * rows
  dst[c + r * cols] = Conj(src[i]);
}

int Blocks(int64_t n) { return static_cast<int>((n + kThreads - 1) / kThreads); }

template <typename Fn>
cudaError_t Dispatch(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32:
      return fn(float{});
    case DType::kFloat64:
      return fn(double{});
    case DType::kComplex64:
      return fn(Complex64{});
    case DType::kComplex128:
      return fn(Complex128{});
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t LaunchSlogdetFromLu(DType dtype, const void* lu, const int* pivots, int64_t batch,
                                int64_t n, bool det, void* out0, void* out1, cudaStream_t stream) {
  if (batch == 0) return cudaSuccess;
  return Dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    using R = typename Parts<T>::Real;
    SlogdetKernel<T><<<Blocks(batch), kThreads, 0, stream>>>(static_cast<const T*>(lu), pivots,
                                                             batch, n, det, static_cast<T*>(out0),
                                                             static_cast<R*>(out1));
    return cudaGetLastError();
  });
}

cudaError_t LaunchConjugateTranspose(DType dtype, const void* src, int64_t rows, int64_t cols,
                                     void* dst, cudaStream_t stream) {
  if (rows * cols == 0) return cudaSuccess;
  return Dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    ConjugateTransposeKernel<T><<<Blocks(rows * cols), kThreads, 0, stream>>>(
        static_cast<const T*>(src), rows, cols, static_cast<T*>(dst));
    return cudaGetLastError();
  });
}

}  // namespace distarray::cuda
