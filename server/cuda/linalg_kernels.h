// Launchers of the small kernels around cuSOLVER's factorizations (cuda_linalg.cc). Plain C++ for
// nvcc, as kernels.h; asynchronous on `stream`.
#ifndef DISTARRAY_SERVER_CUDA_LINALG_KERNELS_H_
#define DISTARRAY_SERVER_CUDA_LINALG_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/dtype.h"

namespace distarray::cuda {

// For each of `batch` LU-factored n x n column-major matrices (getrf's output at b * n * n of
// `lu`, its 1-based pivots at b * n of `pivots`): sign (of `dtype`) to out0[b] and log|det| (the
// real dtype) to out1[b], or with `det` det itself (sign * exp(log|det|), as NumPy) to out0[b].
cudaError_t LaunchSlogdetFromLu(DType dtype, const void* lu, const int* pivots, int64_t batch,
                                int64_t n, bool det, void* out0, void* out1, cudaStream_t stream);

// dst = src^H: src is rows x cols column-major, dst cols x rows column-major (gesvdj's V to
// V^H).
cudaError_t LaunchConjugateTranspose(DType dtype, const void* src, int64_t rows, int64_t cols,
                                     void* dst, cudaStream_t stream);

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_LINALG_KERNELS_H_
