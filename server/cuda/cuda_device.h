// The GPUs the CUDA backend owns, as both of its DeviceOps sinks use them: the eager backend
// (cuda_backend.h) and graph recordings (graph/recording.h) enqueue the same kernels on the same
// per-device state, each on its own streams.
#ifndef DISTARRAY_SERVER_CUDA_CUDA_DEVICE_H_
#define DISTARRAY_SERVER_CUDA_CUDA_DEVICE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "server/backend/memory_ledger.h"
#include "server/cuda/cuda_resources.h"

namespace distarray {

// One GPU: its streams, its fixed scratch memory and cuBLAS handle, and its memory ledger.
struct CudaDevice {
  static constexpr size_t kReduceScratchBytes = size_t{4} << 20;
  static constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

  std::string name;
  std::string uuid;  // GPU-..., as nvidia-smi prints it
  int64_t total_bytes = 0;
  int sm_count = 0;
  std::unique_ptr<MemoryLedger> ledger;
  std::optional<cuda::CudaStream> stream;           // kernels, local copies, host copies
  std::optional<cuda::CudaStream> transfer_stream;  // cross-device transfers, so they overlap
  // Fixed memory used by work on one stream at a time (reduction partials, the cuBLAS
  // workspace), and the handle bound to it. Eager work and recorded graphs share them: a replay
  // runs on `stream`, and both enqueue under CudaDevices::enqueue_mu.
  std::optional<cuda::DeviceBlock> reduce_scratch;
  std::optional<cuda::DeviceBlock> cublas_workspace;
  std::optional<cuda::CublasHandle> cublas;
};

struct CudaDevices {
  int count() const { return static_cast<int>(devices.size()); }
  CudaDevice& operator[](int device) { return devices[device]; }
  const CudaDevice& operator[](int device) const { return devices[device]; }
  cudaStream_t stream(int device) const { return devices[device].stream->get(); }
  cudaStream_t transfer_stream(int device) const { return devices[device].transfer_stream->get(); }

  std::vector<CudaDevice> devices;
  // Held while enqueueing, eager or recorded: it guards every buffer's hazards, so their order is
  // consistent, and serializes use of each device's cuBLAS handle (cublasSetStream binds it to
  // the enqueueing stream) and scratch.
  std::mutex enqueue_mu;
};

// Makes `stream` (of the current device) wait for `deps`.
absl::Status WaitForEvents(cudaStream_t stream, const std::vector<cuda::CudaEventPtr>& deps);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_CUDA_CUDA_DEVICE_H_
