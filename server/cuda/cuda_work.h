// One function per op of DeviceOps: what the op enqueues on a stream, and on which buffers. The
// eager backend submits a CudaWork after the hazards of its buffers (CudaBackend::Submit); a
// recording captures it on the device's capture stream (CudaGraphRecording::Submit). Neither
// knows the ops; the ops do not know which of the two runs them.
#ifndef DISTARRAY_SERVER_CUDA_CUDA_WORK_H_
#define DISTARRAY_SERVER_CUDA_CUDA_WORK_H_

#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/backend/device_ops.h"
#include "server/cuda/cuda_buffer.h"
#include "server/cuda/cuda_device.h"

namespace distarray {

struct CudaWork {
  int device = 0;                   // whose stream runs it
  std::vector<CudaBuffer*> reads;   // buffers of `device` it reads
  std::vector<CudaBuffer*> writes;  // and writes
  // Enqueues the work on `stream` (of `device`, current when called). Called once, under
  // CudaDevices::enqueue_mu, while the arguments the work was made from are still alive.
  absl::AnyInvocable<absl::Status(cudaStream_t stream)> enqueue;
};

namespace cuda {

CudaWork FillConstantWork(DType dtype, const BufferBox& dst, const Scalar& value);
CudaWork FillGeneratedWork(DType dtype, const BufferPtr& dst, const Shape& global_shape,
                           const Box& chunk_box, const Generator& generator);
// A copy whose source and destination are on one device.
CudaWork SameDeviceCopyWork(DType dtype, const BoxCopy& copy);
CudaWork ElementwiseWork(const CudaDevices& devices, ElementwiseOpId op, DType compute,
                         DType storage, const BufferPtr& out, int64_t n,
                         absl::Span<const ElementwiseArg> args);
CudaWork CastWork(const CudaDevices& devices, DType from, DType to, const BufferPtr& src,
                  const BufferPtr& dst, int64_t n);
CudaWork ReduceWork(const CudaDevices& devices, ReduceKind kind, DType in, DType storage,
                    const BufferPtr& src, const ReduceGeometry& geometry, const BufferPtr& dst,
                    double scale, const BufferPtr& extreme);
// INTERNAL for a dtype without an order or runs that do not fit their buffers.
absl::StatusOr<CudaWork> SortWork(DType dtype, const SortRuns& sort);
absl::StatusOr<CudaWork> MergeWork(DType dtype, const MergeRuns& merge);
absl::StatusOr<CudaWork> SearchSortedWork(DType dtype, const SearchRuns& search);
int64_t SortScratchBytes(DType dtype, const SortRuns& sort);
absl::StatusOr<CudaWork> ScanWork(DType dtype, const ScanLines& scan);
int64_t ScanScratchBytes(DType dtype, const ScanLines& scan);
int64_t MergeScratchBytes(DType dtype, const MergeRuns& merge);
// INTERNAL for a dtype without CSR kernels or a block that does not fit its buffers.
absl::StatusOr<CudaWork> CsrMatmulWork(DType dtype, const CsrProduct& product);
absl::StatusOr<CudaWork> CsrToDenseWork(DType dtype, const CsrProduct& block);
// INTERNAL for a dtype without a cuBLAS path or a batch that does not fit its buffers.
absl::StatusOr<CudaWork> GemmWork(const CudaDevices& devices, DType dtype, const BufferPtr& a,
                                  const BufferPtr& b, const BufferPtr& c, const GemmShape& shape,
                                  bool allow_tf32);

}  // namespace cuda
}  // namespace distarray

#endif  // DISTARRAY_SERVER_CUDA_CUDA_WORK_H_
