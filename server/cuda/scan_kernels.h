// Launchers of the scan kernels (scan.cu). Plain C++ for nvcc, as kernels.h; asynchronous on
// `stream`.
#ifndef DISTARRAY_SERVER_CUDA_SCAN_KERNELS_H_
#define DISTARRAY_SERVER_CUDA_SCAN_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "common/dtype.h"

namespace distarray::cuda {

// What DeviceOps::Scan's ScanLines says, as raw pointers (carry and scratch may be null).
struct ScanLaunch {
  const void* in = nullptr;
  void* out = nullptr;
  const void* carry = nullptr;
  void* scratch = nullptr;
  int64_t scratch_bytes = 0;
  int64_t outer = 1, length = 0, inner = 1;
  bool product = false;
};

// Bytes of scratch a launch needs (-1: CUB could not size it).
int64_t ScanScratchBytes(DType dtype, int64_t outer, int64_t length, int64_t inner);
cudaError_t LaunchScan(DType dtype, const ScanLaunch& scan, cudaStream_t stream);

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_SCAN_KERNELS_H_
