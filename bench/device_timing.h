// Device-time measurement shared by the CUDA benchmarks (peer_limit, kernel_bench): a check that
// ends the program on a CUDA error, and the median of timed runs after warm-ups.
#ifndef DISTARRAY_BENCH_DEVICE_TIMING_H_
#define DISTARRAY_BENCH_DEVICE_TIMING_H_

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

// A benchmark has nothing sensible to do after a CUDA error: name the call and exit 1.
#define DA_BENCH_CHECK(x)                                                                   \
  do {                                                                                      \
    const cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorName(e_)); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

namespace distarray::bench {

// Median device milliseconds of `enqueue(stream)` (which returns a cudaError_t) over 10 timed runs
// after 2 warm-ups.
template <typename Enqueue>
float MedianMs(cudaStream_t stream, Enqueue&& enqueue) {
  cudaEvent_t start, stop;
  DA_BENCH_CHECK(cudaEventCreate(&start));
  DA_BENCH_CHECK(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < 12; ++i) {
    DA_BENCH_CHECK(cudaEventRecord(start, stream));
    DA_BENCH_CHECK(enqueue(stream));
    DA_BENCH_CHECK(cudaEventRecord(stop, stream));
    DA_BENCH_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    DA_BENCH_CHECK(cudaEventElapsedTime(&t, start, stop));
    if (i >= 2) ms.push_back(t);
  }
  DA_BENCH_CHECK(cudaEventDestroy(start));
  DA_BENCH_CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace distarray::bench

#endif  // DISTARRAY_BENCH_DEVICE_TIMING_H_
