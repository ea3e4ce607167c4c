// Reductions over one chunk: an output per thread where outputs are many and their reduced
// elements are not consecutive (coalesced across threads); otherwise blocks per output, the
// reduced range split over up to ~8 blocks per SM with partials in a fixed scratch buffer and a
// second kernel combining them. Deterministic: no atomics, a fixed combination order per launch
// shape.
#include <algorithm>

#include "server/cuda/compute_kernels.h"
#include "server/kernels/elementwise_loop.h"

namespace distarray::cuda {
namespace {

constexpr int kThreads = 256;

template <ReduceKind K, typename T>
using Acc = typename Reducer<K, T>::Acc;
template <ReduceKind K, typename T>
using Out = typename Reducer<K, T>::Out;

template <ReduceKind K, typename T>
__device__ __forceinline__ Acc<K, T> LoadAt(const T* base, const ReduceGeometry& g, int64_t r,
                                            T extreme) {
  const int64_t offset = g.reduced_contiguous ? r : BoxOffset(g.reduced, r);
  const int64_t index = K == ReduceKind::kArgMatch ? BoxOffset(g.index, r) : 0;
  return Reducer<K, T>::Load(base[offset], extreme, index);
}

// Reduces r in [begin, end) with stride `step`, four loads in flight per thread.
template <ReduceKind K, typename T>
__device__ Acc<K, T> ReduceRange(const T* base, const ReduceGeometry& g, int64_t begin, int64_t end,
                                 int64_t step, T extreme) {
  using R = Reducer<K, T>;
  Acc<K, T> acc0 = R::Identity(), acc1 = R::Identity(), acc2 = R::Identity(), acc3 = R::Identity();
  int64_t r = begin;
  for (; r + 3 * step < end; r += 4 * step) {
    acc0 = R::Combine(acc0, LoadAt<K, T>(base, g, r, extreme));
    acc1 = R::Combine(acc1, LoadAt<K, T>(base, g, r + step, extreme));
    acc2 = R::Combine(acc2, LoadAt<K, T>(base, g, r + 2 * step, extreme));
    acc3 = R::Combine(acc3, LoadAt<K, T>(base, g, r + 3 * step, extreme));
  }
  for (; r < end; r += step) acc0 = R::Combine(acc0, LoadAt<K, T>(base, g, r, extreme));
  return R::Combine(R::Combine(acc0, acc1), R::Combine(acc2, acc3));
}

template <ReduceKind K, typename T>
__global__ void ReducePerThread(const T* src, ReduceGeometry g, Out<K, T>* dst, double scale,
                                const T* extreme) {
  const int64_t outputs = g.outputs(), n = g.reduced_size();
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < outputs;
       o += int64_t{gridDim.x} * blockDim.x) {
    const T e = extreme != nullptr ? extreme[o] : T{};
    const Acc<K, T> acc = ReduceRange<K, T>(src + g.base + BoxOffset(g.kept, o), g, 0, n, 1, e);
    dst[o] = Reducer<K, T>::Finish(acc, scale);
  }
}

// Block b reduces split (b % splits) of output (b / splits). With one split it writes the
// output; otherwise its partial goes to scratch[o * splits + s].
template <ReduceKind K, typename T>
__global__ void ReducePerBlock(const T* src, ReduceGeometry g, Out<K, T>* dst, double scale,
                               const T* extreme, Acc<K, T>* scratch, int64_t splits) {
  using R = Reducer<K, T>;
  __shared__ Acc<K, T> shared[kThreads];
  const int64_t outputs = g.outputs(), n = g.reduced_size();
  const int64_t per_split = (n + splits - 1) / splits;
  for (int64_t b = blockIdx.x; b < outputs * splits; b += gridDim.x) {
    const int64_t o = b / splits, s = b % splits;
    const T e = extreme != nullptr ? extreme[o] : T{};
    const int64_t begin = s * per_split, end = min(n, begin + per_split);
    Acc<K, T> acc = ReduceRange<K, T>(src + g.base + BoxOffset(g.kept, o), g, begin + threadIdx.x,
                                      end, blockDim.x, e);
    shared[threadIdx.x] = acc;
    __syncthreads();
    for (int width = kThreads / 2; width > 0; width /= 2) {
      if (threadIdx.x < width) {
        shared[threadIdx.x] = R::Combine(shared[threadIdx.x], shared[threadIdx.x + width]);
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      if (splits == 1)
        dst[o] = R::Finish(shared[0], scale);
      else
        scratch[o * splits + s] = shared[0];
    }
    __syncthreads();  // `shared` is reused by the block's next output
  }
}

template <ReduceKind K, typename T>
__global__ void CombineSplits(const Acc<K, T>* scratch, int64_t outputs, int64_t splits,
                              Out<K, T>* dst, double scale) {
  using R = Reducer<K, T>;
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < outputs;
       o += int64_t{gridDim.x} * blockDim.x) {
    Acc<K, T> acc = R::Identity();
    for (int64_t s = 0; s < splits; ++s) acc = R::Combine(acc, scratch[o * splits + s]);
    dst[o] = R::Finish(acc, scale);
  }
}

unsigned GridFor(int64_t items, int threads, int sm_count) {
  return static_cast<unsigned>(
      std::clamp<int64_t>((items + threads - 1) / threads, 1, int64_t{sm_count} * 32));
}

template <ReduceKind K, typename T>
cudaError_t Launch(const T* src, const ReduceGeometry& g, Out<K, T>* dst, double scale,
                   const T* extreme, void* scratch, int64_t scratch_bytes, int sm_count,
                   cudaStream_t stream) {
  const int64_t outputs = g.outputs(), n = g.reduced_size();
  if (outputs == 0) return cudaSuccess;
  // Many outputs whose reduced elements are strided: a thread each reads coalesced across the
  // warp. Otherwise a block (or several) per output.
  const bool per_thread = n < 32 || (!g.reduced_contiguous && outputs >= int64_t{sm_count} * 128);
  if (per_thread) {
    ReducePerThread<K, T><<<GridFor(outputs, kThreads, sm_count), kThreads, 0, stream>>>(
        src, g, dst, scale, extreme);
    return cudaGetLastError();
  }
  const int64_t target_blocks = int64_t{sm_count} * 8;
  int64_t splits = std::max<int64_t>(1, target_blocks / outputs);
  splits = std::min<int64_t>(splits, std::max<int64_t>(1, n / (kThreads * 16)));
  splits = std::min<int64_t>(splits, scratch_bytes / (outputs * int64_t{sizeof(Acc<K, T>)}));
  splits = std::max<int64_t>(splits, 1);
  const unsigned blocks =
      static_cast<unsigned>(std::min<int64_t>(outputs * splits, int64_t{sm_count} * 32));
  ReducePerBlock<K, T><<<blocks, kThreads, 0, stream>>>(src, g, dst, scale, extreme,
                                                        static_cast<Acc<K, T>*>(scratch), splits);
  if (splits > 1) {
    CombineSplits<K, T><<<GridFor(outputs, kThreads, sm_count), kThreads, 0, stream>>>(
        static_cast<const Acc<K, T>*>(scratch), outputs, splits, dst, scale);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchReduce(ReduceKind kind, DType in, const void* src, const ReduceGeometry& g,
                         void* dst, double scale, const void* extreme, void* scratch,
                         int64_t scratch_bytes, int sm_count, cudaStream_t stream) {
  if (!IsImplemented(in)) return cudaErrorInvalidValue;
  cudaError_t result = cudaSuccess;
  DispatchReduceKind(kind, [&](auto kind_tag) {
    constexpr ReduceKind K = decltype(kind_tag)::value;
    DispatchDType(in, [&](auto tag) {
      using T = decltype(tag);
      result =
          Launch<K, T>(static_cast<const T*>(src), g, static_cast<Out<K, T>*>(dst), scale,
                       static_cast<const T*>(extreme), scratch, scratch_bytes, sm_count, stream);
    });
  });
  return result;
}

}  // namespace distarray::cuda
