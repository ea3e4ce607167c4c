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
#include "common/box.h"
#include "common/checked.h"
#include "common/dtype.h"
#include "common/scalar.h"
#include "server/kernels/ops.h"
#include "server/kernels/reduce_ops.h"
#include "server/kernels/ufuncs.h"

namespace distarray {

// Device memory owned by a backend. Released (stream-ordered, after the work using it) when the
// last reference drops.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual int device() const = 0;
  virtual int64_t bytes() const = 0;

  // Marks the buffer as held by more than one array (a reshard's result sharing its source's
  // buffer). Never cleared: a write into an existing array copies such a buffer first.
  void MarkShared() { shared_.store(true, std::memory_order_relaxed); }
  bool shared() const { return shared_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> shared_{false};
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

// An operand of an elementwise kernel, in the op's compute dtype (`where`'s condition: bool).
// For output element i (C order over the output's dense shape) it reads buffer element
// BoxOffset(view, i), or element i when `contiguous`; a scalar when `buffer` is null. Broadcast
// axes have stride 0 in `view`.
struct ElementwiseArg {
  BufferPtr buffer;
  StridedBox view;
  bool contiguous = true;
  Scalar scalar;
};

// A batch of GEMMs over dense row-major matrices (Backend::Gemm).
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  // Elements from one matrix of the batch to the next; 0 where one matrix serves every entry.
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

// Whether `shape`'s matrices lie within buffers of `a_elements`, `b_elements` and `c_elements`
// (a backend's last check before it hands pointers to a BLAS).
inline bool GemmFits(const GemmShape& shape, int64_t a_elements, int64_t b_elements,
                     int64_t c_elements) {
  if (shape.m < 0 || shape.n < 0 || shape.k < 0 || shape.batch < 1 || shape.stride_a < 0 ||
      shape.stride_b < 0 || shape.stride_c < 0) {
    return false;
  }
  auto fits = [&](int64_t stride, int64_t rows, int64_t cols, int64_t elements) {
    const std::optional<int64_t> last = MulOrNull(stride, shape.batch - 1);
    const std::optional<int64_t> size = MulOrNull(rows, cols);
    const std::optional<int64_t> end = last && size ? AddOrNull(*last, *size) : std::nullopt;
    return end && *end <= elements;
  };
  return fits(shape.stride_a, shape.m, shape.k, a_elements) &&
         fits(shape.stride_b, shape.k, shape.n, b_elements) &&
         fits(shape.stride_c, shape.m, shape.n, c_elements) &&
         (shape.batch == 1 || shape.stride_c >= shape.m * shape.n);
}

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

class Backend {
 public:
  virtual ~Backend() = default;

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

  // Bytes the layout executor copied into `device` (reshards, mode changes and the reshards of
  // compute operands) since start, for metrics. Thread-safe.
  void CountReshardBytes(int device, int64_t bytes) {
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
  // out[i] = op(args...) for i < n, computing in `compute`; `out` holds the op's result dtype
  // for `compute` (ufunc::ResultOf). The engine validated that the op takes `compute`.
  // `storage` is the dtype the array operands (where's condition aside) are stored in, and a
  // result of the compute dtype is written in: `compute` itself, or float16/bfloat16 computed in
  // float32, each element converted on load and rounded once on store (no cast passes).
  virtual absl::Status Elementwise(ElementwiseOpId op, DType compute, DType storage,
                                   const BufferPtr& out, int64_t n,
                                   absl::Span<const ElementwiseArg> args) = 0;
  absl::Status Elementwise(ElementwiseOpId op, DType compute, const BufferPtr& out, int64_t n,
                           absl::Span<const ElementwiseArg> args) {
    return Elementwise(op, compute, compute, out, n, args);
  }
  // dst[i] = ufunc::Cast<to>(src[i]) for i < n (astype).
  virtual absl::Status Cast(DType from, DType to, const BufferPtr& src, const BufferPtr& dst,
                            int64_t n) = 0;
  // One chunk's reduction: dst (dense, geometry.outputs() elements of Reducer<kind, T>::Out)
  // from src (dtype `in`). kMean multiplies by `scale`; kArgMatch compares with `extreme`
  // (geometry.outputs() elements of `in`). `storage` is the dtype src, extreme and an output of
  // dtype `in` are stored in: `in`, or float16/bfloat16 reduced in float32 (in = float32), each
  // element converted on load and the output rounded once (no cast passes).
  virtual absl::Status Reduce(ReduceKind kind, DType in, DType storage, const BufferPtr& src,
                              const ReduceGeometry& geometry, const BufferPtr& dst, double scale,
                              const BufferPtr& extreme) = 0;
  absl::Status Reduce(ReduceKind kind, DType in, const BufferPtr& src,
                      const ReduceGeometry& geometry, const BufferPtr& dst, double scale,
                      const BufferPtr& extreme) {
    return Reduce(kind, in, in, src, geometry, dst, scale, extreme);
  }
  // c[i] = a[i] @ b[i] for i < shape.batch, over dense row-major matrices a[i] (m x k) at element
  // i * stride_a of `a`, b[i] (k x n) at i * stride_b and c[i] (m x n) at i * stride_c, of
  // float16, bfloat16 (float32 arithmetic), float32 or float64. A stride of 0 reuses one matrix
  // for every i. TF32 tensor cores only with `allow_tf32`.
  virtual absl::Status Gemm(DType dtype, const BufferPtr& a, const BufferPtr& b, const BufferPtr& c,
                            const GemmShape& shape, bool allow_tf32) = 0;
  // One product: c = a @ b.
  absl::Status Gemm(DType dtype, const BufferPtr& a, const BufferPtr& b, const BufferPtr& c,
                    int64_t m, int64_t n, int64_t k, bool allow_tf32) {
    return Gemm(
        dtype, a, b, c,
        GemmShape{.m = m, .n = n, .k = k, .stride_a = m * k, .stride_b = k * n, .stride_c = m * n},
        allow_tf32);
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
