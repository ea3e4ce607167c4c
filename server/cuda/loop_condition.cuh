// The decision a WHILE loop's condition makes on the device, shared by the loop condition kernel
// (loop_control.cu) and fused loop bodies, which the runtime compiler builds from source
// (server/cuda/fusion/): one definition of the cap, the cancel word and the counters for both.
// Plain C++ with device functions behind __CUDACC__, so host code can include it for the types.
#ifndef DISTARRAY_SERVER_CUDA_LOOP_CONDITION_CUH_
#define DISTARRAY_SERVER_CUDA_LOOP_CONDITION_CUH_

#include <cstdint>

namespace distarray::cuda {

// One replay's statistics, in device memory owned by the recorded graph: zeroed by the graph's
// first node, updated by the loop conditions, copied to the host by its last node.
struct GraphCounters {
  unsigned long long iterations;   // loop bodies started, over every loop
  unsigned int hit_iteration_cap;  // a loop stopped at its cap with its flag still true
  unsigned int cancelled;          // the cancel word stopped a loop
  // The device clock (%globaltimer, ns) when a loop condition last read the cancel word.
  unsigned long long last_cancel_read_ns;
};

// A loop condition reads the cancel word, which lives in host memory, when this long has passed
// since the last read (and on a replay's first evaluation): a read is a PCIe round trip on the
// path every iteration waits for, so short bodies share one, while a cancel still stops a loop at
// the first evaluation this long after it is set, however long its body runs.
constexpr unsigned long long kCancelReadIntervalNs = 50'000;

#ifdef __CUDACC__
// Whether the body runs (again), given the loop's flag: it does when the flag is true, the loop
// has run fewer than `max_iterations` times (`count`) and the cancel word is clear. Counts the
// body it starts; records why a true flag did not start one. One thread calls it per evaluation.
// Every value it reads is loaded first, so an evaluation waits for memory once: it is on the
// path of every iteration (docs/design.md, "Compute").
__device__ __forceinline__ unsigned int NextIteration(bool flag, int64_t* count,
                                                      int64_t max_iterations,
                                                      const volatile unsigned int* cancel_word,
                                                      GraphCounters* counters) {
  const int64_t done = *count;
  const unsigned long long iterations = counters->iterations;
  const unsigned long long last_read_ns = counters->last_cancel_read_ns;
  if (!flag) return 0;
  unsigned long long now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  // The counters start zeroed on every replay, so its first evaluation reads the word.
  const bool read = now - last_read_ns >= kCancelReadIntervalNs;
  if (read) counters->last_cancel_read_ns = now;
  // Volatile: the host sets the word while the graph runs; a read must fetch it anew.
  if (read && *cancel_word != 0) {
    counters->cancelled = 1;
    return 0;
  }
  if (done >= max_iterations) {
    counters->hit_iteration_cap = 1;
    return 0;
  }
  *count = done + 1;
  counters->iterations = iterations + 1;
  return 1;
}
#endif  // __CUDACC__

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_LOOP_CONDITION_CUH_
