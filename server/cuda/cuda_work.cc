// What each op enqueues (cuda_work.h): fills, same-device copies, elementwise kernels, casts,
// reductions and cuBLAS GEMMs.
#include "server/cuda/cuda_work.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/backend/pitched_copy.h"
#include "server/cuda/compute_kernels.h"
#include "server/cuda/cuda_status.h"
#include "server/cuda/integer_gemm.h"
#include "server/cuda/kernels.h"
#include "server/cuda/scan_kernels.h"
#include "server/cuda/sort_kernels.h"
#include "server/cuda/sparse_kernels.h"

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

namespace cuda {

CudaWork FillConstantWork(DType dtype, const BufferBox& dst, const Scalar& value) {
  CudaBuffer* buffer = AsCuda(dst.buffer);
  const StridedBox box = MakeStridedBox(dst.shape, dst.box);
  return CudaWork{buffer->device(), {}, {buffer}, [=](cudaStream_t s) {
                    return cuda::CudaStatus(
                        cuda::LaunchFillBox(dtype, buffer->data(), box, value, s), "fill kernel");
                  }};
}

CudaWork FillGeneratedWork(DType dtype, const BufferPtr& dst, const Shape& global_shape,
                           const Box& chunk_box, const Generator& generator) {
  CudaBuffer* buffer = AsCuda(dst);
  const StridedBox global = MakeStridedBox(global_shape, chunk_box);
  return CudaWork{buffer->device(), {}, {buffer}, [=](cudaStream_t s) {
                    return cuda::CudaStatus(
                        cuda::LaunchFillGenerated(dtype, buffer->data(), global, generator, s),
                        "generator kernel");
                  }};
}

CudaWork SameDeviceCopyWork(DType dtype, const BoxCopy& copy) {
  CudaBuffer* src = AsCuda(copy.src.buffer);
  CudaBuffer* dst = AsCuda(copy.dst.buffer);
  const int64_t element = DTypeSize(dtype);
  const auto src_offset = ContiguousOffset(copy.src.shape, copy.src.box);
  const auto dst_offset = ContiguousOffset(copy.dst.shape, copy.dst.box);
  const StridedBox src_box = MakeStridedBox(copy.src.shape, copy.src.box);
  const StridedBox dst_box = MakeStridedBox(copy.dst.shape, copy.dst.box);
  const int64_t bytes = NumElements(copy.src.box) * element;
  const Combine combine = copy.combine;
  // Rows at fixed pitches (a 2-D slice of a row-major array): cudaMemcpy2DAsync runs at the
  // device-copy rate, the box kernel at about half of it.
  // Rows narrower than a few cache lines are left to the kernel: the copy engine's per-row cost
  // would dominate.
  constexpr int64_t kMinPitchedRowBytes = 256;
  std::optional<PitchedCopy> pitched =
      combine == Combine::kAssign ? AsPitched(src_box, dst_box) : std::nullopt;
  if (pitched && pitched->width * element < kMinPitchedRowBytes) pitched.reset();
  return CudaWork{
      dst->device(), {src}, {dst}, [=](cudaStream_t s) {
        if (src_offset && dst_offset && combine == Combine::kAssign) {
          return cuda::CudaStatus(cudaMemcpyAsync(dst->data() + *dst_offset * element,
                                                  src->data() + *src_offset * element, bytes,
                                                  cudaMemcpyDeviceToDevice, s),
                                  "device copy");
        }
        if (pitched) {
          const PitchedCopy& p = *pitched;
          return cuda::CudaStatus(
              cudaMemcpy2DAsync(dst->data() + p.dst_offset * element, p.dst_pitch * element,
                                src->data() + p.src_offset * element, p.src_pitch * element,
                                p.width * element, p.rows, cudaMemcpyDeviceToDevice, s),
              "pitched device copy");
        }
        return cuda::CudaStatus(
            cuda::LaunchCopyBox(dtype, src->data(), src_box, dst->data(), dst_box, combine, s),
            "copy kernel");
      }};
}

CudaWork ElementwiseWork(const CudaDevices& devices, ElementwiseOpId op, DType compute,
                         DType storage, const BufferPtr& out, int64_t n,
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
  const int sm_count = devices[out_buffer->device()].sm_count;
  return CudaWork{
      out_buffer->device(),
      std::move(reads),
      {out_buffer},
      [=, device_args = std::move(device_args)](cudaStream_t s) {
        return cuda::CudaStatus(
            cuda::LaunchElementwise(op, compute, storage, out_buffer->data(), n, device_args.data(),
                                    static_cast<int>(device_args.size()), sm_count, s),
            "elementwise kernel");
      }};
}

CudaWork CastWork(const CudaDevices& devices, DType from, DType to, const BufferPtr& src,
                  const BufferPtr& dst, int64_t n) {
  CudaBuffer* s = AsCuda(src);
  CudaBuffer* d = AsCuda(dst);
  const int sm_count = devices[d->device()].sm_count;
  return CudaWork{d->device(), {s}, {d}, [=](cudaStream_t stream) {
                    return cuda::CudaStatus(
                        cuda::LaunchCast(from, to, s->data(), d->data(), n, sm_count, stream),
                        "astype kernel");
                  }};
}

CudaWork ReduceWork(const CudaDevices& devices, ReduceKind kind, DType in, DType storage,
                    const BufferPtr& src, const ReduceGeometry& geometry, const BufferPtr& dst,
                    double scale, const BufferPtr& extreme) {
  CudaBuffer* s = AsCuda(src);
  CudaBuffer* d = AsCuda(dst);
  std::vector<CudaBuffer*> reads = {s};
  if (extreme) reads.push_back(AsCuda(extreme));
  const CudaDevice* state = &devices[d->device()];
  char* extreme_data = extreme ? AsCuda(extreme)->data() : nullptr;
  return CudaWork{d->device(), std::move(reads), {d}, [=](cudaStream_t stream) {
                    return cuda::CudaStatus(
                        cuda::LaunchReduce(kind, in, storage, s->data(), geometry, d->data(), scale,
                                           extreme_data, state->reduce_scratch->data(),
                                           static_cast<int64_t>(state->reduce_scratch->bytes()),
                                           state->sm_count, stream),
                        "reduction kernel");
                  }};
}

int64_t SortScratchBytes(DType dtype, const SortRuns& sort) {
  const SortKeyCodec codec = SortKeyCodecFor(dtype);
  if (codec.bytes == 0) return 0;
  return cuda::SortScratchBytes(codec, sort.lines, sort.length, sort.indices_out != nullptr);
}

int64_t MergeScratchBytes(DType dtype, const MergeRuns& merge) {
  const SortKeyCodec codec = SortKeyCodecFor(dtype);
  if (codec.bytes == 0) return 0;
  return cuda::MergeScratchBytes(codec, merge.a_count, merge.b_count, merge.out_indices != nullptr);
}

absl::StatusOr<CudaWork> SortWork(DType dtype, const SortRuns& sort) {
  const SortKeyCodec codec = SortKeyCodecFor(dtype, sort.zeros_equal);
  if (codec.bytes == 0 || !SortRunsFit(dtype, sort) || !sort.scratch) {
    return absl::InternalError(
        absl::StrCat("sort: no sort of ", DTypeName(dtype), " over these buffers"));
  }
  CudaBuffer* in = AsCuda(sort.keys_in);
  CudaBuffer* out = sort.keys_out ? AsCuda(sort.keys_out) : nullptr;
  CudaBuffer* indices = sort.indices_out ? AsCuda(sort.indices_out) : nullptr;
  CudaBuffer* scratch = AsCuda(sort.scratch);
  std::vector<CudaBuffer*> writes = {scratch};
  if (out) writes.push_back(out);
  if (indices) writes.push_back(indices);
  SortLaunch launch{.lines = sort.lines,
                    .length = sort.length,
                    .index_base = sort.index_base,
                    .descending = sort.descending};
  return CudaWork{in->device(), {in}, std::move(writes), [=](cudaStream_t s) mutable {
                    launch.keys_in = in->data();
                    launch.keys_out = out ? out->data() : nullptr;
                    launch.indices_out =
                        indices ? reinterpret_cast<int64_t*>(indices->data()) : nullptr;
                    launch.scratch = scratch->data();
                    launch.scratch_bytes = scratch->bytes();
                    return cuda::CudaStatus(cuda::LaunchSort(codec, launch, s), "sort kernels");
                  }};
}

absl::StatusOr<CudaWork> MergeWork(DType dtype, const MergeRuns& merge) {
  const SortKeyCodec codec = SortKeyCodecFor(dtype, merge.zeros_equal);
  if (codec.bytes == 0 || !MergeRunsFit(dtype, merge) || !merge.scratch) {
    return absl::InternalError(
        absl::StrCat("merge: no merge of ", DTypeName(dtype), " over these buffers"));
  }
  auto data = [](const BufferPtr& b) { return b ? AsCuda(b)->data() : nullptr; };
  MergeLaunch launch{.a_keys = data(merge.a_keys),
                     .a_indices = reinterpret_cast<const int64_t*>(data(merge.a_indices)),
                     .b_keys = data(merge.b_keys),
                     .b_indices = reinterpret_cast<const int64_t*>(data(merge.b_indices)),
                     .out_keys = data(merge.out_keys),
                     .out_indices = reinterpret_cast<int64_t*>(data(merge.out_indices)),
                     .scratch = data(merge.scratch),
                     .scratch_bytes = merge.scratch->bytes(),
                     .a_count = merge.a_count,
                     .b_count = merge.b_count,
                     .descending = merge.descending};
  std::vector<CudaBuffer*> reads = {AsCuda(merge.a_keys), AsCuda(merge.b_keys)};
  std::vector<CudaBuffer*> writes = {AsCuda(merge.out_keys), AsCuda(merge.scratch)};
  if (merge.out_indices) {
    reads.push_back(AsCuda(merge.a_indices));
    reads.push_back(AsCuda(merge.b_indices));
    writes.push_back(AsCuda(merge.out_indices));
  }
  return CudaWork{merge.out_keys->device(), std::move(reads), std::move(writes),
                  [=](cudaStream_t s) {
                    return cuda::CudaStatus(cuda::LaunchMerge(codec, launch, s), "merge kernel");
                  }};
}

absl::StatusOr<CudaWork> SearchSortedWork(DType dtype, const SearchRuns& search) {
  const SortKeyCodec codec = SortKeyCodecFor(dtype, /*zeros_equal=*/true);
  if (codec.bytes == 0 || !SearchRunsFit(dtype, search)) {
    return absl::InternalError(
        absl::StrCat("searchsorted: no search of ", DTypeName(dtype), " over these buffers"));
  }
  CudaBuffer* sorted = AsCuda(search.sorted);
  CudaBuffer* values = AsCuda(search.values);
  CudaBuffer* out = AsCuda(search.out);
  const int64_t sorted_count = search.sorted_count, count = search.count;
  const bool right = search.right;
  return CudaWork{
      out->device(), {sorted, values}, {out}, [=](cudaStream_t s) {
        return cuda::CudaStatus(
            cuda::LaunchSearchSorted(codec, sorted->data(), sorted_count, values->data(), count,
                                     reinterpret_cast<int64_t*>(out->data()), right, s),
            "searchsorted kernel");
      }};
}

int64_t ScanScratchBytes(DType dtype, const ScanLines& scan) {
  return cuda::ScanScratchBytes(dtype, scan.outer, scan.length, scan.inner);
}

absl::StatusOr<CudaWork> ScanWork(DType dtype, const ScanLines& scan) {
  const int64_t scratch_bytes = ScanScratchBytes(dtype, scan);
  if (dtype == DType::kBool || !IsImplemented(dtype) || !ScanLinesFit(dtype, scan) ||
      scratch_bytes < 0 ||
      (scratch_bytes > 0 && (!scan.scratch || scan.scratch->bytes() < scratch_bytes))) {
    return absl::InternalError(
        absl::StrCat("scan: no scan of ", DTypeName(dtype), " over these buffers"));
  }
  CudaBuffer* in = AsCuda(scan.in);
  CudaBuffer* out = AsCuda(scan.out);
  CudaBuffer* carry = scan.carry ? AsCuda(scan.carry) : nullptr;
  CudaBuffer* scratch = scratch_bytes > 0 ? AsCuda(scan.scratch) : nullptr;
  std::vector<CudaBuffer*> reads, writes = {out};
  if (in != out) reads.push_back(in);
  if (carry) reads.push_back(carry);
  if (scratch) writes.push_back(scratch);
  const cuda::ScanLaunch launch{.scratch_bytes = scratch_bytes,
                                .outer = scan.outer,
                                .length = scan.length,
                                .inner = scan.inner,
                                .product = scan.product};
  return CudaWork{out->device(), std::move(reads), std::move(writes), [=](cudaStream_t s) {
                    cuda::ScanLaunch l = launch;
                    l.in = in->data();
                    l.out = out->data();
                    l.carry = carry ? carry->data() : nullptr;
                    l.scratch = scratch ? scratch->data() : nullptr;
                    return cuda::CudaStatus(cuda::LaunchScan(dtype, l, s), "scan kernel");
                  }};
}

namespace {

// The product (`product`) or the densification of one block.
absl::StatusOr<CudaWork> CsrWork(DType dtype, const CsrProduct& p, bool product) {
  const bool supported = dtype == DType::kFloat32 || dtype == DType::kFloat64 ||
                         dtype == DType::kComplex64 || dtype == DType::kComplex128;
  if (!supported || !CsrBlockFits(dtype, p, product)) {
    return absl::InternalError(absl::StrCat(product ? "csr matmul" : "csr to dense", ": no ",
                                            DTypeName(dtype), " block over these buffers"));
  }
  CudaBuffer* indptr = AsCuda(p.indptr);
  CudaBuffer* indices = AsCuda(p.indices);
  CudaBuffer* data = AsCuda(p.data);
  CudaBuffer* x = product ? AsCuda(p.x) : nullptr;
  CudaBuffer* y = AsCuda(p.y);
  std::vector<CudaBuffer*> reads = {indptr, indices, data};
  if (x) reads.push_back(x);
  const CsrLaunch base{dtype,  p.index_dtype, nullptr, nullptr, nullptr, p.capacity,
                       p.rows, p.cols,        p.k,     nullptr, nullptr};
  return CudaWork{y->device(), std::move(reads), {y}, [=](cudaStream_t s) {
                    CsrLaunch launch = base;
                    launch.indptr = reinterpret_cast<const int64_t*>(indptr->data());
                    launch.indices = indices->data();
                    launch.data = data->data();
                    launch.x = x ? x->data() : nullptr;
                    launch.y = y->data();
                    return cuda::CudaStatus(
                        product ? LaunchCsrMatmul(launch, s) : LaunchCsrToDense(launch, s),
                        product ? "csr matmul kernel" : "csr to dense kernel");
                  }};
}

}  // namespace

absl::StatusOr<CudaWork> CsrMatmulWork(DType dtype, const CsrProduct& product) {
  return CsrWork(dtype, product, /*product=*/true);
}

absl::StatusOr<CudaWork> CsrToDenseWork(DType dtype, const CsrProduct& block) {
  return CsrWork(dtype, block, /*product=*/false);
}

namespace {

// The device's cuBLAS handle, bound to a work's stream when the work runs.
struct CublasOnDevice {
  cublasHandle_t handle;
  const cuda::CublasApi* api;
  const cuda::DeviceBlock* workspace;

  explicit CublasOnDevice(const CudaDevice& device)
      : handle(device.cublas->get()),
        api(&device.cublas->api()),
        workspace(&*device.cublas_workspace) {}

  absl::Status Bind(cudaStream_t stream) const {
    RETURN_IF_ERROR(CublasStatus(*api, api->set_stream(handle, stream), "cublasSetStream"));
    // cublasSetStream resets the handle to cuBLAS's default workspace pool; bind the fixed one
    // again, so no call allocates (which a captured one may not).
    return CublasStatus(*api, api->set_workspace(handle, workspace->data(), workspace->bytes()),
                        "cublasSetWorkspace");
  }
};

// c = a @ b reading a's upper triangle (row-major; the lower one of the column-major view cuBLAS
// sees, which is a^T). One column of b: symv. Otherwise the row-major product is the column-major
// c^T = b^T a^T = b^T a: symm with a on the right.
absl::StatusOr<CudaWork> SymmetricGemmWork(const CudaDevices& devices, DType dtype, CudaBuffer* a,
                                           CudaBuffer* b, CudaBuffer* c, const GemmShape& shape) {
  if ((dtype != DType::kFloat32 && dtype != DType::kFloat64) || shape.m != shape.k ||
      shape.batch != 1) {
    return absl::InternalError("gemm: a symmetric a takes one square float32 or float64 matrix");
  }
  const int64_t m = shape.m, n = shape.n;
  const int device = c->device();
  const CublasOnDevice cublas(devices[device]);
  return CudaWork{
      device, {a, b}, {c}, [=](cudaStream_t stream) -> absl::Status {
        const cuda::CublasApi& api = *cublas.api;
        const cublasHandle_t handle = cublas.handle;
        if (m == 0 || n == 0) return absl::OkStatus();
        RETURN_IF_ERROR(cublas.Bind(stream));
        // One body for both dtypes: `symv` and `symm` are cuBLAS's entry points for T.
        auto product = [&](auto zero, auto symv, auto symm, const char* symv_name,
                           const char* symm_name) -> absl::Status {
          using T = decltype(zero);
          const T one = 1;
          const cublasFillMode_t upper = CUBLAS_FILL_MODE_LOWER;  // of the column-major view
          const auto* pa = reinterpret_cast<const T*>(a->data());
          const auto* pb = reinterpret_cast<const T*>(b->data());
          auto* pc = reinterpret_cast<T*>(c->data());
          if (n == 1) {
            return CublasStatus(api, symv(handle, upper, m, &one, pa, m, pb, 1, &zero, pc, 1),
                                symv_name);
          }
          return CublasStatus(
              api, symm(handle, CUBLAS_SIDE_RIGHT, upper, n, m, &one, pa, m, pb, n, &zero, pc, n),
              symm_name);
        };
        if (dtype == DType::kFloat64) {
          return product(0.0, api.dsymv, api.dsymm, "cublasDsymv", "cublasDsymm");
        }
        return product(0.0f, api.ssymv, api.ssymm, "cublasSsymv", "cublasSsymm");
      }};
}

}  // namespace

absl::StatusOr<CudaWork> GemmWork(const CudaDevices& devices, DType dtype, const BufferPtr& a,
                                  const BufferPtr& b, const BufferPtr& c, const GemmShape& shape,
                                  bool allow_tf32) {
  if (!IsImplemented(dtype)) {
    return absl::InternalError(absl::StrCat("gemm: no path for ", DTypeName(dtype)));
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
  if (shape.symmetric_a) return SymmetricGemmWork(devices, dtype, ca, cb, cc, shape);
  if (!IsFloating(dtype) && !IsComplex(dtype)) {
    // Integers and bool: our own kernel (k = 0 included: every sum is empty, so c is zeros).
    return CudaWork{device, {ca, cb}, {cc}, [=](cudaStream_t stream) -> absl::Status {
                      return cuda::CudaStatus(
                          cuda::LaunchIntegerGemm(dtype, ca->data(), cb->data(), cc->data(), m, n,
                                                  k, batch, stride_a, stride_b, stride_c, stream),
                          "integer gemm");
                    }};
  }
  const CublasOnDevice cublas(devices[device]);
  return CudaWork{
      device, {ca, cb}, {cc}, [=](cudaStream_t stream) -> absl::Status {
        const cuda::CublasApi& api = *cublas.api;
        const cublasHandle_t handle = cublas.handle;
        if (m == 0 || n == 0) return absl::OkStatus();
        RETURN_IF_ERROR(cublas.Bind(stream));
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
        return CublasStatus(api,
                            api.gemm_strided_batched_ex(
                                handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, alpha, cb->data(), type,
                                n, stride_b, ca->data(), type, k, stride_a, beta, cc->data(), type,
                                n, stride_c, batch, compute, CUBLAS_GEMM_DEFAULT),
                            "cublasGemmStridedBatchedEx");
      }};
}

}  // namespace cuda
}  // namespace distarray
