// Launch shapes from the occupancy calculator: the grid-stride kernels launch one wave of
// resident blocks, which covers every element with no tail wave and no idle SMs.
#ifndef DISTARRAY_SERVER_CUDA_OCCUPANCY_CUH_
#define DISTARRAY_SERVER_CUDA_OCCUPANCY_CUH_

#include <cuda_runtime_api.h>

#include <algorithm>

namespace distarray::cuda {

// Blocks of `threads` that `kernel` keeps resident on one SM (the same on every device of one
// architecture, so callers cache it per kernel); 8 if the query fails (a sticky device error
// then surfaces at the launch).
template <typename Kernel>
int BlocksPerSm(Kernel kernel, int threads) {
  int per_sm = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0) != cudaSuccess) {
    cudaGetLastError();  // not the launch's error: a failed query would otherwise read as one
    return 8;
  }
  return std::max(1, per_sm);
}

// SMs of the current device (the one a launch goes to); an H100's 132 if the query fails.
inline int CurrentSmCount() {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    return 132;
  }
  return std::max(1, sms);
}

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_OCCUPANCY_CUH_
