// Launchers for CSR blocks on one GPU (sparse.cu): the product with a dense block and the block
// written out densely. Own kernels rather than cuSPARSE's: cuSPARSE reads a matrix's offsets and
// columns unchecked, and these come from remote clients (server/kernels/csr.h clamps them); the
// kernels also need no opaque buffers, so they capture into graphs like any other launch. Plain
// C++ for nvcc, like kernels.h; asynchronous on `stream`.
#ifndef DISTARRAY_SERVER_CUDA_SPARSE_KERNELS_H_
#define DISTARRAY_SERVER_CUDA_SPARSE_KERNELS_H_

#include <cstdint>

#include <cuda_runtime_api.h>

#include "common/dtype.h"

namespace distarray::cuda {

struct CsrLaunch {
  DType dtype = DType::kFloat64;
  DType index_dtype = DType::kInt64;
  const int64_t* indptr = nullptr;
  const void* indices = nullptr;
  const void* data = nullptr;
  int64_t capacity = 0;
  int64_t rows = 0, cols = 0, k = 1;
  const void* x = nullptr;  // the product's dense block (cols x k); unused by CsrToDense
  void* y = nullptr;        // rows x k (product) or rows x cols (dense)
};

// Entries each lane of the product's vector kernel loads per trip (independent loads in flight).
inline constexpr int kCsrEntriesPerLane = 4;

// Lanes per row for the product's vector kernel from the block's mean entries per row: enough
// that one trip of kCsrEntriesPerLane entries per lane covers a mean row, at most a warp (a
// 5-entry stencil row takes 2 lanes, a 50-entry row 16, longer rows 32).
int CsrLanesPerRow(int64_t capacity, int64_t rows);

cudaError_t LaunchCsrMatmul(const CsrLaunch& block, cudaStream_t stream);
// Zeroes y, then adds each entry in (duplicates summed).
cudaError_t LaunchCsrToDense(const CsrLaunch& block, cudaStream_t stream);

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_SPARSE_KERNELS_H_
