// The elementwise kernel template, included by the files that instantiate one group of ops each
// (elementwise_*.cu), so the ~600 instantiations compile in parallel.
#ifndef DISTARRAY_SERVER_CUDA_ELEMENTWISE_KERNELS_CUH_
#define DISTARRAY_SERVER_CUDA_ELEMENTWISE_KERNELS_CUH_

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "server/cuda/compute_kernels.h"
#include "server/cuda/occupancy.cuh"
#include "server/cuda/transpose_kernels.cuh"
#include "server/kernels/elementwise_loop.h"

namespace distarray::cuda {

constexpr int kElementwiseThreads = 256;

// A block per kElementwiseThreads elements, at most 32 per SM: grid-stride loops cover the rest.
inline unsigned ElementwiseBlocks(int64_t n, int sm_count) {
  return static_cast<unsigned>(std::clamp<int64_t>(
      (n + kElementwiseThreads - 1) / kElementwiseThreads, 1, int64_t{sm_count} * 32));
}

// The general path: any operand may be a strided view (broadcasts, transposes, slices).
// Operands are stored as S (T, or a 16-bit float computed in float32: StoredOut).
template <typename Op, typename T, int kArity, typename S>
__global__ void ElementwiseKernel(StoredOut<Op, T, kArity, S>* out, int64_t n,
                                  KernelArg<StoredFirstArg<Op, T, S>> a, KernelArg<S> b,
                                  KernelArg<S> c) {
  using Out = StoredOut<Op, T, kArity, S>;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = static_cast<Out>(ElementwiseAt<Op, T, kArity>(a, b, c, i));
  }
}

// Consecutive elements moved as one aligned access: 16 bytes of the storage type.
template <typename U, int kCount>
struct alignas(sizeof(U) * kCount) Pack {
  U v[kCount];
};
template <typename T>
constexpr int kPackElements = sizeof(T) >= 16 ? 1 : static_cast<int>(16 / sizeof(T));
// Packs per thread per step. The one-element-per-thread loop above keeps 4 to 12 bytes per thread
// in flight and reached 0.45-0.67x of the device-copy rate for A + B on an H100; streaming at
// HBM's rate needs several independent 16-byte loads per thread outstanding at once.
constexpr int kPacksPerThread = 2;

// Loads packs p, p + stride, ... of a dense operand (or repeats its scalar). Issued before any
// of them is used, so every load of every operand is in flight together.
template <int kCount, typename U>
__device__ __forceinline__ void LoadPacks(const KernelArg<U>& arg, int64_t p, int64_t stride,
                                          Pack<U, kCount> (&packs)[kPacksPerThread]) {
  if (arg.data == nullptr) {
#pragma unroll
    for (int u = 0; u < kPacksPerThread; ++u) {
#pragma unroll
      for (int j = 0; j < kCount; ++j) packs[u].v[j] = arg.scalar;
    }
    return;
  }
  const auto* src = reinterpret_cast<const Pack<U, kCount>*>(arg.data);
#pragma unroll
  for (int u = 0; u < kPacksPerThread; ++u) packs[u] = src[p + u * stride];
}

// The dense path: every array operand is contiguous from its buffer's start and every pointer is
// aligned to its pack (the launcher checks), so operands load 16 bytes at a time. Each thread
// handles kPacksPerThread packs a grid apart per step (coalesced across the warp); the last
// n % kCount elements take the scalar loop.
template <typename Op, typename T, int kArity, typename S>
__global__ void ElementwiseDenseKernel(StoredOut<Op, T, kArity, S>* out, int64_t n,
                                       KernelArg<StoredFirstArg<Op, T, S>> a, KernelArg<S> b,
                                       KernelArg<S> c) {
  using A = FirstArgType<Op, T>;
  using SA = StoredFirstArg<Op, T, S>;
  using Out = StoredOut<Op, T, kArity, S>;
  constexpr int kCount = kPackElements<S>;
  const int64_t packs = n / kCount;
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  const int64_t first = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  for (int64_t p = first; p < packs; p += kPacksPerThread * stride) {
    if (p + (kPacksPerThread - 1) * stride >= packs) {
      // The grid's last partial step: one pack at a time.
      for (int64_t q = p; q < packs; q += stride) {
        Pack<Out, kCount> r;
#pragma unroll
        for (int j = 0; j < kCount; ++j) {
          r.v[j] = static_cast<Out>(ElementwiseAt<Op, T, kArity>(a, b, c, q * kCount + j));
        }
        reinterpret_cast<Pack<Out, kCount>*>(out)[q] = r;
      }
      break;
    }
    Pack<SA, kCount> pa[kPacksPerThread];
    Pack<S, kCount> pb[kPacksPerThread], pc[kPacksPerThread];
    LoadPacks(a, p, stride, pa);
    if constexpr (kArity > 1) LoadPacks(b, p, stride, pb);
    if constexpr (kArity > 2) LoadPacks(c, p, stride, pc);
#pragma unroll
    for (int u = 0; u < kPacksPerThread; ++u) {
      Pack<Out, kCount> r;
#pragma unroll
      for (int j = 0; j < kCount; ++j) {
        const A x = static_cast<A>(pa[u].v[j]);
        if constexpr (kArity == 1)
          r.v[j] = static_cast<Out>(Op{}(x));
        else if constexpr (kArity == 2)
          r.v[j] = static_cast<Out>(Op{}(x, static_cast<T>(pb[u].v[j])));
        else
          r.v[j] =
              static_cast<Out>(Op{}(x, static_cast<T>(pb[u].v[j]), static_cast<T>(pc[u].v[j])));
      }
      reinterpret_cast<Pack<Out, kCount>*>(out)[p + u * stride] = r;
    }
  }
  const int64_t tail = packs * kCount + first;
  if (tail < n) out[tail] = static_cast<Out>(ElementwiseAt<Op, T, kArity>(a, b, c, tail));
}

// A gather that swaps the two fastest axes (positive() is how the shape ops move elements) goes
// through shared-memory tiles; false for every other launch.
template <typename Op, int kArity, typename Out, typename SA>
bool LaunchedAsTranspose(void* out, const DeviceArg& arg, int sm_count, cudaStream_t stream) {
  if constexpr (kArity == 1 && std::is_same_v<Op, ufunc::Positive> && std::is_same_v<Out, SA>) {
    return arg.data != nullptr && !arg.contiguous &&
           LaunchTransposeIfTiled(static_cast<Out*>(out), static_cast<const SA*>(arg.data),
                                  arg.view, sm_count, stream);
  } else {
    return false;
  }
}

template <typename U>
bool AlignedFor(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % alignof(U) == 0;
}

// Whether `arg` can take the dense path: a scalar, or contiguous from a pointer aligned to P.
template <typename P>
bool DenseOperand(const DeviceArg& arg) {
  return arg.data == nullptr || (arg.contiguous && AlignedFor<P>(arg.data));
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

// Launches op `op` in `compute`, operands stored as `storage`, if it belongs to group (kArity,
// kGroup of kGroups).
template <int kArity, int kGroup, int kGroups>
cudaError_t LaunchGroup(ElementwiseOpId op, DType compute, DType storage, void* out, int64_t n,
                        const DeviceArg* args, int sm_count, cudaStream_t stream) {
  bool stored = true;
  const bool launched =
      DispatchElementwise<kArity, kGroup, kGroups>(op, compute, [&](auto functor, auto tag, auto) {
        using Op = decltype(functor);
        using T = decltype(tag);
        stored = DispatchStorage<T>(compute, storage, [&](auto storage_tag) {
          using S = decltype(storage_tag);
          using SA = StoredFirstArg<Op, T, S>;
          using Out = StoredOut<Op, T, kArity, S>;
          const DeviceArg none;
          const DeviceArg& db = kArity > 1 ? args[1] : none;
          const DeviceArg& dc = kArity > 2 ? args[2] : none;
          const auto ka = ToKernelArg<SA>(args[0]);
          const auto kb = ToKernelArg<S>(db);
          const auto kc = ToKernelArg<S>(dc);
          constexpr int kCount = kPackElements<S>;
          const bool dense =
              DenseOperand<Pack<SA, kCount>>(args[0]) && DenseOperand<Pack<S, kCount>>(db) &&
              DenseOperand<Pack<S, kCount>>(dc) && AlignedFor<Pack<Out, kCount>>(out);
          if (dense) {
            // One wave of resident blocks: the grid-stride loop covers the rest.
            static const int per_sm =
                BlocksPerSm(ElementwiseDenseKernel<Op, T, kArity, S>, kElementwiseThreads);
            const int64_t resident = int64_t{per_sm} * sm_count;
            const int64_t steps = (n / kCount + kElementwiseThreads * kPacksPerThread - 1) /
                                  (kElementwiseThreads * kPacksPerThread);
            const unsigned blocks = static_cast<unsigned>(std::clamp<int64_t>(steps, 1, resident));
            ElementwiseDenseKernel<Op, T, kArity, S>
                <<<blocks, kElementwiseThreads, 0, stream>>>(static_cast<Out*>(out), n, ka, kb, kc);
          } else {
            if (LaunchedAsTranspose<Op, kArity, Out, SA>(out, args[0], sm_count, stream)) return;
            ElementwiseKernel<Op, T, kArity, S>
                <<<ElementwiseBlocks(n, sm_count), kElementwiseThreads, 0, stream>>>(
                    static_cast<Out*>(out), n, ka, kb, kc);
          }
        });
      });
  return launched && stored ? cudaGetLastError() : cudaErrorInvalidValue;
}

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_ELEMENTWISE_KERNELS_CUH_
