// The physical limits the reshard benchmark divides by, measured in the same run:
// cudaMemcpyPeerAsync of the bytes reshard (a) moves, both directions at once for (b), and a
// device-to-device copy. Prints "key value" lines that distarray_bench reads.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "bench/device_timing.h"

using distarray::bench::MedianMs;

int main() {
  int n = 0;
  DA_BENCH_CHECK(cudaGetDeviceCount(&n));
  const size_t quarter = size_t{256} << 20, half = size_t{512} << 20;
  void *a0, *b0, *a1, *b1;
  DA_BENCH_CHECK(cudaSetDevice(0));
  DA_BENCH_CHECK(cudaMalloc(&a0, 2 * half));
  DA_BENCH_CHECK(cudaMalloc(&b0, 2 * half));
  cudaStream_t s0, s1;
  DA_BENCH_CHECK(cudaStreamCreate(&s0));
  cudaEvent_t start, stop;
  DA_BENCH_CHECK(cudaEventCreate(&start));
  DA_BENCH_CHECK(cudaEventCreate(&stop));
  // Device copy of 1 GiB (bytes read + written per second).
  const float copy_ms = MedianMs(s0, [&](cudaStream_t s) {
    return cudaMemcpyAsync(b0, a0, 2 * half, cudaMemcpyDeviceToDevice, s);
  });
  std::printf("device_copy_1GiB_GBps %.1f\n", 2.0 * 2 * half / (copy_ms * 1e-3) / 1e9);
  if (n < 2) {
    std::printf("peer_devices 1\n");
    return 0;
  }
  DA_BENCH_CHECK(cudaDeviceEnablePeerAccess(1, 0));
  DA_BENCH_CHECK(cudaSetDevice(1));
  DA_BENCH_CHECK(cudaDeviceEnablePeerAccess(0, 0));
  DA_BENCH_CHECK(cudaMalloc(&a1, 2 * half));
  DA_BENCH_CHECK(cudaMalloc(&b1, 2 * half));
  DA_BENCH_CHECK(cudaStreamCreate(&s1));
  DA_BENCH_CHECK(cudaSetDevice(0));
  // (a) 256 MiB, GPU 0 -> GPU 1.
  const float peer_ms =
      MedianMs(s0, [&](cudaStream_t s) { return cudaMemcpyPeerAsync(b1, 1, a0, 0, quarter, s); });
  std::printf("peer_256MiB_ms %.4f\n", peer_ms);
  std::printf("peer_256MiB_GBps %.1f\n", quarter / (peer_ms * 1e-3) / 1e9);
  // (b) 512 MiB each way at once, on two streams, timed from device 0 around both.
  std::vector<float> ms;
  for (int i = 0; i < 12; ++i) {
    DA_BENCH_CHECK(cudaSetDevice(0));
    DA_BENCH_CHECK(cudaDeviceSynchronize());
    DA_BENCH_CHECK(cudaSetDevice(1));
    DA_BENCH_CHECK(cudaDeviceSynchronize());
    DA_BENCH_CHECK(cudaSetDevice(0));
    DA_BENCH_CHECK(cudaEventRecord(start, s0));
    DA_BENCH_CHECK(cudaStreamWaitEvent(s1, start, 0));
    DA_BENCH_CHECK(cudaMemcpyPeerAsync(b1, 1, a0, 0, half, s0));
    DA_BENCH_CHECK(cudaMemcpyPeerAsync(b0, 0, a1, 1, half, s1));
    cudaEvent_t s1_done;  // an event of device 1, recorded on its stream
    DA_BENCH_CHECK(cudaSetDevice(1));
    DA_BENCH_CHECK(cudaEventCreateWithFlags(&s1_done, cudaEventDisableTiming));
    DA_BENCH_CHECK(cudaEventRecord(s1_done, s1));
    DA_BENCH_CHECK(cudaSetDevice(0));
    DA_BENCH_CHECK(cudaStreamWaitEvent(s0, s1_done, 0));
    DA_BENCH_CHECK(cudaEventRecord(stop, s0));
    DA_BENCH_CHECK(cudaEventSynchronize(stop));
    float t;
    DA_BENCH_CHECK(cudaEventElapsedTime(&t, start, stop));
    DA_BENCH_CHECK(cudaEventDestroy(s1_done));
    if (i >= 2) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("peer_swap_2x512MiB_ms %.4f\n", ms[ms.size() / 2]);
  std::printf("peer_swap_2x512MiB_GBps %.1f\n", 2.0 * half / (ms[ms.size() / 2] * 1e-3) / 1e9);
  return 0;
}
