#include "server/cuda/loop_control.h"

namespace distarray::cuda {
namespace {

// One thread: the condition is one decision, and cudaGraphSetConditional must not be called
// concurrently for one handle.
__global__ void LoopConditionKernel(const unsigned char* flag, int64_t* count,
                                    int64_t max_iterations,
                                    const volatile unsigned int* cancel_word,
                                    GraphCounters* counters, cudaGraphConditionalHandle handle,
                                    bool first) {
  if (first) *count = 0;
  unsigned int run = 0;
  if (flag[0] != 0) {
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    // The counters start zeroed on every replay, so its first evaluation reads the word.
    const bool read = now - counters->last_cancel_read_ns >= kCancelReadIntervalNs;
    if (read) counters->last_cancel_read_ns = now;
    // Volatile: the host sets the word while the graph runs; a read must fetch it anew.
    if (read && *cancel_word != 0) {
      counters->cancelled = 1;
    } else if (*count >= max_iterations) {
      counters->hit_iteration_cap = 1;
    } else {
      ++*count;
      ++counters->iterations;
      run = 1;
    }
  }
  cudaGraphSetConditional(handle, run);
}

__global__ void IfConditionKernel(const unsigned char* flag, cudaGraphConditionalHandle handle) {
  cudaGraphSetConditional(handle, flag[0] != 0 ? 1u : 0u);
}

}  // namespace

cudaError_t LaunchLoopCondition(const void* flag, int64_t* count, int64_t max_iterations,
                                const unsigned int* cancel_word, GraphCounters* counters,
                                cudaGraphConditionalHandle handle, bool first,
                                cudaStream_t stream) {
  LoopConditionKernel<<<1, 1, 0, stream>>>(static_cast<const unsigned char*>(flag), count,
                                           max_iterations, cancel_word, counters, handle, first);
  return cudaGetLastError();
}

cudaError_t LaunchIfCondition(const void* flag, cudaGraphConditionalHandle handle,
                              cudaStream_t stream) {
  IfConditionKernel<<<1, 1, 0, stream>>>(static_cast<const unsigned char*>(flag), handle);
  return cudaGetLastError();
}

}  // namespace distarray::cuda
