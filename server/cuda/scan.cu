// Inclusive scans of a chunk's lines. Contiguous lines (the scanned axis last) are one CUB
// scan-by-key over the whole chunk, keyed by line, at memory speed however few and long the lines
// are; a carry is then combined into each line by one elementwise pass. Strided lines (axes after
// the scanned one) get one thread each, walking its line: neighbouring threads read neighbouring
// elements, so every step of the walk is one coalesced row.
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cub/device/device_scan.cuh>

#include "server/cuda/scan_kernels.h"
#include "server/kernels/ops.h"

namespace distarray::cuda {
namespace {

constexpr int kThreads = 256;

unsigned Blocks(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 132 * 32));
}

template <typename T>
struct ScanOp {
  bool product;
  __host__ __device__ T operator()(const T& a, const T& b) const {
    return ApplyCombine(product ? Combine::kMultiply : Combine::kAdd, a, b);
  }
};

// The line an element of contiguous lines belongs to: its key for the scan.
struct LineOf {
  int64_t length;
  __host__ __device__ int64_t operator()(int64_t i) const { return i / length; }
};

template <typename T>
__global__ void ScanStridedLinesKernel(const T* in, T* out, const T* carry, int64_t outer,
                                       int64_t length, int64_t inner, bool product) {
  const ScanOp<T> op{product};
  for (int64_t line = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; line < outer * inner;
       line += int64_t{gridDim.x} * blockDim.x) {
    const int64_t o = line / inner, n = line % inner;
    const int64_t base = o * length * inner + n;
    T acc = carry ? carry[line] : T(product ? 1 : 0);
    for (int64_t i = 0; i < length; ++i) {
      acc = op(acc, in[base + i * inner]);
      out[base + i * inner] = acc;
    }
  }
}

template <typename T>
__global__ void CombineCarryKernel(T* out, const T* carry, int64_t n, int64_t length,
                                   bool product) {
  const ScanOp<T> op{product};
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = op(carry[i / length], out[i]);
  }
}

template <typename T>
cudaError_t ScanByLine(void* temp, size_t& temp_bytes, const T* in, T* out, int64_t n,
                       int64_t length, bool product, cudaStream_t stream) {
  auto keys =
      thrust::make_transform_iterator(thrust::make_counting_iterator<int64_t>(0), LineOf{length});
  return cub::DeviceScan::InclusiveScanByKey(temp, temp_bytes, keys, in, out, ScanOp<T>{product}, n,
                                             ::cuda::std::equal_to<>(), stream);
}

template <typename Fn>
cudaError_t DispatchScanDType(DType dtype, Fn&& fn) {
  switch (dtype) {
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
    case DType::kFloat16:
      return fn(Float16{});
    case DType::kBFloat16:
      return fn(BFloat16{});
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

int64_t ScanScratchBytes(DType dtype, int64_t outer, int64_t length, int64_t inner) {
  if (inner != 1 || outer * length == 0) return 0;
  size_t bytes = 0;
  const cudaError_t e = DispatchScanDType(dtype, [&](auto tag) {
    using T = decltype(tag);
    return ScanByLine<T>(nullptr, bytes, nullptr, nullptr, outer * length, length, false, nullptr);
  });
  if (e != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return static_cast<int64_t>(bytes);
}

cudaError_t LaunchScan(DType dtype, const ScanLaunch& scan, cudaStream_t stream) {
  const int64_t n = scan.outer * scan.length * scan.inner;
  return DispatchScanDType(dtype, [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    if (n == 0) return cudaSuccess;
    const T* in = static_cast<const T*>(scan.in);
    T* out = static_cast<T*>(scan.out);
    const T* carry = static_cast<const T*>(scan.carry);
    if (scan.inner != 1) {
      ScanStridedLinesKernel<T><<<Blocks(scan.outer * scan.inner), kThreads, 0, stream>>>(
          in, out, carry, scan.outer, scan.length, scan.inner, scan.product);
      return cudaGetLastError();
    }
    size_t bytes = static_cast<size_t>(scan.scratch_bytes);
    if (cudaError_t e =
            ScanByLine<T>(scan.scratch, bytes, in, out, n, scan.length, scan.product, stream);
        e != cudaSuccess) {
      return e;
    }
    if (carry == nullptr) return cudaSuccess;
    CombineCarryKernel<T>
        <<<Blocks(n), kThreads, 0, stream>>>(out, carry, n, scan.length, scan.product);
    return cudaGetLastError();
  });
}

}  // namespace distarray::cuda
