// CUDA and NCCL results as absl::Status: out of memory is RESOURCE_EXHAUSTED, a sticky device
// error is UNAVAILABLE, anything else INTERNAL; messages carry the CUDA/NCCL error name.
#ifndef DISTARRAY_SERVER_CUDA_CUDA_STATUS_H_
#define DISTARRAY_SERVER_CUDA_CUDA_STATUS_H_

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"

namespace distarray::cuda {

absl::Status CudaStatus(cudaError_t error, absl::string_view what);
absl::Status NcclStatus(ncclResult_t result, absl::string_view what);

}  // namespace distarray::cuda

#define CUDA_RETURN_IF_ERROR(expr) RETURN_IF_ERROR(::distarray::cuda::CudaStatus((expr), #expr))
#define NCCL_RETURN_IF_ERROR(expr) RETURN_IF_ERROR(::distarray::cuda::NcclStatus((expr), #expr))

#endif  // DISTARRAY_SERVER_CUDA_CUDA_STATUS_H_
