#include "server/cuda/loop_control.h"

namespace distarray::cuda {
namespace {

// One thread: the condition is one decision, and cudaGraphSetConditional must not be called
// concurrently for one handle.
__global__ void LoopConditionKernel(const LocalFlags flags, int64_t* count, int64_t max_iterations,
                                    const volatile unsigned int* cancel_word,
                                    GraphCounters* counters, const Agreement agreement,
                                    cudaGraphConditionalHandle handle, bool first,
                                    unsigned int* running) {
  if (first) *count = 0;
  const unsigned int run = NextIteration(flags.count > 0, LocalVote(flags), flags.any, count,
                                         max_iterations, cancel_word, counters, agreement);
  if (running != nullptr) *running = run;
  cudaGraphSetConditional(handle, run);
}

__global__ void IfConditionKernel(const LocalFlags flags, const volatile unsigned int* cancel_word,
                                  const Agreement agreement, cudaGraphConditionalHandle handle) {
  const AgreedVote agreed =
      Agree(agreement, flags.count > 0, LocalVote(flags), flags.any, false, cancel_word);
  cudaGraphSetConditional(handle, agreed.flag && !agreed.cancel ? 1u : 0u);
}

// This device's ballot for an NCCL agreement (loop_condition.cuh, NcclBallot): its vote, and for
// a loop's condition whether it saw the cancel word.
__global__ void CastBallotKernel(const LocalFlags flags, bool read_cancel,
                                 const volatile unsigned int* cancel_word, GraphCounters* counters,
                                 NcclBallot* ballot) {
  const bool voted = flags.count > 0;
  const bool vote = LocalVote(flags);
  ballot->ballot[kBallotTrue] = voted && vote ? 1 : 0;
  ballot->ballot[kBallotFalse] = voted && !vote ? 1 : 0;
  ballot->ballot[kBallotCancel] =
      read_cancel && CancelSeen(counters->last_cancel_read_ns, cancel_word, counters) ? 1 : 0;
}

// Fenced on both sides at system scope: the work before it on this device is visible to the
// peers' reads after their barriers, and this device reads the peers' only after its own.
__global__ void BarrierKernel(const volatile unsigned int* cancel_word, const Agreement agreement) {
  __threadfence_system();
  Agree(agreement, false, false, false, false, cancel_word);
  __threadfence_system();
}

}  // namespace

cudaError_t LaunchBarrier(const unsigned int* cancel_word, const Agreement& agreement,
                          cudaStream_t stream) {
  BarrierKernel<<<1, 1, 0, stream>>>(cancel_word, agreement);
  return cudaGetLastError();
}

cudaError_t LaunchCastBallot(const LocalFlags& flags, bool read_cancel,
                             const unsigned int* cancel_word, GraphCounters* counters,
                             NcclBallot* ballot, cudaStream_t stream) {
  CastBallotKernel<<<1, 1, 0, stream>>>(flags, read_cancel, cancel_word, counters, ballot);
  return cudaGetLastError();
}

cudaError_t LaunchLoopCondition(const LocalFlags& flags, int64_t* count, int64_t max_iterations,
                                const unsigned int* cancel_word, GraphCounters* counters,
                                const Agreement& agreement, cudaGraphConditionalHandle handle,
                                bool first, cudaStream_t stream, unsigned int* running) {
  LoopConditionKernel<<<1, 1, 0, stream>>>(flags, count, max_iterations, cancel_word, counters,
                                           agreement, handle, first, running);
  return cudaGetLastError();
}

cudaError_t LaunchIfCondition(const LocalFlags& flags, const unsigned int* cancel_word,
                              const Agreement& agreement, cudaGraphConditionalHandle handle,
                              cudaStream_t stream) {
  IfConditionKernel<<<1, 1, 0, stream>>>(flags, cancel_word, agreement, handle);
  return cudaGetLastError();
}

}  // namespace distarray::cuda
