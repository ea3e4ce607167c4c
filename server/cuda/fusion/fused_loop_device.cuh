// The fixed part of a fused loop body: its arguments, shared by the daemon (which fills them) and
// the kernel the runtime compiler builds for each loop (fused_loop_source.h generates the rest),
// and the device functions every such kernel ends with. One kernel is one whole iteration: the
// body's elementwise chain over every element, and the loop's condition (all/any of a bool the
// chain computes) reduced across the grid, with the last block to finish deciding whether the
// loop goes on (NextIteration) and setting the WHILE node's condition.
//
// A WHILE iteration holds `unroll` copies of the kernel, so one conditional-node round trip pays
// for several iterations. The copies after the loop's stop return at once (`running`), which
// keeps the semantics exact: the body runs exactly as many times as unfused.
#ifndef DISTARRAY_SERVER_CUDA_FUSION_FUSED_LOOP_DEVICE_CUH_
#define DISTARRAY_SERVER_CUDA_FUSION_FUSED_LOOP_DEVICE_CUH_

#include <cstdint>

#include "server/cuda/loop_condition.cuh"

namespace distarray::cuda {

// Device memory of one fused loop, zeroed when allocated; the last block leaves it ready for the
// next launch.
struct FusedLoopState {
  unsigned int running;   // the last evaluation's decision: whether the next copy runs
  unsigned int decided;   // some block found the element that decides all() (false) / any() (true)
  unsigned int finished;  // blocks done with this launch (the last one decides)
  unsigned int padding;
};

// Device memory of one persistent fused loop (docs/graphs.md, "Persistent loops"), zeroed when
// allocated and left consistent by every launch, so it serves every replay of its graph.
struct PersistentLoopState {
  unsigned int arrived;         // the grid barrier's word (GridBarrier); over several devices, the
                                // blocks that arrived at block 0's gather (AgreedIterationFlag)
  unsigned int decided[3];      // per iteration, by position % 3 (over several devices, % 2): a
                                // block found the deciding element
  unsigned long long position;  // iterations this loop has run, over every launch and replay
  // Over several devices: block 0's verdict on the iteration at `position`, agreed with the
  // other devices, which the other blocks wait for: (position + 1) << 1 | flag.
  unsigned long long verdict;
};

// The most iterations one launch of a persistent loop over `elements` runs before it ends, so that
// the conditional node reads the cancel word between launches: about 2^28 element-iterations, at
// most 256, at least 1. A launch then lasts about half a millisecond on an H200 at any size (1e7
// float32 elements: 26 iterations of 14 us), while its few microseconds of launch spread over
// enough iterations to vanish.
constexpr int PersistentIterationsPerLaunch(int64_t elements) {
  const int64_t k = (int64_t{1} << 28) / (elements > 0 ? elements : 1);
  return static_cast<int>(k < 1 ? 1 : k > 256 ? 256 : k);
}

constexpr int kMaxFusedBuffers = 16;
constexpr int kFusedBlockThreads = 256;
// Packs (16-byte accesses where the dtypes allow, fused_loop_source.h) a thread loads before it
// computes any: independent loads in flight per thread, which streaming large arrays at HBM's
// rate needs; small arrays get fewer blocks, each thread still with this many packs.
constexpr int kFusedPacksPerThread = 4;

// A straight-line chain's kernel (fused_loop_source.h, FusedChainSource): its buffers, inputs then
// stores, and the elements of each (small: the chains fused are of 0-d values).
constexpr int kMaxChainBuffers = 64;
// The most blocks a chain's kernel runs (a grid-stride loop beyond).
constexpr int kMaxChainBlocks = 1024;
// A chain that ends in a sum: each block's partial, and the ticket the last block to finish takes
// (zeroed when allocated; the last block leaves it zero again).
struct ChainSumScratch {
  unsigned int finished;
  unsigned int padding;
  double partials[kMaxChainBlocks];  // as the sum's dtype: float32 uses the first half
};
struct FusedChainArgs {
  void* buffers[kMaxChainBuffers];
  int64_t elements;
  void* sum;                 // the sum's element 0, where the chain ends in one
  ChainSumScratch* scratch;  // its partials and ticket
};

struct FusedLoopArgs {
  void* buffers[kMaxFusedBuffers];  // inputs and stores, in the order the source names them
  int64_t elements;
  FusedLoopState* state;
  unsigned char* condition;  // the condition variable's slot: receives the flag (a bool)
  int64_t* count;            // the loop's iterations so far
  int64_t max_iterations;
  const unsigned int* cancel_word;
  GraphCounters* counters;
  unsigned long long handle;  // the WHILE node's cudaGraphConditionalHandle
  // The loop's condition is this device's part (its chunk's all/any) agreed with the other
  // devices of the graph (loop_condition.cuh); one device alone: no exchange.
  Agreement agreement;
  // Persistent loops only: their barrier and votes, and the iterations a launch runs at most
  // (the same on every device of the loop: they end their launches together).
  PersistentLoopState* persistent;
  int iterations_per_launch;
};

#ifdef __CUDACC__
#ifdef __CUDACC_RTC__
// NVRTC declares no device runtime functions; this is the declaration cuda_device_runtime_api.h
// gives nvcc (the driver resolves it when the module loads).
extern "C" __device__ __attribute__((cudart_builtin)) void cudaGraphSetConditional(
    cudaGraphConditionalHandle handle, unsigned int value);
#endif
namespace fused {

// kW elements moved as one access (a 16-byte vector load or store when kW * sizeof(T) is 16).
template <typename T, int kW>
struct alignas(sizeof(T) * kW) Pack {
  T v[kW];
};

// float16 and bfloat16: a value of the chain is a float holding a value of its 16-bit dtype (each
// op's result rounded once, as the one-op kernels store it), moved to and from memory as its bits
// with the same cvt instructions as common/half.h, so fused and unfused loops agree bit for bit.
__device__ __forceinline__ float Float16Bits(unsigned short bits) {
  float v;
  asm("cvt.f32.f16 %0, %1;" : "=f"(v) : "h"(bits));
  return v;
}
__device__ __forceinline__ unsigned short ToFloat16Bits(float v) {
  unsigned short bits;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(v));
  return bits;
}
__device__ __forceinline__ float BFloat16Bits(unsigned short bits) {
  return __uint_as_float(static_cast<unsigned int>(bits) << 16);
}
__device__ __forceinline__ unsigned short ToBFloat16Bits(float v) {
  unsigned short bits;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(v));
  return bits;
}
__device__ __forceinline__ float RoundFloat16(float v) { return Float16Bits(ToFloat16Bits(v)); }
__device__ __forceinline__ float RoundBFloat16(float v) { return BFloat16Bits(ToBFloat16Bits(v)); }

// Whether this copy of the body runs: false once an earlier evaluation stopped the loop. First
// waits for the previous copy to finish (and its writes to be visible), where the copy was
// launched early as its programmatic dependent (PDL: its launch overlaps the previous copy's
// tail); a no-op otherwise. There is no early trigger (griddepcontrol.launch_dependents): with
// one, the waiting copy's blocks took the running copy's place on the SMs, and the 1e7 loop went
// from 15.5 to 21.6 us per iteration on one H200 (docs/design.md).
__device__ __forceinline__ bool Running(const FusedLoopArgs& args) {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  return *static_cast<volatile unsigned int*>(&args.state->running) != 0;
}

// Adds to a counter with release and acquire semantics at device scope, returning its old
// value: what a block wrote before is visible to the block that sees the last count, which sees
// what every earlier block wrote. Cheaper than a fence on each side.
__device__ __forceinline__ unsigned int AddAcquireRelease(unsigned int* counter, unsigned int v) {
  unsigned int old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;"
               : "=r"(old)
               : "l"(counter), "r"(v)
               : "memory");
  return old;
}

// The sum of `v` over the block's threads, in thread 0 (a fixed order: the same inputs give the
// same bits). Every thread calls it; blockDim.x is a multiple of 32, at most 1024.
template <typename T>
__device__ __forceinline__ T BlockSum(T v) {
  __shared__ T warp_sums[32];
  __syncthreads();  // an earlier call's readers are done with warp_sums
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x >= 32) return v;
  v = threadIdx.x < (blockDim.x >> 5) ? warp_sums[threadIdx.x] : T(0);
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  return v;
}

// Ends a chain that ends in a sum: `local` is this thread's sum over its elements. Each block
// writes its partial; the last block to finish adds the partials in block order (deterministic)
// and writes the sum. Every thread of every block must call it.
template <typename T>
__device__ __forceinline__ void FinishChainSum(const FusedChainArgs& args, T local) {
  T* partials = reinterpret_cast<T*>(args.scratch->partials);
  const T block = BlockSum(local);
  __shared__ bool last;
  if (threadIdx.x == 0) {
    partials[blockIdx.x] = block;
    last = AddAcquireRelease(&args.scratch->finished, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  T v = 0;
  for (unsigned int b = threadIdx.x; b < gridDim.x; b += blockDim.x) v += __ldcg(partials + b);
  v = BlockSum(v);
  if (threadIdx.x == 0) {
    *static_cast<T*>(args.sum) = v;
    args.scratch->finished = 0;
  }
}

// Ends a launch: `local` is this thread's all() (`is_all`) or any() over its elements. The block
// combines its threads; a block holding the deciding value records it; the last block to finish
// computes the flag, stores it in the condition variable (this device's partial), and decides the
// next iteration with the other devices.
// Every thread of every block must call it.
__device__ __forceinline__ void FinishIteration(const FusedLoopArgs& args, bool local,
                                                bool is_all) {
  const bool block_value = is_all ? __syncthreads_and(local) : __syncthreads_or(local);
  if (threadIdx.x != 0) return;
  if (block_value != is_all) atomicOr(&args.state->decided, 1u);
  if (AddAcquireRelease(&args.state->finished, 1u) != gridDim.x - 1) return;
  // The last block: every block's `decided` is visible. Leave the state ready for the next
  // launch, then decide.
  const bool decided = args.state->decided != 0;
  args.state->decided = 0;
  args.state->finished = 0;
  const bool flag = is_all ? !decided : decided;
  *args.condition = flag ? 1 : 0;
  const unsigned int run = NextIteration(true, flag, !is_all, args.count, args.max_iterations,
                                         args.cancel_word, args.counters, args.agreement);
  args.state->running = run;
  cudaGraphSetConditional(static_cast<cudaGraphConditionalHandle>(args.handle), run);
}

// A barrier over every block of the grid, which a cooperative launch keeps resident together:
// grid_group::sync's scheme without its headers. Block 0 adds 2^31 - (blocks - 1), the others 1,
// so the word's top bit flips once every block has arrived; each waits for the flip.
__device__ __forceinline__ void GridBarrier(unsigned int* arrived) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned int add = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1) : 1u;
    __threadfence();  // this block's writes (the votes) before its arrival
    const unsigned int old = atomicAdd(arrived, add);
    while (((old ^ *static_cast<volatile unsigned int*>(arrived)) & 0x80000000u) == 0) {
    }
    __threadfence();
  }
  __syncthreads();
}

// The flag of iteration `iteration` of a persistent loop over several devices, agreed with the
// other devices. A gather and a release instead of a grid barrier: every other block folds its
// vote in and arrives; block 0 waits for them all, makes the exchange with the other devices
// (Agree, by one thread, as every condition evaluation does) and publishes the verdict, which the
// other blocks wait for. So the agreement costs one exchange per iteration and no second barrier
// (a probe with a barrier, one thread's exchange and a second barrier was slower than unrolling:
// docs/graphs.md, "Persistent loops"). A cancel seen while waiting for a peer stops the launch,
// and the NextIteration that ends it then answers the cancel (the exchange has given up for the
// replay). Every thread of every block must call it.
__device__ __forceinline__ bool AgreedIterationFlag(const FusedLoopArgs& args, bool block_value,
                                                    bool is_all, unsigned long long iteration) {
  PersistentLoopState* const state = args.persistent;
  const unsigned int slot = static_cast<unsigned int>(iteration % 2);
  __shared__ bool verdict;
  if (threadIdx.x == 0) {
    if (blockIdx.x != 0) {
      if (block_value != is_all) atomicOr(&state->decided[slot], 1u);
      __threadfence();  // the vote before the arrival
      atomicAdd(&state->arrived, 1u);
      const volatile unsigned long long* published = &state->verdict;
      unsigned long long v;
      while (((v = *published) >> 1) != iteration + 1) {
      }
      verdict = (v & 1) != 0;
    } else {
      const volatile unsigned int* arrived = &state->arrived;
      while (*arrived != gridDim.x - 1) {
      }
      // Every other block waits for this iteration's verdict, so none arrives again before it
      // is published: the count is reset for the next iteration here. The vote slot is cleared
      // for the iteration after next, which votes in it after its voters' arrival fences of the
      // next iteration, made once they saw this verdict: ordered with no fence of its own.
      state->arrived = 0;
      __threadfence();
      const bool decided =
          *static_cast<volatile unsigned int*>(&state->decided[slot]) != 0 || block_value != is_all;
      state->decided[slot] = 0;
      const AgreedVote agreed = Agree(args.agreement, /*voted=*/true, is_all ? !decided : decided,
                                      !is_all, /*cancel=*/false, args.cancel_word);
      verdict = agreed.flag && !agreed.cancel;
      __threadfence();  // the resets before the release
      *static_cast<volatile unsigned long long*>(&state->verdict) =
          (iteration + 1) << 1 | (verdict ? 1ull : 0ull);
    }
  }
  __syncthreads();
  return verdict;
}

// Ends iteration `k` of a persistent loop's launch and says whether this block runs the next one
// in the same launch. Every block combines its predicate into the iteration's vote slot, waits at
// the grid barrier, then reads the verdict: all blocks decide alike, from values they all read
// after the barrier (over several devices, AgreedIterationFlag: block 0's agreed verdict). The
// launch goes on while the flag holds, fewer than `iterations_per_launch` have run and the cap
// allows one more; otherwise block 0 records the iterations, the flag and the position, and decides
// the next launch with NextIteration (the cap, the cancel word, the WHILE node's condition), as the
// unrolled kernel's last block does every iteration. `position` and `started` (the loop's bodies
// started, this launch's first included) are read at the launch's start. Every thread of every
// block must call it.
__device__ __forceinline__ bool PersistentNextIteration(const FusedLoopArgs& args, bool local,
                                                        bool is_all, unsigned long long position,
                                                        int64_t started, int k) {
  PersistentLoopState* const state = args.persistent;
  const bool block_value = is_all ? __syncthreads_and(local) : __syncthreads_or(local);
  bool flag;
  if (args.agreement.devices > 1) {
    flag = AgreedIterationFlag(args, block_value, is_all, position + k);
  } else {
    const unsigned int slot = static_cast<unsigned int>((position + k) % 3);
    if (threadIdx.x == 0 && block_value != is_all) atomicOr(&state->decided[slot], 1u);
    GridBarrier(&state->arrived);
    const bool decided = *static_cast<volatile unsigned int*>(&state->decided[slot]) != 0;
    // The slot before this one: every block read it before arriving at this barrier, and the
    // next iteration to vote in it comes after two more barriers.
    if (blockIdx.x == 0 && threadIdx.x == 0) state->decided[(slot + 2) % 3] = 0;
    flag = is_all ? !decided : decided;
  }
  if (flag && k + 1 < args.iterations_per_launch && started + k < args.max_iterations) {
    return true;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    // The k bodies this launch started after its first, counted as NextIteration counts them.
    *args.count = started + k;
    args.counters->iterations += static_cast<unsigned long long>(k);
    state->position = position + k + 1;
    *args.condition = flag ? 1 : 0;
    const unsigned int run = NextIteration(true, flag, !is_all, args.count, args.max_iterations,
                                           args.cancel_word, args.counters, args.agreement);
    cudaGraphSetConditional(static_cast<cudaGraphConditionalHandle>(args.handle), run);
  }
  return false;
}

}  // namespace fused
#endif  // __CUDACC__

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_FUSION_FUSED_LOOP_DEVICE_CUH_
