// The physical limits the reshard benchmark divides by, measured in the same run:
// cudaMemcpyPeerAsync of the bytes reshard (a) moves, both directions at once for (b), and a
// device-to-device copy. Prints "key value" lines that distarray_bench reads.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#define CHECK(x)                                                 \
  do {                                                           \
    cudaError_t e = (x);                                         \
    if (e != cudaSuccess) {                                      \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorName(e)); \
      return 1;                                                  \
    }                                                            \
  } while (0)

// Median milliseconds of `enqueue(stream)` over 10 timed runs after 2 warm-ups; -1 on error.
template <typename Enqueue>
float MedianMs(cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop, Enqueue&& enqueue) {
  std::vector<float> ms;
  for (int i = 0; i < 12; ++i) {
    cudaEventRecord(start, stream);
    if (enqueue(stream) != cudaSuccess) return -1;
    cudaEventRecord(stop, stream);
    if (cudaEventSynchronize(stop) != cudaSuccess) return -1;
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    if (i >= 2) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int main() {
  int n = 0;
  CHECK(cudaGetDeviceCount(&n));
  const size_t quarter = size_t{256} << 20, half = size_t{512} << 20;
  void *a0, *b0, *a1, *b1;
  CHECK(cudaSetDevice(0));
  CHECK(cudaMalloc(&a0, 2 * half));
  CHECK(cudaMalloc(&b0, 2 * half));
  cudaStream_t s0, s1;
  CHECK(cudaStreamCreate(&s0));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  // Device copy of 1 GiB (bytes read + written per second).
  const float copy_ms = MedianMs(s0, start, stop, [&](cudaStream_t s) {
    return cudaMemcpyAsync(b0, a0, 2 * half, cudaMemcpyDeviceToDevice, s);
  });
  if (copy_ms < 0) return 1;
  std::printf("device_copy_1GiB_GBps %.1f\n", 2.0 * 2 * half / (copy_ms * 1e-3) / 1e9);
  if (n < 2) {
    std::printf("peer_devices 1\n");
    return 0;
  }
  CHECK(cudaDeviceEnablePeerAccess(1, 0));
  CHECK(cudaSetDevice(1));
  CHECK(cudaDeviceEnablePeerAccess(0, 0));
  CHECK(cudaMalloc(&a1, 2 * half));
  CHECK(cudaMalloc(&b1, 2 * half));
  CHECK(cudaStreamCreate(&s1));
  CHECK(cudaSetDevice(0));
  // (a) 256 MiB, GPU 0 -> GPU 1.
  const float peer_ms = MedianMs(s0, start, stop, [&](cudaStream_t s) {
    return cudaMemcpyPeerAsync(b1, 1, a0, 0, quarter, s);
  });
  if (peer_ms < 0) return 1;
  std::printf("peer_256MiB_ms %.4f\n", peer_ms);
  std::printf("peer_256MiB_GBps %.1f\n", quarter / (peer_ms * 1e-3) / 1e9);
  // (b) 512 MiB each way at once, on two streams, timed from device 0 around both.
  std::vector<float> ms;
  for (int i = 0; i < 12; ++i) {
    CHECK(cudaSetDevice(0));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaSetDevice(1));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaSetDevice(0));
    CHECK(cudaEventRecord(start, s0));
    CHECK(cudaStreamWaitEvent(s1, start, 0));
    CHECK(cudaMemcpyPeerAsync(b1, 1, a0, 0, half, s0));
    CHECK(cudaMemcpyPeerAsync(b0, 0, a1, 1, half, s1));
    cudaEvent_t s1_done;  // an event of device 1, recorded on its stream
    CHECK(cudaSetDevice(1));
    CHECK(cudaEventCreateWithFlags(&s1_done, cudaEventDisableTiming));
    CHECK(cudaEventRecord(s1_done, s1));
    CHECK(cudaSetDevice(0));
    CHECK(cudaStreamWaitEvent(s0, s1_done, 0));
    CHECK(cudaEventRecord(stop, s0));
    CHECK(cudaEventSynchronize(stop));
    float t;
    CHECK(cudaEventElapsedTime(&t, start, stop));
    CHECK(cudaEventDestroy(s1_done));
    if (i >= 2) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("peer_swap_2x512MiB_ms %.4f\n", ms[ms.size() / 2]);
  std::printf("peer_swap_2x512MiB_GBps %.1f\n", 2.0 * half / (ms[ms.size() / 2] * 1e-3) / 1e9);
  return 0;
}
