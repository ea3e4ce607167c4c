// Integer and bool matrix products on the GPU (cuBLAS has no integer GEMM but int8 into int32,
// which is not NumPy's wrapping arithmetic). Plain C++ for nvcc, as kernels.h; asynchronous on
// `stream`.
#ifndef DISTARRAY_SERVER_CUDA_INTEGER_GEMM_H_
#define DISTARRAY_SERVER_CUDA_INTEGER_GEMM_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/dtype.h"

namespace distarray::cuda {

// c[i] = a[i] @ b[i] for i < batch over dense row-major matrices (as DeviceOps::Gemm: a[i] m x k
// at i * stride_a, b[i] k x n at i * stride_b, c[i] m x n at i * stride_c; a stride of 0 reuses
// one matrix), of a signed or unsigned integer dtype or bool, with NumPy's results
// (server/kernels/integer_gemm.h). cudaErrorInvalidValue for any other dtype.
cudaError_t LaunchIntegerGemm(DType dtype, const void* a, const void* b, void* c, int64_t m,
                              int64_t n, int64_t k, int64_t batch, int64_t stride_a,
                              int64_t stride_b, int64_t stride_c, cudaStream_t stream);

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_INTEGER_GEMM_H_
