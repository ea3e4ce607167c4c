// A host backend buffer: aligned heap memory charged to its simulated device's ledger, with the
// hazards that order work on it.
#ifndef DISTARRAY_SERVER_HOST_HOST_BUFFER_H_
#define DISTARRAY_SERVER_HOST_HOST_BUFFER_H_

#include <cstddef>
#include <memory>
#include <new>

#include "server/backend/backend.h"
#include "server/backend/buffer_hazards.h"
#include "server/backend/memory_ledger.h"
#include "server/host/host_stream.h"

namespace distarray {

// shared_from_this: a graph recording keeps every buffer its work touches alive, from the raw
// pointers the backend's calls pass around.
class HostBuffer final : public DeviceBuffer, public std::enable_shared_from_this<HostBuffer> {
 public:
  HostBuffer(int device, int64_t bytes, std::byte* data, MemoryLedger* ledger)
      : device_(device), bytes_(bytes), data_(data), ledger_(ledger) {}
  ~HostBuffer() override {
    ::operator delete[](data_, std::align_val_t{64});
    ledger_->Release(bytes_);
  }
  int device() const override { return device_; }
  int64_t bytes() const override { return bytes_; }
  std::byte* data() const { return data_; }
  template <typename T>
  T* as() const {
    return reinterpret_cast<T*>(data_);
  }
  BufferHazards<HostEventPtr>& hazards() { return hazards_; }

 private:
  const int device_;
  const int64_t bytes_;
  std::byte* const data_;
  MemoryLedger* const ledger_;
  BufferHazards<HostEventPtr> hazards_;
};

inline std::shared_ptr<HostBuffer> AsHost(const BufferPtr& buffer) {
  return std::static_pointer_cast<HostBuffer>(buffer);
}

}  // namespace distarray

#endif  // DISTARRAY_SERVER_HOST_HOST_BUFFER_H_
