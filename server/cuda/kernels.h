// Launchers for the CUDA kernels. Plain C++ (no Abseil) so the .cu file stays simple for nvcc;
// the backend turns the returned cudaError_t into an absl::Status. Every launcher is
// asynchronous on `stream`.
#ifndef DISTARRAY_SERVER_CUDA_KERNELS_H_
#define DISTARRAY_SERVER_CUDA_KERNELS_H_

#include <cuda_runtime_api.h>

#include "common/dtype.h"
#include "common/scalar.h"
#include "common/strided_box.h"
#include "server/kernels/ops.h"

namespace distarray::cuda {

cudaError_t LaunchFillBox(DType dtype, void* dst, const StridedBox& box, const Scalar& value,
                          cudaStream_t stream);
// dst's element i (dense) gets the generated value of global linear index BoxOffset(global, i).
cudaError_t LaunchFillGenerated(DType dtype, void* dst, const StridedBox& global,
                                const Generator& generator, cudaStream_t stream);
cudaError_t LaunchCopyBox(DType dtype, const void* src, const StridedBox& src_box, void* dst,
                          const StridedBox& dst_box, Combine combine, cudaStream_t stream);
}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_KERNELS_H_
