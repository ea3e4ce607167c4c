#include "server/cuda/loop_control.h"

namespace distarray::cuda {
namespace {

// One thread: the condition is one decision, and cudaGraphSetConditional must not be called
// concurrently for one handle.
__global__ void LoopConditionKernel(const unsigned char* flag, int64_t* count,
                                    int64_t max_iterations,
                                    const volatile unsigned int* cancel_word,
                                    GraphCounters* counters, cudaGraphConditionalHandle handle,
                                    bool first, unsigned int* running) {
  if (first) *count = 0;
  const unsigned int run =
      NextIteration(flag[0] != 0, count, max_iterations, cancel_word, counters);
  if (running != nullptr) *running = run;
  cudaGraphSetConditional(handle, run);
}

__global__ void IfConditionKernel(const unsigned char* flag, cudaGraphConditionalHandle handle) {
  cudaGraphSetConditional(handle, flag[0] != 0 ? 1u : 0u);
}

}  // namespace

cudaError_t LaunchLoopCondition(const void* flag, int64_t* count, int64_t max_iterations,
                                const unsigned int* cancel_word, GraphCounters* counters,
                                cudaGraphConditionalHandle handle, bool first, cudaStream_t stream,
                                unsigned int* running) {
  LoopConditionKernel<<<1, 1, 0, stream>>>(static_cast<const unsigned char*>(flag), count,
                                           max_iterations, cancel_word, counters, handle, first,
                                           running);
  return cudaGetLastError();
}

cudaError_t LaunchIfCondition(const void* flag, cudaGraphConditionalHandle handle,
                              cudaStream_t stream) {
  IfConditionKernel<<<1, 1, 0, stream>>>(static_cast<const unsigned char*>(flag), handle);
  return cudaGetLastError();
}

}  // namespace distarray::cuda
