// Ternary elementwise ops, astype, and the dispatch to each group's launcher.
#include "server/cuda/elementwise_kernels.cuh"

namespace distarray::cuda {
namespace {

template <typename From, typename To>
__global__ void CastKernel(const From* src, To* dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    dst[i] = CastElement<To>(src[i]);
  }
}

}  // namespace

cudaError_t LaunchTernary(ElementwiseOpId op, DType compute, DType storage, void* out, int64_t n,
                          const DeviceArg* args, int sm_count, cudaStream_t stream) {
  return LaunchGroup<3, 0, 1>(op, compute, storage, out, n, args, sm_count, stream);
}

cudaError_t LaunchElementwise(ElementwiseOpId op, DType compute, DType storage, void* out,
                              int64_t n, const DeviceArg* args, int arg_count, int sm_count,
                              cudaStream_t stream) {
  if (arg_count != ArityOf(op)) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  switch (ArityOf(op)) {
    case 1:
      return LaunchUnary(op, compute, storage, out, n, args, sm_count, stream);
    case 2:
      return static_cast<int>(op) % 2 == 0
                 ? LaunchBinary0(op, compute, storage, out, n, args, sm_count, stream)
                 : LaunchBinary1(op, compute, storage, out, n, args, sm_count, stream);
    case 3:
      return LaunchTernary(op, compute, storage, out, n, args, sm_count, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

cudaError_t LaunchCast(DType from, DType to, const void* src, void* dst, int64_t n, int sm_count,
                       cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  if (!IsImplemented(from) || !IsImplemented(to)) return cudaErrorInvalidValue;
  DispatchCast(from, to, [&](auto from_tag, auto to_tag) {
    using From = decltype(from_tag);
    using To = decltype(to_tag);
    CastKernel<From, To><<<ElementwiseBlocks(n, sm_count), kElementwiseThreads, 0, stream>>>(
        static_cast<const From*>(src), static_cast<To*>(dst), n);
  });
  return cudaGetLastError();
}

}  // namespace distarray::cuda
