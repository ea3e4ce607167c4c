// Reductions over one chunk: an output per thread where the reduced elements are strided and the
// kept axes innermost (coalesced across threads); otherwise blocks per output. Either way the
// reduced range is split until the grid fills the GPU, with partials in a fixed scratch buffer:
// on the block path the block finishing an output's last split combines them (an atomic ticket
// per output says which block is last), on the thread path a second kernel does. Deterministic:
// partials are combined in split order, in a fixed tree per launch shape.
#include <algorithm>

#include "server/cuda/compute_kernels.h"
#include "server/cuda/occupancy.cuh"
#include "server/kernels/elementwise_loop.h"

namespace distarray::cuda {
namespace {

constexpr int kThreads = 256;

template <ReduceKind K, typename T>
using Acc = typename Reducer<K, T>::Acc;
template <ReduceKind K, typename T>
using Out = typename Reducer<K, T>::Out;

template <ReduceKind K, typename T, typename S>
__device__ __forceinline__ Acc<K, T> LoadAt(const S* base, const ReduceGeometry& g, int64_t r,
                                            T extreme) {
  const int64_t offset = g.reduced_contiguous ? r : BoxOffset(g.reduced, r);
  const int64_t index = K == ReduceKind::kArgMatch ? BoxOffset(g.index, r) : 0;
  return Reducer<K, T>::Load(static_cast<T>(base[offset]), extreme, index);
}

// Reduces r in [begin, end) with stride `step`, four loads in flight per thread.
template <ReduceKind K, typename T, typename S>
__device__ Acc<K, T> ReduceRange(const S* base, const ReduceGeometry& g, int64_t begin, int64_t end,
                                 int64_t step, T extreme) {
  using R = Reducer<K, T>;
  Acc<K, T> acc0 = R::Identity(), acc1 = R::Identity(), acc2 = R::Identity(), acc3 = R::Identity();
  int64_t r = begin;
  for (; r + 3 * step < end; r += 4 * step) {
    acc0 = R::Combine(acc0, LoadAt<K, T, S>(base, g, r, extreme));
    acc1 = R::Combine(acc1, LoadAt<K, T, S>(base, g, r + step, extreme));
    acc2 = R::Combine(acc2, LoadAt<K, T, S>(base, g, r + 2 * step, extreme));
    acc3 = R::Combine(acc3, LoadAt<K, T, S>(base, g, r + 3 * step, extreme));
  }
  for (; r < end; r += step) acc0 = R::Combine(acc0, LoadAt<K, T, S>(base, g, r, extreme));
  return R::Combine(R::Combine(acc0, acc1), R::Combine(acc2, acc3));
}

// Thread t reduces split (t / outputs) of output (t % outputs): consecutive threads read
// consecutive outputs, coalesced when the kept axes are innermost. With one split it writes the
// output; otherwise its partial goes to scratch[o * splits + s].
template <ReduceKind K, typename T, typename S>
__global__ void ReducePerThread(const S* src, ReduceGeometry g, ReduceStoredOut<K, T, S>* dst,
                                double scale, const S* extreme, Acc<K, T>* scratch,
                                int64_t splits) {
  const int64_t outputs = g.outputs(), n = g.reduced_size();
  const int64_t per_split = (n + splits - 1) / splits;
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < outputs * splits;
       t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t o = t % outputs, s = t / outputs;
    const T e = extreme != nullptr ? static_cast<T>(extreme[o]) : T{};
    const int64_t begin = s * per_split, end = min(n, begin + per_split);
    const Acc<K, T> acc =
        ReduceRange<K, T, S>(src + g.base + BoxOffset(g.kept, o), g, begin, end, 1, e);
    if (splits == 1)
      dst[o] = static_cast<ReduceStoredOut<K, T, S>>(Reducer<K, T>::Finish(acc, scale));
    else
      scratch[o * splits + s] = acc;
  }
}

// Combines each thread's `acc` over the block (a fixed tree, so deterministic); thread 0 returns
// the block's value. Every thread of the block calls it.
template <ReduceKind K, typename T>
__device__ Acc<K, T> BlockCombine(Acc<K, T> acc) {
  using R = Reducer<K, T>;
  __shared__ Acc<K, T> shared[kThreads];
  shared[threadIdx.x] = acc;
  __syncthreads();
  for (int width = kThreads / 2; width > 0; width /= 2) {
    if (threadIdx.x < width) {
      shared[threadIdx.x] = R::Combine(shared[threadIdx.x], shared[threadIdx.x + width]);
    }
    __syncthreads();
  }
  const Acc<K, T> result = shared[0];
  __syncthreads();  // `shared` may be reused by the caller's next call
  return result;
}

// Elements each thread loads per step when the block reads consecutive elements: enough bytes in
// flight per thread to stream at HBM's rate. Four loads of 4 bytes a thread left the sum of 1 GiB
// of float32 at 0.29x of CuPy's (CUB's) on an H100.
template <typename T>
constexpr int kDenseItems = sizeof(T) >= 8 ? 8 : 16;

// The block reduces the consecutive elements [begin, end) of one output (g.reduced_contiguous):
// thread t reads begin + t + j * blockDim for j < kDenseItems per step, so each load is coalesced
// across the warp and all of a step's loads are in flight before the first is combined.
template <ReduceKind K, typename T, typename S>
__device__ Acc<K, T> ReduceDenseRange(const S* row, const ReduceGeometry& g, int64_t begin,
                                      int64_t end, T extreme) {
  using R = Reducer<K, T>;
  constexpr int kItems = kDenseItems<S>;
  constexpr int kAccumulators = 4;
  Acc<K, T> acc[kAccumulators];
#pragma unroll
  for (int j = 0; j < kAccumulators; ++j) acc[j] = R::Identity();
  const int64_t threads = blockDim.x;
  if constexpr (sizeof(S) == 2) {
    // 16-bit elements two at a time, one 4-byte load each: 2-byte loads left the float16 sum at
    // 0.82x of CuPy's on an H200, bound by load instructions, not bytes.
    if ((reinterpret_cast<uintptr_t>(row + begin) & 3) == 0) {
      struct alignas(4) Pair {
        S v[2];
      };
      const auto* pairs = reinterpret_cast<const Pair*>(row + begin);
      const int64_t pair_count = (end - begin) / 2;
      auto combine_pair = [&](int slot, const Pair& pair, int64_t first) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int64_t index = K == ReduceKind::kArgMatch ? BoxOffset(g.index, first + h) : 0;
          acc[slot] = R::Combine(acc[slot], R::Load(static_cast<T>(pair.v[h]), extreme, index));
        }
      };
      int64_t p = threadIdx.x;
      for (; p + (kItems - 1) * threads < pair_count; p += kItems * threads) {
        Pair v[kItems];
#pragma unroll
        for (int j = 0; j < kItems; ++j) v[j] = pairs[p + j * threads];
#pragma unroll
        for (int j = 0; j < kItems; ++j) {
          combine_pair(j % kAccumulators, v[j], begin + 2 * (p + j * threads));
        }
      }
      for (; p < pair_count; p += threads) combine_pair(0, pairs[p], begin + 2 * p);
      if ((end - begin) % 2 != 0 && threadIdx.x == 0) {
        acc[1] = R::Combine(acc[1], LoadAt<K, T, S>(row, g, end - 1, extreme));
      }
      return R::Combine(R::Combine(acc[0], acc[1]), R::Combine(acc[2], acc[3]));
    }
  }
  int64_t r = begin + threadIdx.x;
  for (; r + (kItems - 1) * threads < end; r += kItems * threads) {
    S v[kItems];
#pragma unroll
    for (int j = 0; j < kItems; ++j) v[j] = row[r + j * threads];
#pragma unroll
    for (int j = 0; j < kItems; ++j) {
      const int64_t index = K == ReduceKind::kArgMatch ? BoxOffset(g.index, r + j * threads) : 0;
      acc[j % kAccumulators] =
          R::Combine(acc[j % kAccumulators], R::Load(static_cast<T>(v[j]), extreme, index));
    }
  }
  for (; r < end; r += threads) acc[0] = R::Combine(acc[0], LoadAt<K, T, S>(row, g, r, extreme));
  return R::Combine(R::Combine(acc[0], acc[1]), R::Combine(acc[2], acc[3]));
}

// Block b reduces split (b % splits) of output (b / splits). With one split it writes the
// output; otherwise its partial goes to scratch[o * splits + s], and the block that finishes an
// output's last split (counted by `tickets`, one zeroed counter per output) combines the partials
// in split order (deterministic) and writes the output, so no second kernel runs: one launch less
// per reduction, which a recorded loop pays every iteration. It leaves the counter zero again.
template <ReduceKind K, typename T, typename S>
__global__ void ReducePerBlock(const S* src, ReduceGeometry g, ReduceStoredOut<K, T, S>* dst,
                               double scale, const S* extreme, Acc<K, T>* scratch, int64_t splits,
                               unsigned* tickets) {
  using R = Reducer<K, T>;
  using O = ReduceStoredOut<K, T, S>;
  __shared__ bool last_split;
  const int64_t outputs = g.outputs(), n = g.reduced_size();
  // Splits start on a whole step of dense loads from the row's start, so a warp's loads stay on
  // 128-byte lines when the row does, as a whole chunk does (the last splits may be empty and
  // contribute the identity).
  const int64_t step = int64_t{kThreads} * kDenseItems<S>;
  const int64_t per_split = ((n + splits - 1) / splits + step - 1) / step * step;
  for (int64_t b = blockIdx.x; b < outputs * splits; b += gridDim.x) {
    const int64_t o = b / splits, s = b % splits;
    const T e = extreme != nullptr ? static_cast<T>(extreme[o]) : T{};
    const int64_t begin = min(n, s * per_split), end = min(n, begin + per_split);
    const S* row = src + g.base + BoxOffset(g.kept, o);
    const Acc<K, T> acc = g.reduced_contiguous ? ReduceDenseRange<K, T, S>(row, g, begin, end, e)
                                               : ReduceRange<K, T, S>(row, g, begin + threadIdx.x,
                                                                      end, blockDim.x, e);
    const Acc<K, T> block = BlockCombine<K, T>(acc);
    if (splits == 1) {
      if (threadIdx.x == 0) dst[o] = static_cast<O>(R::Finish(block, scale));
      continue;
    }
    if (threadIdx.x == 0) {
      scratch[o * splits + s] = block;
      __threadfence();  // the partial is visible device-wide before the ticket counts it
      last_split = atomicAdd(&tickets[o], 1u) == static_cast<unsigned>(splits - 1);
    }
    __syncthreads();
    if (!last_split) continue;  // uniform across the block
    __threadfence();
    // Volatile: the other blocks' partials, not a stale cached copy.
    const volatile Acc<K, T>* partials = scratch + o * splits;
    Acc<K, T> total = R::Identity();
    for (int64_t t = threadIdx.x; t < splits; t += blockDim.x)
      total = R::Combine(total, partials[t]);
    const Acc<K, T> combined = BlockCombine<K, T>(total);
    if (threadIdx.x == 0) {
      dst[o] = static_cast<O>(R::Finish(combined, scale));
      tickets[o] = 0;
    }
  }
}

// The thread path's partials of each output combined in split order: a thread per output where
// splits are few, a block per output where they are many (a thread walking ~1000 partials one
// dependent load at a time cost 0.16 ms of a 0.5 ms sum).
template <ReduceKind K, typename T, typename O>
__global__ void CombineSplitsPerThread(const Acc<K, T>* scratch, int64_t outputs, int64_t splits,
                                       O* dst, double scale) {
  using R = Reducer<K, T>;
  for (int64_t o = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; o < outputs;
       o += int64_t{gridDim.x} * blockDim.x) {
    Acc<K, T> acc = R::Identity();
    for (int64_t s = 0; s < splits; ++s) acc = R::Combine(acc, scratch[o * splits + s]);
    dst[o] = static_cast<O>(R::Finish(acc, scale));
  }
}

template <ReduceKind K, typename T, typename O>
__global__ void CombineSplitsPerBlock(const Acc<K, T>* scratch, int64_t outputs, int64_t splits,
                                      O* dst, double scale) {
  using R = Reducer<K, T>;
  for (int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    Acc<K, T> acc = R::Identity();
    for (int64_t s = threadIdx.x; s < splits; s += blockDim.x) {
      acc = R::Combine(acc, scratch[o * splits + s]);
    }
    const Acc<K, T> block = BlockCombine<K, T>(acc);
    if (threadIdx.x == 0) dst[o] = static_cast<O>(R::Finish(block, scale));
  }
}

unsigned GridFor(int64_t items, int threads, int sm_count) {
  return static_cast<unsigned>(
      std::clamp<int64_t>((items + threads - 1) / threads, 1, int64_t{sm_count} * 32));
}

template <ReduceKind K, typename T, typename S>
cudaError_t Launch(const S* src, const ReduceGeometry& g, ReduceStoredOut<K, T, S>* dst,
                   double scale, const S* extreme, void* scratch, int64_t scratch_bytes,
                   int sm_count, cudaStream_t stream) {
  using O = ReduceStoredOut<K, T, S>;
  const int64_t outputs = g.outputs(), n = g.reduced_size();
  if (outputs == 0) return cudaSuccess;
  // The scratch holds the tickets, then the partials.
  Acc<K, T>* partials =
      reinterpret_cast<Acc<K, T>*>(static_cast<char*>(scratch) + kReduceTicketBytes);
  const int64_t max_splits = std::max<int64_t>(
      1, (scratch_bytes - kReduceTicketBytes) / (outputs * int64_t{sizeof(Acc<K, T>)}));
  // Strided reduced elements with the kept axes innermost: a thread per output reads coalesced
  // across the warp (a block per output would read one element per 32-byte sector). The reduced
  // range is split until the threads fill the GPU (axis 0 of a 16384^2 matrix has only 64 blocks
  // of outputs).
  const bool kept_inner_dense = g.kept.rank > 0 && g.kept.stride[g.kept.rank - 1] == 1;
  const bool per_thread = n < 32 || (!g.reduced_contiguous && kept_inner_dense && outputs >= 32);
  if (!per_thread) {
    // One wave of resident blocks; each split at least two steps of a block's dense loads.
    static const int per_sm = BlocksPerSm(ReducePerBlock<K, T, S>, kThreads);
    const int64_t target_blocks = int64_t{sm_count} * per_sm;
    int64_t splits = std::max<int64_t>(1, target_blocks / outputs);
    splits = std::min<int64_t>(splits, std::max<int64_t>(1, n / (kThreads * kDenseItems<S> * 2)));
    splits = std::min(splits, max_splits);
    // A split needs a ticket per output (never short: splitting needs fewer outputs than resident
    // blocks).
    if (outputs > kReduceTickets) splits = 1;
    const auto blocks = static_cast<unsigned>(std::min<int64_t>(outputs * splits, target_blocks));
    ReducePerBlock<K, T, S><<<blocks, kThreads, 0, stream>>>(
        src, g, dst, scale, extreme, partials, splits, static_cast<unsigned*>(scratch));
    return cudaGetLastError();  // the last block of each output combined its partials
  }
  static const int per_sm = BlocksPerSm(ReducePerThread<K, T, S>, kThreads);
  const int64_t target_threads = int64_t{sm_count} * per_sm * kThreads;
  int64_t splits = std::clamp<int64_t>(target_threads / outputs, 1, std::max<int64_t>(1, n / 64));
  splits = std::min(splits, max_splits);
  const auto blocks = static_cast<unsigned>(std::clamp<int64_t>(
      (outputs * splits + kThreads - 1) / kThreads, 1, int64_t{sm_count} * per_sm));
  ReducePerThread<K, T, S>
      <<<blocks, kThreads, 0, stream>>>(src, g, dst, scale, extreme, partials, splits);
  // Its partials, combined by a second kernel.
  if (splits > 1) {
    if (splits >= 64) {
      CombineSplitsPerBlock<K, T, O>
          <<<static_cast<unsigned>(std::min<int64_t>(outputs, int64_t{sm_count} * 8)), kThreads, 0,
             stream>>>(partials, outputs, splits, dst, scale);
    } else {
      CombineSplitsPerThread<K, T, O>
          <<<GridFor(outputs, kThreads, sm_count), kThreads, 0, stream>>>(partials, outputs, splits,
                                                                          dst, scale);
    }
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchReduce(ReduceKind kind, DType in, DType storage, const void* src,
                         const ReduceGeometry& g, void* dst, double scale, const void* extreme,
                         void* scratch, int64_t scratch_bytes, int sm_count, cudaStream_t stream) {
  if (!HasKernels(in) && !IsComplex(in)) return cudaErrorInvalidValue;
  cudaError_t result = cudaErrorInvalidValue;
  DispatchReduceKind(kind, [&](auto kind_tag) {
    constexpr ReduceKind K = decltype(kind_tag)::value;
    DispatchComputeDType(in, [&](auto tag) {
      using T = decltype(tag);
      DispatchStorage<T>(in, storage, [&](auto storage_tag) {
        using S = decltype(storage_tag);
        result = Launch<K, T, S>(
            static_cast<const S*>(src), g, static_cast<ReduceStoredOut<K, T, S>*>(dst), scale,
            static_cast<const S*>(extreme), scratch, scratch_bytes, sm_count, stream);
      });
    });
  });
  return result;
}

}  // namespace distarray::cuda
