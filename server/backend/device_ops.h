// What can be enqueued on a set of devices: the one interface every op is written against.
// Two kinds of sink implement it:
//   - the eager Backend (backend.h), which runs the work on each device's stream after the
//     hazards of the buffers it touches;
//   - a GraphRecording (graph_recorder.h), which records the work into a replayable graph, in
//     program order per device, with no per-buffer events.
// An op never knows which one it feeds (the ops library passes the sink in OpContext). What a
// graph cannot hold is not here at all: host transfers, Synchronize and device status live on
// Backend alone, so an op that needs them cannot be handed a recording.
//
// Every call enqueues device work and returns at once (asynchronous).
#ifndef DISTARRAY_SERVER_BACKEND_DEVICE_OPS_H_
#define DISTARRAY_SERVER_BACKEND_DEVICE_OPS_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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

// A batch of GEMMs over dense row-major matrices (DeviceOps::Gemm).
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  // Elements from one matrix of the batch to the next; 0 where one matrix serves every entry.
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  // `a` (m == k, batch 1, float32 or float64) is read as the symmetric matrix its upper triangle
  // (column >= row) makes, mirrored: a symmetric product reads half the bytes
  // (MatmulOpSpec.a_symmetric). Backends refuse it (INTERNAL) for other shapes and dtypes.
  bool symmetric_a = false;
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

// One CSR block's product on its device (DeviceOps::CsrMatmul): y = A @ x, A the block (`rows` x
// `cols`, `capacity` stored entries: indptr rows + 1 int64 offsets, indices `index_dtype` columns,
// data values), x dense row-major `cols` x `k`, y dense row-major `rows` x `k`. The kernels clamp
// each row's offsets to [0, capacity] and skip columns outside [0, cols): the values come from a
// client and are never trusted to lie within the buffers. DeviceOps::CsrToDense reads the same
// fields but writes the block itself into y (`rows` x `cols`, duplicates summed; x unset, k
// unused).
struct CsrProduct {
  BufferPtr indptr, indices, data;
  BufferPtr x, y;
  DType index_dtype = DType::kInt64;
  int64_t rows = 0, cols = 0, k = 1;
  int64_t capacity = 0;
};
// Whether a CsrProduct (`product`) or a CsrToDense (not) lies within its buffers, all on one
// device.
inline bool CsrBlockFits(DType dtype, const CsrProduct& p, bool product) {
  if (p.rows < 0 || p.cols < 0 || p.k < 0 || p.capacity < 0) return false;
  if (p.index_dtype != DType::kInt32 && p.index_dtype != DType::kInt64) return false;
  const int64_t size = DTypeSize(dtype);
  const std::optional<int64_t> indptr_bytes =
      AddOrNull(p.rows, 1) ? MulOrNull(p.rows + 1, 8) : std::nullopt;
  const std::optional<int64_t> index_bytes = MulOrNull(p.capacity, DTypeSize(p.index_dtype));
  const std::optional<int64_t> data_bytes = MulOrNull(p.capacity, size);
  const std::optional<int64_t> x_elements = MulOrNull(p.cols, p.k);
  const std::optional<int64_t> y_elements = MulOrNull(p.rows, product ? p.k : p.cols);
  if (!indptr_bytes || !index_bytes || !data_bytes || !x_elements || !y_elements ||
      !MulOrNull(*x_elements, size) || !MulOrNull(*y_elements, size)) {
    return false;
  }
  if (!p.indptr || !p.indices || !p.data || !p.y || (product && !p.x)) return false;
  const int device = p.y->device();
  auto fits = [&](const BufferPtr& b, int64_t bytes) {
    return b->device() == device && b->bytes() >= bytes;
  };
  return fits(p.indptr, *indptr_bytes) && fits(p.indices, *index_bytes) &&
         fits(p.data, *data_bytes) && fits(p.y, *y_elements * size) &&
         (!product || fits(p.x, *x_elements * size));
}

// One device's sort of `lines` runs of `length` elements, each run contiguous in the dense buffer
// `keys_in` (run r at r * length): ascending with NaNs last, or descending with NaNs first (the
// exact reverse), stable. The sorted keys go to `keys_out` (NaNs as the canonical quiet NaN);
// with `indices_out` set, the int64 position each key came from within its run plus
// `index_base` (argsort; the base places a run that is one block of a longer axis), and
// `keys_out` may then be null (an argsort that needs the positions alone). `scratch` holds
// SortScratchBytes bytes (none: may be null).
struct SortRuns {
  BufferPtr keys_in;
  BufferPtr keys_out;     // null: positions only (indices_out set)
  BufferPtr indices_out;  // null: keys only
  BufferPtr scratch;
  int64_t lines = 1;
  int64_t length = 0;
  int64_t index_base = 0;
  bool descending = false;
  bool zeros_equal = false;  // -0.0 ties with +0.0 (sort_keys.h); else it sorts first
};

// Two sorted runs on one device (each as SortRuns leaves it, with the same direction) merged into
// `out_keys` (a_count + b_count elements). With indices, equal keys are ordered by index, so a
// merge of blocks sorted with their global positions as indices is stable; without, equal keys
// may come from either run. Inputs and outputs do not overlap.
struct MergeRuns {
  BufferPtr a_keys, a_indices;
  BufferPtr b_keys, b_indices;
  BufferPtr out_keys, out_indices;  // indices: all three set, or none
  BufferPtr scratch;
  int64_t a_count = 0;
  int64_t b_count = 0;
  bool descending = false;
  bool zeros_equal = false;  // as the sort that made the runs
};

// For each of `count` values, the position in the sorted run `sorted` (`sorted_count` elements,
// ascending in SortRuns' order, -0.0 equal to +0.0) where it would be inserted: before every equal
// element, or after them with `right`. Written to `out` as int64.
struct SearchRuns {
  BufferPtr sorted;
  BufferPtr values;
  BufferPtr out;
  int64_t sorted_count = 0;
  int64_t count = 0;
  bool right = false;
};
inline bool SearchRunsFit(DType dtype, const SearchRuns& search) {
  const int64_t size = DTypeSize(dtype);
  if (search.sorted_count < 0 || search.count < 0 || !search.sorted || !search.values ||
      !search.out || !MulOrNull(search.sorted_count, 8) || !MulOrNull(search.count, 8)) {
    return false;
  }
  const int device = search.out->device();
  return search.sorted->device() == device && search.values->device() == device &&
         search.sorted->bytes() >= search.sorted_count * size &&
         search.values->bytes() >= search.count * size && search.out->bytes() >= search.count * 8;
}

// Whether a sort's or merge's runs lie within its buffers, all on one device (a backend's last
// check before it hands pointers to a kernel).
inline bool SortRunsFit(DType dtype, const SortRuns& sort) {
  const std::optional<int64_t> n = MulOrNull(sort.lines, sort.length);
  const std::optional<int64_t> key_bytes = n ? MulOrNull(*n, DTypeSize(dtype)) : std::nullopt;
  const std::optional<int64_t> index_bytes = n ? MulOrNull(*n, 8) : std::nullopt;
  if (sort.lines < 0 || sort.length < 0 || !key_bytes || !index_bytes) return false;
  if (!sort.keys_in || (!sort.keys_out && !sort.indices_out)) return false;
  const int device = sort.keys_in->device();
  auto fits = [&](const BufferPtr& b, int64_t bytes) {
    return b && b->device() == device && b->bytes() >= bytes;
  };
  return fits(sort.keys_in, *key_bytes) && (!sort.keys_out || fits(sort.keys_out, *key_bytes)) &&
         (!sort.indices_out || fits(sort.indices_out, *index_bytes)) &&
         (!sort.scratch || sort.scratch->device() == device);
}
inline bool MergeRunsFit(DType dtype, const MergeRuns& merge) {
  const int64_t size = DTypeSize(dtype);
  const std::optional<int64_t> total = AddOrNull(merge.a_count, merge.b_count);
  if (merge.a_count < 0 || merge.b_count < 0 || !total || !MulOrNull(*total, 8)) return false;
  if (!merge.out_keys) return false;
  const bool indices = merge.out_indices != nullptr;
  if (indices != (merge.a_indices != nullptr) || indices != (merge.b_indices != nullptr)) {
    return false;
  }
  const int device = merge.out_keys->device();
  auto fits = [&](const BufferPtr& b, int64_t elements, int64_t element_size) {
    return b && b->device() == device && b->bytes() >= elements * element_size;
  };
  return fits(merge.a_keys, merge.a_count, size) && fits(merge.b_keys, merge.b_count, size) &&
         fits(merge.out_keys, *total, size) &&
         (!indices ||
          (fits(merge.a_indices, merge.a_count, 8) && fits(merge.b_indices, merge.b_count, 8) &&
           fits(merge.out_indices, *total, 8))) &&
         (!merge.scratch || merge.scratch->device() == device);
}

// One chunk's inclusive scan along one axis (DeviceOps::Scan): `in` and `out` are dense, `outer`
// x `length` x `inner` elements (the scanned axis in the middle; `out` may be `in`). Each of the
// outer * inner lines of `out` gets the running sums (products with `product`) of its line of
// `in`, combined with the line's element of `carry` (dense outer x inner; null: nothing), in
// ApplyCombine's arithmetic (server/kernels/ops.h): integers wrap, 16-bit floats round each step.
// `scratch` holds ScanScratchBytes bytes (none: may be null).
struct ScanLines {
  BufferPtr in, out, carry, scratch;
  int64_t outer = 1, length = 0, inner = 1;
  bool product = false;
};
inline bool ScanLinesFit(DType dtype, const ScanLines& scan) {
  if (scan.outer < 0 || scan.length < 0 || scan.inner < 0 || !scan.in || !scan.out) return false;
  const std::optional<int64_t> lines = MulOrNull(scan.outer, scan.inner);
  const std::optional<int64_t> n = lines ? MulOrNull(*lines, scan.length) : std::nullopt;
  const int64_t size = DTypeSize(dtype);
  if (!n || !MulOrNull(*n, size) || !MulOrNull(*lines, size)) return false;
  const int device = scan.out->device();
  auto fits = [&](const BufferPtr& b, int64_t elements) {
    return b->device() == device && b->bytes() >= elements * size;
  };
  return fits(scan.in, *n) && fits(scan.out, *n) && (!scan.carry || fits(scan.carry, *lines)) &&
         (!scan.scratch || scan.scratch->device() == device);
}

// A dense factorization of a stack of `batch` matrices on one device (DeviceOps::Factorize), in
// LAPACK's terms: every matrix is column-major and dense, matrix i at element i * (rows * cols)
// of its buffer. `a` holds the input (m x n) and is scratch: the op may overwrite it, and for
// some kinds leaves a result there. What each kind reads and writes:
//   kSolve:    b (n x nrhs) is replaced by x with a x = b; a by its LU factors.
//   kCholesky: a's lower triangle (upper with `upper`) is replaced by the factor; the other
//              triangle keeps what it held.
//   kQr:       a is replaced by geqrf's result (R in its upper triangle); out0 gets Q
//              (m x q, q = m with `full_matrices`, else min(m, n)), whose columns past min(m, n)
//              the caller sets to the identity's beforehand.
//   kEigh:     out0 gets the eigenvalues (n, the real dtype, ascending); with `compute_uv`, a is
//              replaced by the eigenvectors (columns). Only the lower triangle of a is read.
//   kSvd:      out0 gets S (min(m, n), the real dtype, descending); with `compute_uv`, out1 gets
//              U (m x ucols) and out2 gets V^H (vrows x n), ucols = vrows = m and n with
//              `full_matrices`, else min(m, n).
//   kSlogdet:  out0 gets sign (a's dtype) and out1 log|det| (the real dtype), one per matrix,
//              from a's LU factors (a is replaced by them); with `det`, out0 gets det instead
//              and out1 is unused.
// `info` (int32, one per matrix) gets LAPACK's info: 0, or > 0 for a singular matrix (solve),
// one not positive definite (cholesky), or no convergence (eigh, svd); kSlogdet writes 0.
enum class Factorization { kSolve, kCholesky, kQr, kEigh, kSvd, kSlogdet };
struct DenseFactorization {
  Factorization kind = Factorization::kSolve;
  int64_t batch = 1;
  int64_t m = 0, n = 0;  // each matrix of `a`: m x n (square but for kQr and kSvd)
  int64_t nrhs = 0;      // kSolve: columns of b
  bool upper = false;
  bool full_matrices = false;
  bool compute_uv = false;
  bool det = false;
  BufferPtr a, b, out0, out1, out2, info;
};

// Whether `f`'s matrices lie within its buffers, all on a's device (a backend's last check before
// it hands pointers to LAPACK or cuSOLVER).
inline bool DenseFactorizationFits(DType dtype, const DenseFactorization& f) {
  if (f.batch < 0 || f.m < 0 || f.n < 0 || f.nrhs < 0 || !f.a || !f.info) return false;
  const bool square = f.kind != Factorization::kQr && f.kind != Factorization::kSvd;
  if (square && f.m != f.n) return false;
  const int64_t size = DTypeSize(dtype);
  const int64_t real_size = IsComplex(dtype) ? size / 2 : size;
  const int device = f.a->device();
  // `count` elements per matrix, `element` bytes each.
  auto fits = [&](const BufferPtr& buffer, std::optional<int64_t> count, int64_t element) {
    const std::optional<int64_t> per = count ? MulOrNull(*count, element) : std::nullopt;
    const std::optional<int64_t> bytes = per ? MulOrNull(*per, f.batch) : std::nullopt;
    return buffer && bytes && buffer->device() == device && buffer->bytes() >= *bytes;
  };
  const int64_t k = std::min(f.m, f.n);
  if (!fits(f.a, MulOrNull(f.m, f.n), size) || !fits(f.info, 1, 4)) return false;
  switch (f.kind) {
    case Factorization::kSolve:
      return fits(f.b, MulOrNull(f.n, f.nrhs), size);
    case Factorization::kCholesky:
      return true;
    case Factorization::kQr:
      return fits(f.out0, MulOrNull(f.m, f.full_matrices ? f.m : k), size);
    case Factorization::kEigh:
      return fits(f.out0, f.n, real_size);
    case Factorization::kSvd:
      return fits(f.out0, k, real_size) &&
             (!f.compute_uv || (fits(f.out1, MulOrNull(f.m, f.full_matrices ? f.m : k), size) &&
                                fits(f.out2, MulOrNull(f.full_matrices ? f.n : k, f.n), size)));
    case Factorization::kSlogdet:
      return fits(f.out0, 1, size) && (f.det || fits(f.out1, 1, real_size));
  }
  return false;
}

class DeviceOps {
 public:
  virtual ~DeviceOps() = default;

  // Reserves `bytes` on `device`. RESOURCE_EXHAUSTED (nothing launched) when the device's limit
  // would be passed. Does not synchronize. On a recording, the memory is the recorded graph's
  // for its whole life (a fixed slot, at the same address on every replay).
  virtual absl::StatusOr<BufferPtr> Allocate(int device, int64_t bytes) = 0;

  virtual absl::Status FillConstant(DType dtype, const BufferBox& dst, const Scalar& value) = 0;
  // Fills a chunk's dense buffer with generated values; `chunk_box` places it in the array of
  // `global_shape`, since generated values depend on global linear indices.
  virtual absl::Status FillGenerated(DType dtype, const BufferPtr& dst, const Shape& global_shape,
                                     const Box& chunk_box, const Generator& generator) = 0;
  // One batch of box copies, same-device or across devices. The same-device copies apply first,
  // then the cross-device ones, each group in the order given (so an assign into a buffer
  // followed by combines from other devices composes as written). The CUDA backend runs the
  // cross-device copies of a batch in one NCCL group. A recording takes copies across devices
  // only where its recorder says it can (RecordingNeeds, graph_recorder.h).
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

  // Sorts runs of `dtype` (real or bool; SortRuns). The engine checked the buffers' sizes and
  // allocated `scratch` on their device with SortScratchBytes.
  virtual absl::Status Sort(DType dtype, const SortRuns& sort) = 0;
  virtual int64_t SortScratchBytes(DType dtype, const SortRuns& sort) const { return 0; }
  // An inclusive scan of a chunk's lines (ScanLines), `scratch` allocated on its device with
  // ScanScratchBytes (-1: the backend could not size it).
  virtual absl::Status Scan(DType dtype, const ScanLines& scan) = 0;
  virtual int64_t ScanScratchBytes(DType dtype, const ScanLines& scan) const { return 0; }
  virtual absl::Status Merge(DType dtype, const MergeRuns& merge) = 0;
  virtual int64_t MergeScratchBytes(DType dtype, const MergeRuns& merge) const { return 0; }
  virtual absl::Status SearchSorted(DType dtype, const SearchRuns& search) = 0;

  // One CSR block times a dense block (CsrProduct), or the block written out densely
  // (CsrToDense), in float32, float64, complex64 or complex128. The engine checked the
  // buffers' sizes (CsrBlockFits); a backend checks again before it hands pointers to a kernel.
  virtual absl::Status CsrMatmul(DType dtype, const CsrProduct& product) = 0;
  virtual absl::Status CsrToDense(DType dtype, const CsrProduct& block) = 0;

  // One dense factorization (DenseFactorization) of float32, float64, complex64 or complex128,
  // on a's device. Eager only: a recording refuses it (UNIMPLEMENTED), so no program holds one.
  // The engine checked the sizes; INTERNAL when the buffers do not fit, UNAVAILABLE when the
  // library (LAPACK, cuSOLVER) cannot be loaded.
  virtual absl::Status Factorize(DType /*dtype*/, const DenseFactorization& /*f*/) {
    return absl::UnimplementedError("dense factorizations run eagerly only");
  }

  // Counts `bytes` a relayout copied into `device` (reshards, mode changes and the reshards of
  // compute operands), for the daemon's metrics. A recording counts them once, when recorded.
  virtual void CountReshardBytes(int device, int64_t bytes) = 0;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_BACKEND_DEVICE_OPS_H_
