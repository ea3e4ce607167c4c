// The CUDA backend's compute: elementwise kernels, casts, reductions and cuBLAS GEMMs, each
// enqueued on the output's device stream after the hazards of the buffers it touches.
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/cuda/compute_kernels.h"
#include "server/cuda/cuda_buffer.h"
#include "server/cuda/cuda_status.h"

namespace distarray {
namespace {

absl::Status CublasStatus(const cuda::CublasApi& api, cublasStatus_t status,
                          absl::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  if (status == CUBLAS_STATUS_ALLOC_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": ", api.status_name(status)));
  }
  return absl::InternalError(absl::StrCat(what, ": ", api.status_name(status)));
}

}  // namespace

absl::Status CudaBackend::Elementwise(ElementwiseOpId op, DType compute, DType storage,
                                      const BufferPtr& out, int64_t n,
                                      absl::Span<const ElementwiseArg> args) {
  CudaBuffer* out_buffer = AsCuda(out);
  std::vector<CudaBuffer*> reads;
  std::vector<cuda::DeviceArg> device_args;
  for (const ElementwiseArg& arg : args) {
    cuda::DeviceArg d;
    if (arg.buffer) {
      reads.push_back(AsCuda(arg.buffer));
      d.data = AsCuda(arg.buffer)->data();
      d.view = arg.view;
      d.contiguous = arg.contiguous;
    } else {
      d.scalar = arg.scalar;
    }
    device_args.push_back(d);
  }
  return Launch(
             "Elementwise", out_buffer->device(), reads, {out_buffer},
             [&](cudaStream_t s) {
               return cuda::CudaStatus(
                   cuda::LaunchElementwise(op, compute, storage, out_buffer->data(), n,
                                           device_args.data(), static_cast<int>(device_args.size()),
                                           devices_[out_buffer->device()].sm_count, s),
                   "elementwise kernel");
             })
      .status();
}

absl::Status CudaBackend::Cast(DType from, DType to, const BufferPtr& src, const BufferPtr& dst,
                               int64_t n) {
  CudaBuffer* s = AsCuda(src);
  CudaBuffer* d = AsCuda(dst);
  return Launch("Cast", d->device(), {s}, {d},
                [&](cudaStream_t stream) {
                  return cuda::CudaStatus(cuda::LaunchCast(from, to, s->data(), d->data(), n,
                                                           devices_[d->device()].sm_count, stream),
                                          "astype kernel");
                })
      .status();
}

absl::Status CudaBackend::Reduce(ReduceKind kind, DType in, DType storage, const BufferPtr& src,
                                 const ReduceGeometry& geometry, const BufferPtr& dst, double scale,
                                 const BufferPtr& extreme) {
  CudaBuffer* s = AsCuda(src);
  CudaBuffer* d = AsCuda(dst);
  std::vector<CudaBuffer*> reads = {s};
  if (extreme) reads.push_back(AsCuda(extreme));
  const DeviceState& state = devices_[d->device()];
  return Launch("Reduce", d->device(), reads, {d},
                [&](cudaStream_t stream) {
                  return cuda::CudaStatus(
                      cuda::LaunchReduce(kind, in, storage, s->data(), geometry, d->data(), scale,
                                         extreme ? AsCuda(extreme)->data() : nullptr,
                                         state.reduce_scratch->data(),
                                         static_cast<int64_t>(state.reduce_scratch->bytes()),
                                         state.sm_count, stream),
                      "reduction kernel");
                })
      .status();
}

absl::Status CudaBackend::Gemm(DType dtype, const BufferPtr& a, const BufferPtr& b,
                               const BufferPtr& c, const GemmShape& shape, bool allow_tf32) {
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64 && !IsHalf(dtype) && !IsComplex(dtype)) {
    return absl::InternalError(absl::StrCat("gemm: no cuBLAS path for ", DTypeName(dtype)));
  }
  CudaBuffer* ca = AsCuda(a);
  CudaBuffer* cb = AsCuda(b);
  CudaBuffer* cc = AsCuda(c);
  const int64_t size = DTypeSize(dtype);
  if (!GemmFits(shape, ca->bytes() / size, cb->bytes() / size, cc->bytes() / size)) {
    return absl::InternalError("gemm: the batch does not fit its buffers");
  }
  const int64_t m = shape.m, n = shape.n, k = shape.k, batch = shape.batch;
  const int64_t stride_a = shape.stride_a, stride_b = shape.stride_b, stride_c = shape.stride_c;
  const int device = cc->device();
  cublasHandle_t handle = devices_[device].cublas->get();
  const cuda::CublasApi& api = devices_[device].cublas->api();
  const cuda::DeviceBlock& workspace = *devices_[device].cublas_workspace;
  return Launch(
             "Gemm", device, {ca, cb}, {cc},
             [&](cudaStream_t stream) -> absl::Status {
               if (m == 0 || n == 0) return absl::OkStatus();
               RETURN_IF_ERROR(
                   CublasStatus(api, api.set_stream(handle, stream), "cublasSetStream"));
               // cublasSetStream resets the handle to cuBLAS's default workspace pool; bind
               // the fixed one again, so no GEMM allocates (which a captured GEMM may not).
               RETURN_IF_ERROR(
                   CublasStatus(api, api.set_workspace(handle, workspace.data(), workspace.bytes()),
                                "cublasSetWorkspace"));
               // Row-major C = A B is column-major C^T = B^T A^T: pass b first, n and m swapped.
               // 16-bit floats multiply and accumulate in float32, complex64 in float32 parts and
               // complex128 in double parts. alpha and beta are complex, real part first: a
               // real GEMM reads just the real part, a complex one both.
               const bool f32 = dtype != DType::kFloat64 && dtype != DType::kComplex128;
               const Complex64 alpha32(1.0f, 0.0f), beta32(0.0f, 0.0f);
               const Complex128 alpha64(1.0, 0.0), beta64(0.0, 0.0);
               const cudaDataType_t type = dtype == DType::kFloat16      ? CUDA_R_16F
                                           : dtype == DType::kBFloat16   ? CUDA_R_16BF
                                           : dtype == DType::kComplex64  ? CUDA_C_32F
                                           : dtype == DType::kComplex128 ? CUDA_C_64F
                                           : f32                         ? CUDA_R_32F
                                                                         : CUDA_R_64F;
               const cublasComputeType_t compute = !f32 ? CUBLAS_COMPUTE_64F
                                                   : allow_tf32 && !IsHalf(dtype)
                                                       ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                       : CUBLAS_COMPUTE_32F;
               if (k == 0) {
                 // No products: C is zero (cuBLAS with k = 0 leaves C as beta * C).
                 return cuda::CudaStatus(cudaMemsetAsync(cc->data(), 0, cc->bytes(), stream),
                                         "gemm k=0 zero fill");
               }
               const void* alpha = f32 ? static_cast<const void*>(&alpha32) : &alpha64;
               const void* beta = f32 ? static_cast<const void*>(&beta32) : &beta64;
               if (batch == 1) {
                 return CublasStatus(api,
                                     api.gemm_ex(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, alpha,
                                                 cb->data(), type, n, ca->data(), type, k, beta,
                                                 cc->data(), type, n, compute, CUBLAS_GEMM_DEFAULT),
                                     "cublasGemmEx");
               }
               // A stride of 0 makes cuBLAS reuse one matrix for every entry (broadcasting).
               return CublasStatus(
                   api,
                   api.gemm_strided_batched_ex(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, alpha,
                                               cb->data(), type, n, stride_b, ca->data(), type, k,
                                               stride_a, beta, cc->data(), type, n, stride_c, batch,
                                               compute, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmStridedBatchedEx");
             })
      .status();
}

}  // namespace distarray
