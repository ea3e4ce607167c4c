// The backend interface: what the engine needs from a set of devices. Two implementations:
// cuda/ (the product) and host/ (N simulated devices on the CPU for CI and laptops). The engine
// never knows which one runs it.
//
// Ordering model, the same on both: every device has one stream. A call that launches work
// enqueues it on the stream of the device holding the buffer it writes and returns at once.
// Dependencies are tracked per buffer: work waits for the last writer of every buffer it reads
// and for the last writer and all readers of every buffer it writes. Nothing waits on a whole
// device, so compute on chunks already in place overlaps transfers of the rest.
#ifndef DISTARRAY_SERVER_BACKEND_BACKEND_H_
#define DISTARRAY_SERVER_BACKEND_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/box.h"
#include "common/dtype.h"
#include "common/scalar.h"
#include "server/kernels/ops.h"

namespace distarray {

// Device memory owned by a backend. Released (stream-ordered, after the work using it) when the
// last reference drops.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual int device() const = 0;
  virtual int64_t bytes() const = 0;
};
using BufferPtr = std::shared_ptr<DeviceBuffer>;

// A box (local coordinates) of the dense C-order array of `shape` stored in `buffer`.
struct BufferBox {
  BufferPtr buffer;
  Shape shape;
  Box box;
};

// Copy src's box into dst's box (same element count per axis), combining with what dst holds.
struct BoxCopy {
  BufferBox src;
  BufferBox dst;
  Combine combine = Combine::kAssign;
};

// An operand of an elementwise kernel: a dense buffer of n elements, or a scalar.
struct KernelOperand {
  BufferPtr buffer;  // null: use `scalar`
  Scalar scalar;
};

struct DeviceMemory {
  std::string name;
  int64_t used_bytes = 0;
  int64_t limit_bytes = 0;
  int64_t total_bytes = 0;
};

// A device-to-host copy in flight.
class PendingRead {
 public:
  virtual ~PendingRead() = default;
  // Blocks until the bytes are in the destination given to ReadToHost.
  virtual absl::Status Wait() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual absl::string_view name() const = 0;
  virtual int device_count() const = 0;
  virtual DeviceMemory memory(int device) const = 0;

  // Reserves `bytes` on `device`. RESOURCE_EXHAUSTED (nothing launched) when the device's limit
  // would be passed. Does not synchronize.
  virtual absl::StatusOr<BufferPtr> Allocate(int device, int64_t bytes) = 0;

  // The calls below enqueue device work and return at once (asynchronous).
  virtual absl::Status FillConstant(DType dtype, const BufferBox& dst, const Scalar& value) = 0;
  // Fills a chunk's dense buffer with generated values; `chunk_box` places it in the array of
  // `global_shape`, since generated values depend on global linear indices.
  virtual absl::Status FillGenerated(DType dtype, const BufferPtr& dst, const Shape& global_shape,
                                     const Box& chunk_box, const Generator& generator) = 0;
  // One batch of box copies, same-device or across devices. The same-device copies apply first,
  // then the cross-device ones, each group in the order given (so an assign into a buffer
  // followed by combines from other devices composes as written). The CUDA backend runs the
  // cross-device copies of a batch in one NCCL group.
  virtual absl::Status Copy(DType dtype, absl::Span<const BoxCopy> copies) = 0;
  // out[i] = op(a[i], b[i]) for i < n; either operand may be a scalar.
  virtual absl::Status Binary(BinaryOp op, DType dtype, const BufferPtr& out,
                              const KernelOperand& a, const KernelOperand& b, int64_t n) = 0;

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

  // Blocks until all work enqueued so far on every device has finished. Returns the first
  // asynchronous error a device met (UNAVAILABLE for a device in a sticky error state).
  virtual absl::Status Synchronize() = 0;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_BACKEND_BACKEND_H_
