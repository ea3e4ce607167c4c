// A CUDA backend buffer (stream-ordered pool memory charged to its device's ledger, with the
// events that order work on it) and the backend's launch template, shared by the backend's
// source files.
#ifndef DISTARRAY_SERVER_CUDA_CUDA_BUFFER_H_
#define DISTARRAY_SERVER_CUDA_CUDA_BUFFER_H_

#include <spdlog/spdlog.h>

#include <mutex>
#include <vector>

#include "common/status_macros.h"
#include "server/backend/buffer_hazards.h"
#include "server/cuda/cuda_backend.h"
#include "server/cuda/cuda_resources.h"

namespace distarray {

using cuda::CudaEvent;
using cuda::CudaEventPtr;
using cuda::ScopedDevice;

class CudaBuffer final : public DeviceBuffer {
 public:
  CudaBuffer(int device, int64_t bytes, void* data, cudaStream_t stream, MemoryLedger* ledger)
      : device_(device), bytes_(bytes), data_(data), stream_(stream), ledger_(ledger) {}
  // Stream-ordered release: the device's stream waits for every outstanding reader and writer
  // (on any stream), then frees. No lock needed: nobody else holds this buffer any more.
  ~CudaBuffer() override {
    ScopedDevice scope(device_);
    for (const CudaEventPtr& event : hazards_.All()) {
      cudaStreamWaitEvent(stream_, event->get(), 0);
    }
    const cudaError_t error = cudaFreeAsync(data_, stream_);
    if (error != cudaSuccess && error != cudaErrorCudartUnloading) {
      spdlog::error("cudaFreeAsync on device {}: {}", device_, cudaGetErrorName(error));
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

template <typename Enqueue>
absl::StatusOr<CudaEventPtr> CudaBackend::Launch(int device, const std::vector<CudaBuffer*>& reads,
                                                 const std::vector<CudaBuffer*>& writes,
                                                 Enqueue&& enqueue) {
  std::lock_guard lock(order_mu_);
  ScopedDevice scope(device);
  std::vector<CudaEventPtr> deps;
  for (CudaBuffer* b : reads) b->hazards().CollectForRead(deps);
  for (CudaBuffer* b : writes) b->hazards().CollectForWrite(deps);
  RETURN_IF_ERROR(WaitFor(device, deps));
  RETURN_IF_ERROR(enqueue(stream(device)));
  ASSIGN_OR_RETURN(CudaEventPtr event, CudaEvent::Record(stream(device)));
  for (CudaBuffer* b : reads) b->hazards().RecordRead(event, IsDone);
  for (CudaBuffer* b : writes) b->hazards().RecordWrite(event);
  return event;
}

}  // namespace distarray

#endif  // DISTARRAY_SERVER_CUDA_CUDA_BUFFER_H_
