#include "server/cuda/integer_gemm.h"

#include <algorithm>

#include "server/kernels/integer_gemm.h"

namespace distarray::cuda {
namespace {

// A 16 x 16 tile of c per block, k walked in steps of 16 through shared memory: each element of
// a and b is read from global memory once per tile rather than once per product. Integer
// products are rare next to float ones; this is the textbook tiling, not a tuned GEMM.
constexpr int kTile = 16;
constexpr int64_t kMaxGridY = 65535, kMaxGridZ = 65535;

template <typename T>
__global__ void IntegerGemmKernel(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k,
                                  int64_t batch, int64_t stride_a, int64_t stride_b,
                                  int64_t stride_c) {
  __shared__ uint64_t a_tile[kTile][kTile];
  __shared__ uint64_t b_tile[kTile][kTile];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int64_t col = blockIdx.x * static_cast<int64_t>(kTile) + tx;
  // Grid y and z are capped (65,535): blocks stride over row tiles and batch entries.
  for (int64_t entry = blockIdx.z; entry < batch; entry += gridDim.z) {
    const T* a_i = a + entry * stride_a;
    const T* b_i = b + entry * stride_b;
    T* c_i = c + entry * stride_c;
    for (int64_t row_tile = blockIdx.y; row_tile * kTile < m; row_tile += gridDim.y) {
      const int64_t row = row_tile * kTile + ty;
      uint64_t acc = 0;
      for (int64_t p0 = 0; p0 < k; p0 += kTile) {
        a_tile[ty][tx] = row < m && p0 + tx < k ? WidenForGemm(a_i[row * k + p0 + tx]) : 0;
        b_tile[ty][tx] = p0 + ty < k && col < n ? WidenForGemm(b_i[(p0 + ty) * n + col]) : 0;
        __syncthreads();
#pragma unroll
        for (int q = 0; q < kTile; ++q) acc = GemmMultiplyAdd(acc, a_tile[ty][q], b_tile[q][tx]);
        __syncthreads();
      }
      if (row < m && col < n) c_i[row * n + col] = NarrowFromGemm<T>(acc);
    }
  }
}

}  // namespace

cudaError_t LaunchIntegerGemm(DType dtype, const void* a, const void* b, void* c, int64_t m,
                              int64_t n, int64_t k, int64_t batch, int64_t stride_a,
                              int64_t stride_b, int64_t stride_c, cudaStream_t stream) {
  if (!IsImplemented(dtype) || IsFloating(dtype) || IsComplex(dtype)) return cudaErrorInvalidValue;
  return DispatchDType(dtype, [&](auto tag) -> cudaError_t {
    using T = decltype(tag);
    if constexpr (!kHasIntegerGemm<T>) {
      return cudaErrorInvalidValue;  // float32/float64: DispatchDType's other types
    } else {
      if (m == 0 || n == 0 || batch == 0) return cudaSuccess;
      const int64_t col_tiles = (n + kTile - 1) / kTile, row_tiles = (m + kTile - 1) / kTile;
      // Grid x (2^31 - 1) holds the column tiles of any n a buffer can hold.
      const dim3 grid(static_cast<unsigned>(col_tiles),
                      static_cast<unsigned>(std::min(row_tiles, kMaxGridY)),
                      static_cast<unsigned>(std::min(batch, kMaxGridZ)));
      IntegerGemmKernel<T><<<grid, dim3(kTile, kTile), 0, stream>>>(
          static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c), m, n, k, batch,
          stride_a, stride_b, stride_c);
      return cudaGetLastError();
    }
  });
}

}  // namespace distarray::cuda
