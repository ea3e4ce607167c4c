// Launch shapes from the occupancy calculator: the grid-stride kernels launch one wave of
// resident blocks (this many per SM times the device's SMs, which the backend knows), which covers
// every element with no tail wave and no idle SMs.
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

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_OCCUPANCY_CUH_
