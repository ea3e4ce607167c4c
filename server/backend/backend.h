// The backend interface: what the engine needs from a set of devices. Two implementations:
// cuda/ (the product) and host/ (N simulated devices on the CPU for CI and laptops). The engine
// never knows which one runs it. A Backend is the eager sink of DeviceOps (device_ops.h) and adds
// what only eager work has: memory and device status, host transfers, Synchronize, and the
// recorder that makes the other sink, a GraphRecording.
//
// Ordering model, the same on both: every device has one stream. A call that launches work
// enqueues it on the stream of the device holding the buffer it writes and returns at once.
// Dependencies are tracked per buffer: work waits for the last writer of every buffer it reads
// and for the last writer and all readers of every buffer it writes. Nothing waits on a whole
// device, so compute on chunks already in place overlaps transfers of the rest.
#ifndef DISTARRAY_SERVER_BACKEND_BACKEND_H_
#define DISTARRAY_SERVER_BACKEND_BACKEND_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "server/backend/device_ops.h"

namespace distarray {

struct DeviceMemory {
  std::string name;
  int64_t used_bytes = 0;
  int64_t limit_bytes = 0;
  int64_t total_bytes = 0;
  // Allocations refused by the limit or failed in the allocator since start (metrics).
  int64_t allocation_failures = 0;
};

// A device-to-host copy in flight.
class PendingRead {
 public:
  virtual ~PendingRead() = default;
  // Blocks until the bytes are in the destination given to ReadToHost.
  virtual absl::Status Wait() = 0;
};

// A device-to-host copy in flight into host memory the read owns (Backend::ReadToStaging).
class StagedRead {
 public:
  virtual ~StagedRead() = default;
  // Blocks until the bytes have arrived and returns them; they stay valid until the read is
  // destroyed.
  virtual absl::StatusOr<absl::string_view> Wait() = 0;
};

// The most bytes one ReadToStaging takes (a download slab's target size).
inline constexpr int64_t kMaxStagedReadBytes = int64_t{16} << 20;

class GraphRecorder;  // graph_recorder.h

class Backend : public DeviceOps {
 public:
  virtual absl::string_view name() const = 0;
  virtual int device_count() const = 0;
  virtual DeviceMemory memory(int device) const = 0;
  // A stable identifier of the device, for joining metrics with other exporters: the GPU UUID as
  // nvidia-smi and dcgm-exporter print it ("GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"), or a
  // made-up "host-N" for a simulated device.
  virtual std::string device_uuid(int device) const = 0;
  // OK, or UNAVAILABLE while the device is in a sticky error state (its context is unusable until
  // the process restarts). Cheap and non-blocking: probes and metrics call it.
  virtual absl::Status DeviceStatus(int /*device*/) const { return absl::OkStatus(); }
  // OK, or UNAVAILABLE when `buffer`'s contents are gone or out of reach: its device is in a
  // sticky error state, or (a cluster) the node that held it was lost, even if a new process has
  // joined in its place since. Cheap: error messages name the arrays it finds lost.
  virtual absl::Status BufferStatus(const DeviceBuffer& buffer) const {
    return DeviceStatus(buffer.device());
  }
  // The daemons serving this device space (docs/cluster.md), and which one owns `device`: the
  // leader is node 0 and owns the devices numbered first. A single daemon is one node.
  virtual int node_count() const { return 1; }
  virtual int device_node(int /*device*/) const { return 0; }

  // Bytes the layout executor copied into `device` (reshards, mode changes and the reshards of
  // compute operands) since start, for metrics. Thread-safe.
  void CountReshardBytes(int device, int64_t bytes) final {
    absl::MutexLock lock(&reshard_mu_);
    if (device < 0) return;
    if (static_cast<size_t>(device) >= reshard_bytes_.size()) reshard_bytes_.resize(device + 1);
    reshard_bytes_[device] += bytes;
  }
  int64_t reshard_bytes(int device) const {
    absl::MutexLock lock(&reshard_mu_);
    return device >= 0 && static_cast<size_t>(device) < reshard_bytes_.size()
               ? reshard_bytes_[device]
               : 0;
  }

  // Copies host bytes into `dst` at byte `offset`. `src` may be reused once this returns (the
  // bytes are staged); the device copy itself runs asynchronously.
  virtual absl::Status WriteFromHost(const BufferPtr& dst, int64_t offset, const void* src,
                                     int64_t bytes) = 0;
  // Starts copying `bytes` from `src` at byte `offset` to host memory `dst`, after the work that
  // writes `src`. `dst` must stay valid until Wait returns or the PendingRead is destroyed
  // (destruction waits for the copy, or makes it safe, so an abandoned read never writes freed
  // memory).
  virtual absl::StatusOr<std::unique_ptr<PendingRead>> ReadToHost(const BufferPtr& src,
                                                                  int64_t offset, int64_t bytes,
                                                                  void* dst) = 0;
  // The same, into host memory of the read's own, which the caller then reads in place: on the
  // GPU a page-locked staging block, so the bytes take no host copy after the device's (a
  // download sends its messages straight from it). At most kMaxStagedReadBytes.
  virtual absl::StatusOr<std::unique_ptr<StagedRead>> ReadToStaging(const BufferPtr& src,
                                                                    int64_t offset,
                                                                    int64_t bytes) = 0;

  // Blocks until all work enqueued so far on every device has finished. Returns the first
  // asynchronous error a device met (UNAVAILABLE for a device in a sticky error state).
  virtual absl::Status Synchronize() = 0;

  // Recording work into replayable graphs with device-side loops (graph_recorder.h); nullptr
  // where the backend cannot (programs then run eagerly).
  virtual GraphRecorder* graph_recorder() { return nullptr; }

 private:
  mutable absl::Mutex reshard_mu_;
  std::vector<int64_t> reshard_bytes_ ABSL_GUARDED_BY(reshard_mu_);
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_BACKEND_BACKEND_H_
