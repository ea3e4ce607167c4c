#include "server/cuda/kernels.h"

#include <algorithm>
#include <type_traits>

namespace distarray::cuda {
namespace {

constexpr int kThreads = 256;

// Enough blocks to fill the GPU; grid-stride loops cover the rest.
unsigned Blocks(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 132 * 32));
}

template <typename T>
__global__ void FillBoxKernel(T* dst, StridedBox box, T value, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    dst[BoxOffset(box, i)] = value;
  }
}

template <typename T>
__global__ void FillGeneratedKernel(T* dst, StridedBox global, Generator generator, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    dst[i] = GeneratedValue<T>(generator, BoxOffset(global, i));
  }
}

template <typename T>
__global__ void CopyBoxKernel(const T* src, StridedBox src_box, T* dst, StridedBox dst_box,
                              Combine combine, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const T v = src[BoxOffset(src_box, i)];
    T& d = dst[BoxOffset(dst_box, i)];
    d = ApplyCombine(combine, d, v);
  }
}

}  // namespace

cudaError_t LaunchFillBox(DType dtype, void* dst, const StridedBox& box, const Scalar& value,
                          cudaStream_t stream) {
  const int64_t n = box.size();
  DispatchStorageDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    FillBoxKernel<T>
        <<<Blocks(n), kThreads, 0, stream>>>(static_cast<T*>(dst), box, value.As<T>(), n);
  });
  return cudaGetLastError();
}

cudaError_t LaunchFillGenerated(DType dtype, void* dst, const StridedBox& global,
                                const Generator& generator, cudaStream_t stream) {
  const int64_t n = global.size();
  DispatchStorageDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    FillGeneratedKernel<T>
        <<<Blocks(n), kThreads, 0, stream>>>(static_cast<T*>(dst), global, generator, n);
  });
  return cudaGetLastError();
}

cudaError_t LaunchCopyBox(DType dtype, const void* src, const StridedBox& src_box, void* dst,
                          const StridedBox& dst_box, Combine combine, cudaStream_t stream) {
  const int64_t n = src_box.size();
  DispatchStorageDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    CopyBoxKernel<T><<<Blocks(n), kThreads, 0, stream>>>(static_cast<const T*>(src), src_box,
                                                         static_cast<T*>(dst), dst_box, combine, n);
  });
  return cudaGetLastError();
}

}  // namespace distarray::cuda
