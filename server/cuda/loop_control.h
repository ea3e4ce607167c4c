// Device-side control flow for recorded graphs (graph_recorder.h): the kernels that set the
// condition of a conditional WHILE or IF node from flags in device memory, agreeing with the
// other devices of the graph where it spans several (loop_condition.cuh). Plain C++ (no Abseil)
// for nvcc; asynchronous on `stream`, which is always a capturing stream: the condition kernels
// only make sense inside the graph whose conditional node `handle` belongs to.
#ifndef DISTARRAY_SERVER_CUDA_LOOP_CONTROL_H_
#define DISTARRAY_SERVER_CUDA_LOOP_CONTROL_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "server/cuda/loop_condition.cuh"

namespace distarray::cuda {

// Evaluates a WHILE loop's condition: the body runs again when the condition (`flags` here,
// agreed with the other devices by `agreement`) is true, the loop has run fewer than
// `max_iterations` times (`count`, device memory of the loop) and `cancel_word` (mapped host
// memory, read through its device address, at most every kCancelReadIntervalNs) is clear on
// every device. Counts the body it starts in `count` and counters->iterations; records why a
// true flag did not start one. `first` marks the evaluation before the WHILE node, which also
// restarts `count` at zero (the loop may run again, inside an enclosing loop, or on the next
// replay). `running`, when not null, receives the decision too (a fused body's copies read it:
// fusion/fused_loop_device.cuh).
cudaError_t LaunchLoopCondition(const LocalFlags& flags, int64_t* count, int64_t max_iterations,
                                const unsigned int* cancel_word, GraphCounters* counters,
                                const Agreement& agreement, cudaGraphConditionalHandle handle,
                                bool first, cudaStream_t stream, unsigned int* running = nullptr);

// Sets an IF node's condition to the condition `flags` hold, agreed across devices.
cudaError_t LaunchIfCondition(const LocalFlags& flags, const unsigned int* cancel_word,
                              const Agreement& agreement, cudaGraphConditionalHandle handle,
                              cudaStream_t stream);

// Agreeing through NCCL: writes this device's ballot on the condition `flags` hold into
// `ballot` (and, when `read_cancel`, whether it saw the cancel word, read at most every
// kCancelReadIntervalNs as a loop condition reads it), for the all-reduce that follows it.
cudaError_t LaunchCastBallot(const LocalFlags& flags, bool read_cancel,
                             const unsigned int* cancel_word, GraphCounters* counters,
                             NcclBallot* ballot, cudaStream_t stream);

// A barrier across the devices of the graph: returns once every device has reached its own
// barrier (an exchange without a vote), with the work each did before it visible to the others.
cudaError_t LaunchBarrier(const unsigned int* cancel_word, const Agreement& agreement,
                          cudaStream_t stream);

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_LOOP_CONTROL_H_
