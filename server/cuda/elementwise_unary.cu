// Unary elementwise ops (see elementwise_kernels.cuh).
#include "server/cuda/elementwise_kernels.cuh"

namespace distarray::cuda {

cudaError_t LaunchUnary(ElementwiseOpId op, DType compute, DType storage, void* out, int64_t n,
                        const DeviceArg* args, int sm_count, cudaStream_t stream) {
  return LaunchGroup<1, 0, 1>(op, compute, storage, out, n, args, sm_count, stream);
}

}  // namespace distarray::cuda
