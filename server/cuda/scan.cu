// Inclusive scans of a chunk's lines. Contiguous lines (the scanned axis last): one line is a
// plain CUB scan; several are one CUB scan-by-key over the whole chunk, keyed by line. Either way
// a line's carry is folded into its first element as it is read (the scan is inclusive and its
// operation associative), so a carry costs no extra pass. Strided lines (axes after the scanned
// one) are cut into segments, enough of them to fill the GPU: the segments' totals, a scan of
// those per line (from the carry), then each segment's scan from its prefix. Neighbouring threads
// take neighbouring lines, so every step of a walk along a segment is one coalesced row.
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

// Strided lines in segments (SegmentsFor): thread (segment, line), lines fastest, each walking its
// segment from `start[t]` (null: the identity). Without `out` it writes the segment's total to
// `totals[t]`; with `out`, the running values. One segment per line is the whole scan.
template <typename T>
__global__ void WalkSegmentsKernel(const T* in, T* out, const T* start, T* totals, int64_t outer,
                                   int64_t length, int64_t inner, int64_t segment, int64_t segments,
                                   bool product) {
  const ScanOp<T> op{product};
  const int64_t lines = outer * inner;
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < lines * segments;
       t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t line = t % lines, s = t / lines;
    const int64_t base = (line / inner) * length * inner + line % inner;
    const int64_t end = (s + 1) * segment < length ? (s + 1) * segment : length;
    T acc = start ? start[t] : T(product ? 1 : 0);
    for (int64_t i = s * segment; i < end; ++i) {
      acc = op(acc, in[base + i * inner]);
      if (out) out[base + i * inner] = acc;
    }
    if (!out) totals[t] = acc;
  }
}

// Each line's segment totals replaced by the prefix its segment starts from.
template <typename T>
__global__ void SegmentPrefixesKernel(T* totals, const T* carry, int64_t lines, int64_t segments,
                                      bool product) {
  const ScanOp<T> op{product};
  for (int64_t line = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; line < lines;
       line += int64_t{gridDim.x} * blockDim.x) {
    T running = carry ? carry[line] : T(product ? 1 : 0);
    for (int64_t s = 0; s < segments; ++s) {
      const T total = totals[s * lines + line];
      totals[s * lines + line] = running;
      running = op(running, total);
    }
  }
}

// How strided lines are cut: `segments` segments of `segment` elements per line, so that about
// kTargetThreads threads walk them (one segment per line where the lines alone fill the GPU).
struct Segments {
  int64_t segment = 0, segments = 1;
};
constexpr int64_t kTargetThreads = int64_t{132} * 2048;  // every thread slot of an H100/H200
constexpr int64_t kMinSegment = 16;
Segments SegmentsFor(int64_t outer, int64_t length, int64_t inner) {
  const int64_t lines = std::max<int64_t>(1, outer * inner);
  int64_t segments =
      std::clamp<int64_t>(kTargetThreads / lines, 1, std::max<int64_t>(1, length / kMinSegment));
  const int64_t segment = std::max<int64_t>(1, (length + segments - 1) / segments);
  segments = std::max<int64_t>(1, (length + segment - 1) / segment);
  return Segments{segment, segments};
}

// Element i of a chunk's contiguous lines as the scan reads it: the line's carry folded into its
// first element.
template <typename T>
struct WithCarry {
  const T* in;
  const T* carry;
  int64_t length;
  bool product;
  __host__ __device__ T operator()(int64_t i) const {
    if (carry == nullptr || i % length != 0) return in[i];
    return ScanOp<T>{product}(carry[i / length], in[i]);
  }
};

template <typename T>
cudaError_t ScanContiguous(void* temp, size_t& temp_bytes, const T* in, T* out, const T* carry,
                           int64_t outer, int64_t length, bool product, cudaStream_t stream) {
  const int64_t n = outer * length;
  auto values = thrust::make_transform_iterator(thrust::make_counting_iterator<int64_t>(0),
                                                WithCarry<T>{in, carry, length, product});
  if (outer == 1) {
    return cub::DeviceScan::InclusiveScan(temp, temp_bytes, values, out, ScanOp<T>{product}, n,
                                          stream);
  }
  auto keys =
      thrust::make_transform_iterator(thrust::make_counting_iterator<int64_t>(0), LineOf{length});
  return cub::DeviceScan::InclusiveScanByKey(temp, temp_bytes, keys, values, out,
                                             ScanOp<T>{product}, n, ::cuda::std::equal_to<>(),
                                             stream);
}

int64_t AlignUp(int64_t bytes) { return (bytes + 255) / 256 * 256; }

// Every dtype a scan result can have: DispatchStorageDType's but bool (ScanResultDType widens
// it). cudaErrorInvalidValue for any other.
template <typename Fn>
cudaError_t DispatchScanDType(DType dtype, Fn&& fn) {
  if (!IsImplemented(dtype) || dtype == DType::kBool) return cudaErrorInvalidValue;
  return DispatchStorageDType(dtype, [&](auto tag) -> cudaError_t {
    if constexpr (std::is_same_v<decltype(tag), bool>) {
      return cudaErrorInvalidValue;
    } else {
      return fn(tag);
    }
  });
}

}  // namespace

int64_t ScanScratchBytes(DType dtype, int64_t outer, int64_t length, int64_t inner) {
  if (outer * length * inner == 0) return 0;
  int64_t bytes = 0;
  const cudaError_t e = DispatchScanDType(dtype, [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    if (inner != 1) {
      const Segments cut = SegmentsFor(outer, length, inner);
      bytes = cut.segments == 1
                  ? 0
                  : AlignUp(outer * inner * cut.segments * static_cast<int64_t>(sizeof(T)));
      return cudaSuccess;
    }
    size_t temp = 0;
    const cudaError_t query =
        ScanContiguous<T>(nullptr, temp, nullptr, nullptr, nullptr, outer, length, false, nullptr);
    bytes = static_cast<int64_t>(temp);
    return query;
  });
  if (e != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return bytes;
}

cudaError_t LaunchScan(DType dtype, const ScanLaunch& scan, cudaStream_t stream) {
  const int64_t n = scan.outer * scan.length * scan.inner;
  return DispatchScanDType(dtype, [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    if (n == 0) return cudaSuccess;
    const T* in = static_cast<const T*>(scan.in);
    T* out = static_cast<T*>(scan.out);
    const T* carry = static_cast<const T*>(scan.carry);
    if (scan.inner == 1) {
      size_t bytes = static_cast<size_t>(scan.scratch_bytes);
      return ScanContiguous<T>(scan.scratch, bytes, in, out, carry, scan.outer, scan.length,
                               scan.product, stream);
    }
    const int64_t lines = scan.outer * scan.inner;
    const Segments cut = SegmentsFor(scan.outer, scan.length, scan.inner);
    const int64_t threads = lines * cut.segments;
    auto walk = [&](T* to, const T* from, T* totals) {
      WalkSegmentsKernel<T><<<Blocks(threads), kThreads, 0, stream>>>(
          in, to, from, totals, scan.outer, scan.length, scan.inner, cut.segment, cut.segments,
          scan.product);
    };
    if (cut.segments == 1) {
      walk(out, carry, nullptr);  // each line whole, from its carry
      return cudaGetLastError();
    }
    T* prefixes = static_cast<T*>(scan.scratch);
    walk(nullptr, nullptr, prefixes);
    SegmentPrefixesKernel<T><<<Blocks(lines), kThreads, 0, stream>>>(prefixes, carry, lines,
                                                                     cut.segments, scan.product);
    walk(out, prefixes, nullptr);
    return cudaGetLastError();
  });
}

}  // namespace distarray::cuda
