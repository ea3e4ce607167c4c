// A CUDA backend buffer: device memory charged to its device's ledger, with the events that order
// eager work on it.
#ifndef DISTARRAY_SERVER_CUDA_CUDA_BUFFER_H_
#define DISTARRAY_SERVER_CUDA_CUDA_BUFFER_H_

#include <spdlog/spdlog.h>

#include <memory>
#include <vector>

#include "server/backend/buffer_hazards.h"
#include "server/backend/device_ops.h"
#include "server/backend/memory_ledger.h"
#include "server/cuda/cuda_resources.h"

namespace distarray {

using cuda::CudaEvent;
using cuda::CudaEventPtr;
using cuda::ScopedDevice;

// Created by make_shared only: a recording keeps every buffer its work touches alive through
// shared_from_this.
class CudaBuffer final : public DeviceBuffer, public std::enable_shared_from_this<CudaBuffer> {
 public:
  // Pool memory comes from cudaMallocAsync on `stream`; plain memory from cudaMalloc (a graph's
  // slot, allocated while recording: stream-ordered allocation cannot be captured into a
  // conditional body), with a null `stream`.
  CudaBuffer(int device, int64_t bytes, void* data, cudaStream_t stream, MemoryLedger* ledger)
      : device_(device), bytes_(bytes), data_(data), stream_(stream), ledger_(ledger) {}
  // No lock needed: nobody else holds this buffer any more.
  ~CudaBuffer() override {
    ScopedDevice scope(device_);
    cudaError_t error = cudaSuccess;
    if (stream_ != nullptr) {
      // Stream-ordered release: the device's stream waits for every outstanding reader and
      // writer (on any stream), then frees. Finished work needs no wait.
      for (const CudaEventPtr& event : hazards_.All()) {
        if (!event->ordered_before(stream_) && !event->done()) {
          cudaStreamWaitEvent(stream_, event->get(), 0);
        }
      }
      error = cudaFreeAsync(data_, stream_);
    } else {
      // cudaFree is not stream-ordered: the work still using the memory has to finish first.
      // A recorded graph's own slots are released only after its last replay has finished.
      for (const CudaEventPtr& event : hazards_.All()) cudaEventSynchronize(event->get());
      error = cudaFree(data_);
    }
    if (error != cudaSuccess && error != cudaErrorCudartUnloading) {
      spdlog::error("freeing {} bytes on device {}: {}", bytes_, device_, cudaGetErrorName(error));
    }
    ledger_->Release(bytes_);
  }
  int device() const override { return device_; }
  int64_t bytes() const override { return bytes_; }
  char* data() const { return static_cast<char*>(data_); }
  BufferHazards<CudaEventPtr>& hazards() { return hazards_; }

 private:
  const int device_;
  const int64_t bytes_;
  void* const data_;
  const cudaStream_t stream_;
  MemoryLedger* const ledger_;
  BufferHazards<CudaEventPtr> hazards_;
};

inline CudaBuffer* AsCuda(const BufferPtr& buffer) {
  return static_cast<CudaBuffer*>(buffer.get());
}

inline bool IsDone(const CudaEventPtr& event) { return event->done(); }

}  // namespace distarray

#endif  // DISTARRAY_SERVER_CUDA_CUDA_BUFFER_H_
