// One function per op of DeviceOps on the host backend: the closure a simulated device's thread
// runs, and the buffers it touches. The eager backend queues it after the hazards of its buffers
// (HostBackend::Submit); a recording appends it to the graph it builds (HostGraphRecording).
#ifndef DISTARRAY_SERVER_HOST_HOST_WORK_H_
#define DISTARRAY_SERVER_HOST_HOST_WORK_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/backend/device_ops.h"
#include "server/host/host_buffer.h"

namespace distarray {

struct HostWork {
  int device = 0;                   // whose thread runs it
  std::vector<HostBuffer*> reads;   // buffers it reads
  std::vector<HostBuffer*> writes;  // and writes
  // Holds what it touches (shared pointers), so it may run after the caller let go of them.
  std::function<void()> run;
};

namespace host {

HostWork FillConstantWork(DType dtype, const BufferBox& dst, const Scalar& value);
HostWork FillGeneratedWork(DType dtype, const BufferPtr& dst, const Shape& global_shape,
                           const Box& chunk_box, const Generator& generator);
// Runs on the destination's device, as a peer copy would.
HostWork CopyWork(DType dtype, const BoxCopy& copy);
// INTERNAL (nothing queued) for an op or dtype pair the planners should not have passed.
absl::StatusOr<HostWork> ElementwiseWork(ElementwiseOpId op, DType compute, DType storage,
                                         const BufferPtr& out, int64_t n,
                                         absl::Span<const ElementwiseArg> args);
HostWork CastWork(DType from, DType to, const BufferPtr& src, const BufferPtr& dst, int64_t n);
absl::StatusOr<HostWork> ReduceWork(ReduceKind kind, DType in, DType storage, const BufferPtr& src,
                                    const ReduceGeometry& geometry, const BufferPtr& dst,
                                    double scale, const BufferPtr& extreme);
// Sort and merge (host_sort.cc); INTERNAL for a dtype without an order or runs that do not fit.
absl::StatusOr<HostWork> SortWork(DType dtype, const SortRuns& sort);
absl::StatusOr<HostWork> MergeWork(DType dtype, const MergeRuns& merge);
absl::StatusOr<HostWork> SearchSortedWork(DType dtype, const SearchRuns& search);
// A chunk's inclusive scan (host_scan.cc); INTERNAL for lines that do not fit their buffers.
absl::StatusOr<HostWork> ScanWork(DType dtype, const ScanLines& scan);
// CSR block products and densification (host_sparse.cc); INTERNAL for a dtype without them or a
// block that does not fit its buffers.
absl::StatusOr<HostWork> CsrMatmulWork(DType dtype, const CsrProduct& product);
absl::StatusOr<HostWork> CsrToDenseWork(DType dtype, const CsrProduct& block);
absl::StatusOr<HostWork> GemmWork(DType dtype, const BufferPtr& a, const BufferPtr& b,
                                  const BufferPtr& c, const GemmShape& shape);
// LAPACK's factorizations (host_linalg.cc); UNAVAILABLE where LAPACK cannot be loaded, INTERNAL
// for a dtype without a LAPACK path or matrices that do not fit their buffers.
absl::StatusOr<HostWork> FactorizeWork(DType dtype, const DenseFactorization& f);

// Where one factorization's matrices lie in host memory: FactorizeWork's buffers (f.a, f.b,
// f.out0..2, f.info), as plain pointers; those f does not use may be null.
struct FactorizationMemory {
  void* a = nullptr;
  void* b = nullptr;
  void* out0 = nullptr;
  void* out1 = nullptr;
  void* out2 = nullptr;
  int32_t* info = nullptr;
};
// FactorizeWork's body, run now on the calling thread over `memory` (f's buffer pointers are not
// read): for tests that place the matrices themselves, e.g. against a guard page.
absl::Status FactorizeInMemory(DType dtype, const DenseFactorization& f,
                               const FactorizationMemory& memory);

}  // namespace host
}  // namespace distarray

#endif  // DISTARRAY_SERVER_HOST_HOST_WORK_H_
