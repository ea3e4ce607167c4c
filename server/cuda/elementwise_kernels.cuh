// The elementwise kernel template, included by the files that instantiate one group of ops each
// (elementwise_*.cu), so the ~600 instantiations compile in parallel.
#ifndef DISTARRAY_SERVER_CUDA_ELEMENTWISE_KERNELS_CUH_
#define DISTARRAY_SERVER_CUDA_ELEMENTWISE_KERNELS_CUH_

#include <algorithm>

#include "server/cuda/compute_kernels.h"
#include "server/kernels/elementwise_loop.h"

namespace distarray::cuda {

constexpr int kElementwiseThreads = 256;

inline unsigned ElementwiseBlocks(int64_t n) {
  return static_cast<unsigned>(
      std::clamp<int64_t>((n + kElementwiseThreads - 1) / kElementwiseThreads, 1, 132 * 32));
}

template <typename Op, typename T, int kArity>
__global__ void ElementwiseKernel(ElementwiseOut<Op, T, kArity>* out, int64_t n,
                                  KernelArg<FirstArgType<Op, T>> a, KernelArg<T> b,
                                  KernelArg<T> c) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = ElementwiseAt<Op, T, kArity>(a, b, c, i);
  }
}

template <typename T>
KernelArg<T> ToKernelArg(const DeviceArg& arg) {
  KernelArg<T> k;
  if (arg.data != nullptr) {
    k.data = static_cast<const T*>(arg.data);
    k.view = arg.view;
    k.contiguous = arg.contiguous;
  } else {
    k.scalar = arg.scalar.As<T>();
  }
  return k;
}

// Launches op `op` in `compute` if it belongs to group (kArity, kGroup of kGroups).
template <int kArity, int kGroup, int kGroups>
cudaError_t LaunchGroup(ElementwiseOpId op, DType compute, void* out, int64_t n,
                        const DeviceArg* args, cudaStream_t stream) {
  const bool launched =
      DispatchElementwise<kArity, kGroup, kGroups>(op, compute, [&](auto functor, auto tag, auto) {
        using Op = decltype(functor);
        using T = decltype(tag);
        using Out = ElementwiseOut<Op, T, kArity>;
        const DeviceArg none;
        ElementwiseKernel<Op, T, kArity><<<ElementwiseBlocks(n), kElementwiseThreads, 0, stream>>>(
            static_cast<Out*>(out), n, ToKernelArg<FirstArgType<Op, T>>(args[0]),
            ToKernelArg<T>(kArity > 1 ? args[1] : none),
            ToKernelArg<T>(kArity > 2 ? args[2] : none));
      });
  return launched ? cudaGetLastError() : cudaErrorInvalidValue;
}

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_ELEMENTWISE_KERNELS_CUH_
