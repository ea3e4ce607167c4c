// Binary elementwise ops with an odd id (see elementwise_kernels.cuh).
#include "server/cuda/elementwise_kernels.cuh"

namespace distarray::cuda {

cudaError_t LaunchBinary1(ElementwiseOpId op, DType compute, DType storage, void* out, int64_t n,
                          const DeviceArg* args, int sm_count, cudaStream_t stream) {
  return LaunchGroup<2, 1, 2>(op, compute, storage, out, n, args, sm_count, stream);
}

}  // namespace distarray::cuda
