// Launchers for the compute kernels: elementwise ops, casts and reductions. Plain C++ (no Abseil)
// for nvcc; asynchronous on `stream`. Each returns cudaErrorInvalidValue for an (op, dtype) the
// kernels were not built for, which the planner never lets through.
#ifndef DISTARRAY_SERVER_CUDA_COMPUTE_KERNELS_H_
#define DISTARRAY_SERVER_CUDA_COMPUTE_KERNELS_H_

#include <cuda_runtime_api.h>

#include "common/dtype.h"
#include "common/scalar.h"
#include "common/strided_box.h"
#include "server/kernels/reduce_ops.h"
#include "server/kernels/ufuncs.h"

namespace distarray::cuda {

// One operand as the launcher takes it (device pointer or scalar).
struct DeviceArg {
  const void* data = nullptr;
  StridedBox view;
  bool contiguous = true;
  Scalar scalar;
};

// `sm_count`: the SMs of the stream's device, which sizes the grid. `storage`: the dtype array
// operands are stored in (Backend::Elementwise).
cudaError_t LaunchElementwise(ElementwiseOpId op, DType compute, DType storage, void* out,
                              int64_t n, const DeviceArg* args, int arg_count, int sm_count,
                              cudaStream_t stream);
// The per-group launchers LaunchElementwise picks from (one compiled file each).
cudaError_t LaunchUnary(ElementwiseOpId op, DType compute, DType storage, void* out, int64_t n,
                        const DeviceArg* args, int sm_count, cudaStream_t stream);
cudaError_t LaunchBinary0(ElementwiseOpId op, DType compute, DType storage, void* out, int64_t n,
                          const DeviceArg* args, int sm_count, cudaStream_t stream);
cudaError_t LaunchBinary1(ElementwiseOpId op, DType compute, DType storage, void* out, int64_t n,
                          const DeviceArg* args, int sm_count, cudaStream_t stream);
cudaError_t LaunchTernary(ElementwiseOpId op, DType compute, DType storage, void* out, int64_t n,
                          const DeviceArg* args, int sm_count, cudaStream_t stream);

cudaError_t LaunchCast(DType from, DType to, const void* src, void* dst, int64_t n, int sm_count,
                       cudaStream_t stream);

// `scratch` (device memory of `scratch_bytes`, more than kReduceTicketBytes) holds partial results
// when one output's reduction is split over several blocks; the launcher sizes the split to fit
// it. Its first kReduceTicketBytes are per-output counters that must be zero before the first
// launch (cuda::DeviceBlock::AllocateZeroed) and that every launch leaves zero. Launches sharing a
// scratch must be ordered (one stream).
constexpr int64_t kReduceTicketBytes = 16 << 10;
constexpr int64_t kReduceTickets = kReduceTicketBytes / sizeof(unsigned);
// `storage`: the dtype src, extreme and a dst of the compute dtype are stored in
// (Backend::Reduce).
cudaError_t LaunchReduce(ReduceKind kind, DType in, DType storage, const void* src,
                         const ReduceGeometry& g, void* dst, double scale, const void* extreme,
                         void* scratch, int64_t scratch_bytes, int sm_count, cudaStream_t stream);

}  // namespace distarray::cuda

#endif  // DISTARRAY_SERVER_CUDA_COMPUTE_KERNELS_H_
