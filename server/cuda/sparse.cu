// CSR block kernels (sparse_kernels.h). The product of a block with a vector is the classic
// "CSR vector" kernel: a group of lanes (1 to 32, by the mean entries per row) walks one row's
// entries with coalesced reads, several entries per lane per trip, and sums them with warp
// shuffles. A product with several columns (SpMM) and the densification take a thread per output
// element and per row.
#include <algorithm>

#include "server/cuda/sparse_kernels.h"
#include "server/kernels/csr.h"

namespace distarray::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

int64_t Blocks(int64_t threads) {
  return std::max<int64_t>(1, std::min<int64_t>((threads + kThreads - 1) / kThreads, kMaxBlocks));
}

template <typename T>
__device__ __forceinline__ T ShuffleDown(T value, int offset, int width) {
  return __shfl_down_sync(0xffffffffu, value, offset, width);
}
template <typename R>
__device__ __forceinline__ Complex<R> ShuffleDown(Complex<R> value, int offset, int width) {
  return Complex<R>(__shfl_down_sync(0xffffffffu, value.re, offset, width),
                    __shfl_down_sync(0xffffffffu, value.im, offset, width));
}

// y[row] = sum over the row's entries of data * x[column], kLanes lanes per row, each lane taking
// kCsrEntriesPerLane entries per trip: their columns and values are loaded before any x is, so a
// lane has that many independent loads in flight (one per trip held a 5 * 10^7-entry product at
// about half of HBM's rate: latency, not bandwidth). Every thread of a block runs the same number
// of outer loop trips (the loop bound is per block), so the full-warp shuffles find every lane.
template <typename T, typename I, int kLanes>
__global__ void CsrVectorKernel(const int64_t* indptr, const I* indices, const T* data,
                                int64_t capacity, int64_t rows, int64_t cols, const T* x, T* y) {
  constexpr int kRowsPerBlock = kThreads / kLanes;
  constexpr int kUnroll = kCsrEntriesPerLane;
  const int lane = threadIdx.x % kLanes;
  for (int64_t first = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock; first < rows;
       first += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
    const int64_t row = first + threadIdx.x / kLanes;
    T sum = T(0);
    if (row < rows) {
      int64_t begin, end;
      csr::RowRange(indptr, row, capacity, &begin, &end);
      for (int64_t e = begin + lane; e < end; e += kLanes * kUnroll) {
        I stored[kUnroll];
        T value[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int64_t at = e + u * kLanes;
          if (at < end) {
            stored[u] = indices[at];
            value[u] = data[at];
          }
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          if (e + u * kLanes < end) {
            const int64_t column = csr::Column(stored[u], cols);
            if (column >= 0) sum = sum + value[u] * x[column];
          }
        }
      }
    }
    for (int offset = kLanes / 2; offset > 0; offset /= 2) {
      sum = sum + ShuffleDown(sum, offset, kLanes);
    }
    if (row < rows && lane == 0) y[row] = sum;
  }
}

// y[row, j] for every j < k: a thread per output element, consecutive threads on consecutive j
// (coalesced reads of x's rows and writes of y's).
template <typename T, typename I>
__global__ void CsrDenseBlockKernel(const int64_t* indptr, const I* indices, const T* data,
                                    int64_t capacity, int64_t rows, int64_t cols, int64_t k,
                                    const T* x, T* y) {
  const int64_t total = rows * k;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = i / k, j = i % k;
    int64_t begin, end;
    csr::RowRange(indptr, row, capacity, &begin, &end);
    T sum = T(0);
    for (int64_t e = begin; e < end; ++e) {
      const int64_t column = csr::Column(indices[e], cols);
      if (column >= 0) sum = sum + data[e] * x[column * k + j];
    }
    y[i] = sum;
  }
}

// A thread per row adds the row's entries into the zeroed y, in entry order (no two threads
// write one element).
template <typename T, typename I>
__global__ void CsrToDenseKernel(const int64_t* indptr, const I* indices, const T* data,
                                 int64_t capacity, int64_t rows, int64_t cols, T* y) {
  for (int64_t row = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; row < rows;
       row += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t begin, end;
    csr::RowRange(indptr, row, capacity, &begin, &end);
    for (int64_t e = begin; e < end; ++e) {
      const int64_t column = csr::Column(indices[e], cols);
      if (column >= 0) y[row * cols + column] = y[row * cols + column] + data[e];
    }
  }
}

template <typename Fn>
cudaError_t DispatchCsr(const CsrLaunch& b, Fn&& fn) {
  auto with_index = [&](auto value) {
    if (b.index_dtype == DType::kInt32) return fn(value, int32_t{});
    return fn(value, int64_t{});
  };
  switch (b.dtype) {
    case DType::kFloat32:
      return with_index(float{});
    case DType::kFloat64:
      return with_index(double{});
    case DType::kComplex64:
      return with_index(Complex64{});
    case DType::kComplex128:
      return with_index(Complex128{});
    default:
      return cudaErrorInvalidValue;
  }
}

template <typename T, typename I, int kLanes>
cudaError_t LaunchVector(const CsrLaunch& b, cudaStream_t stream) {
  const int64_t rows_per_block = kThreads / kLanes;
  const int64_t blocks = std::max<int64_t>(
      1, std::min<int64_t>((b.rows + rows_per_block - 1) / rows_per_block, kMaxBlocks));
  CsrVectorKernel<T, I, kLanes><<<blocks, kThreads, 0, stream>>>(
      b.indptr, static_cast<const I*>(b.indices), static_cast<const T*>(b.data), b.capacity, b.rows,
      b.cols, static_cast<const T*>(b.x), static_cast<T*>(b.y));
  return cudaGetLastError();
}

}  // namespace

int CsrLanesPerRow(int64_t capacity, int64_t rows) {
  const int64_t mean = rows > 0 ? capacity / rows : 0;
  int lanes = 1;
  while (lanes < 32 && lanes * kCsrEntriesPerLane < mean) lanes *= 2;
  return lanes;
}

cudaError_t LaunchCsrMatmul(const CsrLaunch& b, cudaStream_t stream) {
  if (b.rows == 0 || b.k == 0) return cudaSuccess;
  return DispatchCsr(b, [&](auto value, auto index) -> cudaError_t {
    using T = decltype(value);
    using I = decltype(index);
    if (b.k > 1) {
      CsrDenseBlockKernel<T, I><<<Blocks(b.rows * b.k), kThreads, 0, stream>>>(
          b.indptr, static_cast<const I*>(b.indices), static_cast<const T*>(b.data), b.capacity,
          b.rows, b.cols, b.k, static_cast<const T*>(b.x), static_cast<T*>(b.y));
      return cudaGetLastError();
    }
    switch (CsrLanesPerRow(b.capacity, b.rows)) {
      case 1:
        return LaunchVector<T, I, 1>(b, stream);
      case 2:
        return LaunchVector<T, I, 2>(b, stream);
      case 4:
        return LaunchVector<T, I, 4>(b, stream);
      case 8:
        return LaunchVector<T, I, 8>(b, stream);
      case 16:
        return LaunchVector<T, I, 16>(b, stream);
      default:
        return LaunchVector<T, I, 32>(b, stream);
    }
  });
}

cudaError_t LaunchCsrToDense(const CsrLaunch& b, cudaStream_t stream) {
  const int64_t bytes = b.rows * b.cols * DTypeSize(b.dtype);
  if (bytes == 0) return cudaSuccess;
  if (const cudaError_t e = cudaMemsetAsync(b.y, 0, bytes, stream); e != cudaSuccess) return e;
  return DispatchCsr(b, [&](auto value, auto index) -> cudaError_t {
    using T = decltype(value);
    using I = decltype(index);
    CsrToDenseKernel<T, I><<<Blocks(b.rows), kThreads, 0, stream>>>(
        b.indptr, static_cast<const I*>(b.indices), static_cast<const T*>(b.data), b.capacity,
        b.rows, b.cols, static_cast<T*>(b.y));
    return cudaGetLastError();
  });
}

}  // namespace distarray::cuda
