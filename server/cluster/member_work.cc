#include "server/cluster/member_work.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/checked.h"
#include "common/status_macros.h"
#include "server/kernels/elementwise_loop.h"
#include "server/kernels/elementwise_result.h"
#include "server/kernels/reduce_ops.h"

namespace distarray::cluster {
namespace {

absl::Status OutOfBuffer(const char* what) {
  return absl::InternalError(absl::StrCat("cluster message: ", what, " lies outside its buffer"));
}

// Whether `box` lies within the dense C-order `shape` (an empty box with a non-empty shape: the
// whole shape), and `shape` within `buffer_bytes` of `dtype` (-1: no buffer to check): what a
// backend's box copy trusts.
bool BoxFits(DType dtype, const BufferBox& box, int64_t buffer_bytes) {
  const bool whole = box.box.empty();
  if ((!whole && box.box.size() != box.shape.size()) || box.shape.size() > kMaxRank) return false;
  int64_t elements = 1;
  for (size_t d = 0; d < box.shape.size(); ++d) {
    const int64_t extent = box.shape[d];
    std::optional<int64_t> next = extent >= 0 ? MulOrNull(elements, extent) : std::nullopt;
    if (!next || (!whole && box.box[d].count < 0)) return false;
    elements = *next;
    if (whole) continue;
    const Range& r = box.box[d];
    if (r.count == 0) continue;
    const std::optional<int64_t> span = MulOrNull(r.count - 1, r.step);
    const std::optional<int64_t> last = span ? AddOrNull(r.start, *span) : std::nullopt;
    if (!last || r.start < 0 || r.start >= extent || *last < 0 || *last >= extent) return false;
  }
  const std::optional<int64_t> bytes = MulOrNull(elements, DTypeSize(dtype));
  return bytes && (buffer_bytes < 0 || *bytes <= buffer_bytes);
}

// The lowest and highest element offsets `box` reaches from its offset; false when the box is
// empty (*empty set) or the arithmetic overflows.
bool StridedExtent(const StridedBox& box, int64_t* low, int64_t* high, bool* empty) {
  *low = *high = box.offset;
  *empty = false;
  for (int d = 0; d < box.rank; ++d) {
    if (box.count[d] <= 0) {
      *empty = true;
      return true;
    }
    const std::optional<int64_t> reach = MulOrNull(box.count[d] - 1, box.stride[d]);
    if (!reach) return false;
    int64_t& end = *reach >= 0 ? *high : *low;
    const std::optional<int64_t> moved = AddOrNull(end, *reach);
    if (!moved) return false;
    end = *moved;
  }
  return true;
}

// The elements of `box`, or nullopt when the count overflows.
std::optional<int64_t> CheckedSize(const StridedBox& box) {
  int64_t n = 1;
  for (int d = 0; d < box.rank; ++d) {
    const std::optional<int64_t> next =
        box.count[d] >= 0 ? MulOrNull(n, box.count[d]) : std::nullopt;
    if (!next) return std::nullopt;
    n = *next;
  }
  return n;
}

// Whether element offsets [low, high] of `element` bytes lie in `buffer`.
bool SpanFits(int64_t low, int64_t high, int64_t element, const BufferPtr& buffer) {
  const std::optional<int64_t> end = AddOrNull(high, 1);
  const std::optional<int64_t> bytes = end ? MulOrNull(*end, element) : std::nullopt;
  return low >= 0 && bytes && *bytes <= buffer->bytes();
}

// Whether every element a strided view reads, for `n` outputs of `element` bytes, lies in
// `buffer` (an elementwise operand; `contiguous`: elements 0 .. n-1).
bool ViewFits(const StridedBox& view, bool contiguous, int64_t n, int64_t element,
              const BufferPtr& buffer) {
  if (n < 0) return false;
  if (n == 0) return true;
  if (contiguous) return SpanFits(0, n - 1, element, buffer);
  // Output i reads BoxOffset(view, i): past the view's own elements it would leave the box.
  const std::optional<int64_t> elements = CheckedSize(view);
  if (!elements || n > *elements) return false;
  int64_t low = 0, high = 0;
  bool empty = false;
  if (!StridedExtent(view, &low, &high, &empty)) return false;
  return empty || SpanFits(low, high, element, buffer);
}

// Whether a reduction's reads (base + kept + reduced offsets) lie in `src` of `element` bytes.
bool ReduceReadsFit(const ReduceGeometry& g, int64_t element, const BufferPtr& src) {
  int64_t kept_low, kept_high, reduced_low, reduced_high;
  bool kept_empty, reduced_empty;
  if (!StridedExtent(g.kept, &kept_low, &kept_high, &kept_empty) ||
      !StridedExtent(g.reduced, &reduced_low, &reduced_high, &reduced_empty)) {
    return false;
  }
  if (kept_empty || reduced_empty) return true;
  const std::optional<int64_t> low = AddOrNull(g.base, kept_low);
  const std::optional<int64_t> high = AddOrNull(g.base, kept_high);
  const std::optional<int64_t> lowest = low ? AddOrNull(*low, reduced_low) : std::nullopt;
  const std::optional<int64_t> highest = high ? AddOrNull(*high, reduced_high) : std::nullopt;
  return lowest && highest && SpanFits(*lowest, *highest, element, src);
}

}  // namespace

absl::StatusOr<BufferPtr> MemberWork::Lookup(uint64_t handle, bool optional) const {
  if (handle == 0 && optional) return BufferPtr();
  absl::MutexLock lock(&mu_);
  auto it = buffers_.find(handle);
  if (it == buffers_.end()) {
    return absl::InternalError(absl::StrCat("buffer handle ", handle, " is unknown on this node"));
  }
  return it->second;
}

absl::StatusOr<BufferBox> MemberWork::Lookup(DType dtype, const wire::BufferBox& box) const {
  BufferBox out;
  ASSIGN_OR_RETURN(out.buffer, Lookup(box.buffer()));
  out.shape.assign(box.shape().begin(), box.shape().end());
  ASSIGN_OR_RETURN(out.box, FromWire(box.box()));
  // One range per axis (BoxFits alone would take an empty box as the whole shape).
  if (out.box.size() != out.shape.size() || !BoxFits(dtype, out, out.buffer->bytes())) {
    return OutOfBuffer("a box");
  }
  return out;
}

absl::StatusOr<BoxCopy> MemberWork::Lookup(DType dtype, const wire::BoxCopy& copy) const {
  BoxCopy out;
  ASSIGN_OR_RETURN(out.src, Lookup(dtype, copy.src()));
  ASSIGN_OR_RETURN(out.dst, Lookup(dtype, copy.dst()));
  ASSIGN_OR_RETURN(out.combine, CombineFromWire(copy.combine()));
  if (out.src.box.size() != out.dst.box.size()) return OutOfBuffer("a copy's boxes");
  for (size_t d = 0; d < out.src.box.size(); ++d) {
    if (out.src.box[d].count != out.dst.box[d].count) return OutOfBuffer("a copy's boxes");
  }
  return out;
}

absl::StatusOr<uint64_t> MemberWork::Allocate(const wire::Allocate& request) {
  if (request.device() < 0 || request.device() >= backend_.device_count()) {
    return absl::InternalError(absl::StrCat("device ", request.device(), " is not on this node"));
  }
  ASSIGN_OR_RETURN(BufferPtr buffer, backend_.Allocate(request.device(), request.bytes()));
  absl::MutexLock lock(&mu_);
  const uint64_t handle = next_handle_++;
  buffers_.emplace(handle, std::move(buffer));
  return handle;
}

absl::Status MemberWork::Run(const wire::Elementwise& request) {
  ASSIGN_OR_RETURN(ElementwiseOpId op, ElementwiseOpFromWire(request.op()));
  ASSIGN_OR_RETURN(DType compute, DTypeFromWire(request.compute()));
  ASSIGN_OR_RETURN(DType storage, DTypeFromWire(request.storage()));
  ASSIGN_OR_RETURN(BufferPtr out, Lookup(request.out()));
  std::vector<ElementwiseArg> args(request.args_size());
  for (int i = 0; i < request.args_size(); ++i) {
    const wire::ElementwiseArg& arg = request.args(i);
    ASSIGN_OR_RETURN(args[i].buffer, Lookup(arg.buffer(), /*optional=*/true));
    ASSIGN_OR_RETURN(args[i].view, FromWire(arg.view()));
    args[i].contiguous = arg.contiguous();
    ASSIGN_OR_RETURN(args[i].scalar, FromWire(arg.scalar()));
    // Operands are stored in `storage` (where's condition in bool).
    const int64_t element =
        DTypeSize(op == ElementwiseOpId::kWhere && i == 0 ? DType::kBool : storage);
    if (args[i].buffer != nullptr &&
        !ViewFits(args[i].view, args[i].contiguous, request.n(), element, args[i].buffer)) {
      return OutOfBuffer("an elementwise operand");
    }
  }
  // The op's own arity and dtypes, as the engine checked them: a kernel reads that many
  // operands and writes its result dtype (bool for a comparison), or `storage` for a result of
  // the compute dtype stored in 16 bits.
  const std::optional<DType> result = ElementwiseResultDType(op, compute);
  const bool half_storage =
      (storage == DType::kFloat16 || storage == DType::kBFloat16) && compute == DType::kFloat32;
  if (!result || static_cast<int>(args.size()) != ArityOf(op) ||
      (storage != compute && !half_storage)) {
    return absl::InternalError("cluster message malformed: an elementwise op's operands");
  }
  const DType written = *result == compute ? storage : *result;
  if (!ViewFits(StridedBox{}, /*contiguous=*/true, request.n(), DTypeSize(written), out)) {
    return OutOfBuffer("an elementwise result");
  }
  return backend_.Elementwise(op, compute, storage, out, request.n(), args);
}

absl::Status MemberWork::Run(const wire::Reduce& request) {
  ASSIGN_OR_RETURN(ReduceKind kind, ReduceKindFromWire(request.kind()));
  ASSIGN_OR_RETURN(DType in, DTypeFromWire(request.in()));
  ASSIGN_OR_RETURN(DType storage, DTypeFromWire(request.storage()));
  ASSIGN_OR_RETURN(BufferPtr src, Lookup(request.src()));
  ASSIGN_OR_RETURN(ReduceGeometry geometry, FromWire(request.geometry()));
  ASSIGN_OR_RETURN(BufferPtr dst, Lookup(request.dst()));
  ASSIGN_OR_RETURN(BufferPtr extreme, Lookup(request.extreme(), /*optional=*/true));
  // The reads, `extreme`, and the outputs in the kind's result dtype (argmax's int64, all's
  // bool), stored in `storage` when that is the input's (16-bit floats reduced in float32).
  const bool half_storage =
      (storage == DType::kFloat16 || storage == DType::kBFloat16) && in == DType::kFloat32;
  if (storage != in && !half_storage) {
    return absl::InternalError("cluster message malformed: a reduction's dtypes");
  }
  const DType result = ReduceResultDType(kind, in);
  const DType written = result == in ? storage : result;
  const std::optional<int64_t> outputs = CheckedSize(geometry.kept);
  if (!outputs || !CheckedSize(geometry.reduced) || !CheckedSize(geometry.index)) {
    return OutOfBuffer("a reduction's geometry");
  }
  if (!ReduceReadsFit(geometry, DTypeSize(storage), src) ||
      !ViewFits(StridedBox{}, true, *outputs, DTypeSize(written), dst) ||
      (extreme != nullptr &&
       !ViewFits(StridedBox{}, true, *outputs, DTypeSize(storage), extreme))) {
    return OutOfBuffer("a reduction");
  }
  return backend_.Reduce(kind, in, storage, src, geometry, dst, request.scale(), extreme);
}

absl::Status MemberWork::Run(const wire::Sort& request) {
  ASSIGN_OR_RETURN(DType dtype, DTypeFromWire(request.dtype()));
  SortRuns sort;
  ASSIGN_OR_RETURN(sort.keys_in, Lookup(request.keys_in()));
  ASSIGN_OR_RETURN(sort.keys_out, Lookup(request.keys_out(), true));
  ASSIGN_OR_RETURN(sort.indices_out, Lookup(request.indices_out(), true));
  ASSIGN_OR_RETURN(sort.scratch, Lookup(request.scratch(), true));
  sort.lines = request.lines();
  sort.length = request.length();
  sort.index_base = request.index_base();
  sort.descending = request.descending();
  sort.zeros_equal = request.zeros_equal();
  if (!SortRunsFit(dtype, sort)) return OutOfBuffer("a sort");
  return backend_.Sort(dtype, sort);
}

absl::Status MemberWork::Run(const wire::Scan& request) {
  ASSIGN_OR_RETURN(DType dtype, DTypeFromWire(request.dtype()));
  ScanLines scan;
  ASSIGN_OR_RETURN(scan.in, Lookup(request.in()));
  ASSIGN_OR_RETURN(scan.out, Lookup(request.out()));
  ASSIGN_OR_RETURN(scan.carry, Lookup(request.carry(), true));
  ASSIGN_OR_RETURN(scan.scratch, Lookup(request.scratch(), true));
  scan.outer = request.outer();
  scan.length = request.length();
  scan.inner = request.inner();
  scan.product = request.product();
  if (!ScanLinesFit(dtype, scan)) return OutOfBuffer("a scan");
  return backend_.Scan(dtype, scan);
}

absl::Status MemberWork::Run(const wire::Merge& request) {
  ASSIGN_OR_RETURN(DType dtype, DTypeFromWire(request.dtype()));
  MergeRuns merge;
  ASSIGN_OR_RETURN(merge.a_keys, Lookup(request.a_keys()));
  ASSIGN_OR_RETURN(merge.a_indices, Lookup(request.a_indices(), true));
  ASSIGN_OR_RETURN(merge.b_keys, Lookup(request.b_keys()));
  ASSIGN_OR_RETURN(merge.b_indices, Lookup(request.b_indices(), true));
  ASSIGN_OR_RETURN(merge.out_keys, Lookup(request.out_keys()));
  ASSIGN_OR_RETURN(merge.out_indices, Lookup(request.out_indices(), true));
  ASSIGN_OR_RETURN(merge.scratch, Lookup(request.scratch(), true));
  merge.a_count = request.a_count();
  merge.b_count = request.b_count();
  merge.descending = request.descending();
  merge.zeros_equal = request.zeros_equal();
  if (!MergeRunsFit(dtype, merge)) return OutOfBuffer("a merge");
  return backend_.Merge(dtype, merge);
}

absl::Status MemberWork::Run(const wire::CsrBlock& request) {
  ASSIGN_OR_RETURN(DType dtype, DTypeFromWire(request.dtype()));
  CsrProduct block;
  ASSIGN_OR_RETURN(block.indptr, Lookup(request.indptr()));
  ASSIGN_OR_RETURN(block.indices, Lookup(request.indices()));
  ASSIGN_OR_RETURN(block.data, Lookup(request.data()));
  ASSIGN_OR_RETURN(block.x, Lookup(request.x(), true));
  ASSIGN_OR_RETURN(block.y, Lookup(request.y()));
  ASSIGN_OR_RETURN(block.index_dtype, DTypeFromWire(request.index_dtype()));
  block.rows = request.rows();
  block.cols = request.cols();
  block.k = request.k();
  block.capacity = request.capacity();
  if (!CsrBlockFits(dtype, block, !request.to_dense())) return OutOfBuffer("a CSR block");
  return request.to_dense() ? backend_.CsrToDense(dtype, block) : backend_.CsrMatmul(dtype, block);
}

absl::Status MemberWork::Run(const wire::Factorize& request) {
  ASSIGN_OR_RETURN(DType dtype, DTypeFromWire(request.dtype()));
  if (request.kind() < 0 || request.kind() > static_cast<int>(Factorization::kSlogdet)) {
    return absl::InternalError("cluster message malformed: factorization kind");
  }
  DenseFactorization f;
  f.kind = static_cast<Factorization>(request.kind());
  f.batch = request.batch();
  f.m = request.m();
  f.n = request.n();
  f.nrhs = request.nrhs();
  f.upper = request.upper();
  f.full_matrices = request.full_matrices();
  f.compute_uv = request.compute_uv();
  f.det = request.det();
  ASSIGN_OR_RETURN(f.a, Lookup(request.a()));
  ASSIGN_OR_RETURN(f.b, Lookup(request.b(), true));
  ASSIGN_OR_RETURN(f.out0, Lookup(request.out0(), true));
  ASSIGN_OR_RETURN(f.out1, Lookup(request.out1(), true));
  ASSIGN_OR_RETURN(f.out2, Lookup(request.out2(), true));
  ASSIGN_OR_RETURN(f.info, Lookup(request.info()));
  if (!DenseFactorizationFits(dtype, f)) return OutOfBuffer("a factorization");
  return backend_.Factorize(dtype, f);
}

absl::StatusOr<uint64_t> MemberWork::Execute(const wire::DeviceWork& work) {
  switch (work.work_case()) {
    case wire::DeviceWork::kAllocate:
      return Allocate(work.allocate());
    case wire::DeviceWork::kFillConstant: {
      const wire::FillConstant& fill = work.fill_constant();
      ASSIGN_OR_RETURN(DType dtype, DTypeFromWire(fill.dtype()));
      ASSIGN_OR_RETURN(BufferBox dst, Lookup(dtype, fill.dst()));
      ASSIGN_OR_RETURN(Scalar value, FromWire(fill.value()));
      RETURN_IF_ERROR(backend_.FillConstant(dtype, dst, value));
      return 0;
    }
    case wire::DeviceWork::kFillGenerated: {
      const wire::FillGenerated& fill = work.fill_generated();
      ASSIGN_OR_RETURN(DType dtype, DTypeFromWire(fill.dtype()));
      ASSIGN_OR_RETURN(BufferPtr dst, Lookup(fill.dst()));
      const Shape shape(fill.global_shape().begin(), fill.global_shape().end());
      ASSIGN_OR_RETURN(Box box, FromWire(fill.chunk_box()));
      ASSIGN_OR_RETURN(Generator generator, FromWire(fill.generator()));
      // The chunk's box lies in the global shape, and its elements fill `dst` densely.
      if (!BoxFits(dtype, BufferBox{nullptr, shape, box}, /*buffer_bytes=*/-1)) {
        return OutOfBuffer("a generated fill's box");
      }
      Shape counts;
      for (const Range& r : box) counts.push_back(r.count);
      if (!BoxFits(dtype, BufferBox{dst, counts, Box()}, dst->bytes())) {
        return OutOfBuffer("a generated fill");
      }
      RETURN_IF_ERROR(backend_.FillGenerated(dtype, dst, shape, box, generator));
      return 0;
    }
    case wire::DeviceWork::kCopy: {
      ASSIGN_OR_RETURN(DType dtype, DTypeFromWire(work.copy().dtype()));
      std::vector<BoxCopy> copies(work.copy().copies_size());
      for (size_t i = 0; i < copies.size(); ++i) {
        ASSIGN_OR_RETURN(copies[i], Lookup(dtype, work.copy().copies(i)));
      }
      RETURN_IF_ERROR(backend_.Copy(dtype, copies));
      return 0;
    }
    case wire::DeviceWork::kElementwise:
      RETURN_IF_ERROR(Run(work.elementwise()));
      return 0;
    case wire::DeviceWork::kCast: {
      const wire::Cast& cast = work.cast();
      ASSIGN_OR_RETURN(DType from, DTypeFromWire(cast.from()));
      ASSIGN_OR_RETURN(DType to, DTypeFromWire(cast.to()));
      ASSIGN_OR_RETURN(BufferPtr src, Lookup(cast.src()));
      ASSIGN_OR_RETURN(BufferPtr dst, Lookup(cast.dst()));
      if (!ViewFits(StridedBox{}, true, cast.n(), DTypeSize(from), src) ||
          !ViewFits(StridedBox{}, true, cast.n(), DTypeSize(to), dst)) {
        return OutOfBuffer("a cast");
      }
      RETURN_IF_ERROR(backend_.Cast(from, to, src, dst, cast.n()));
      return 0;
    }
    case wire::DeviceWork::kReduce:
      RETURN_IF_ERROR(Run(work.reduce()));
      return 0;
    case wire::DeviceWork::kGemm: {
      const wire::Gemm& gemm = work.gemm();
      ASSIGN_OR_RETURN(DType dtype, DTypeFromWire(gemm.dtype()));
      ASSIGN_OR_RETURN(BufferPtr a, Lookup(gemm.a()));
      ASSIGN_OR_RETURN(BufferPtr b, Lookup(gemm.b()));
      ASSIGN_OR_RETURN(BufferPtr c, Lookup(gemm.c()));
      const GemmShape shape{.m = gemm.m(),
                            .n = gemm.n(),
                            .k = gemm.k(),
                            .batch = gemm.batch(),
                            .stride_a = gemm.stride_a(),
                            .stride_b = gemm.stride_b(),
                            .stride_c = gemm.stride_c(),
                            .symmetric_a = gemm.symmetric_a()};
      const int64_t size = DTypeSize(dtype);
      if (!GemmFits(shape, a->bytes() / size, b->bytes() / size, c->bytes() / size)) {
        return OutOfBuffer("a GEMM");
      }
      RETURN_IF_ERROR(backend_.Gemm(dtype, a, b, c, shape, gemm.allow_tf32()));
      return 0;
    }
    case wire::DeviceWork::kSort:
      RETURN_IF_ERROR(Run(work.sort()));
      return 0;
    case wire::DeviceWork::kScan:
      RETURN_IF_ERROR(Run(work.scan()));
      return 0;
    case wire::DeviceWork::kMerge:
      RETURN_IF_ERROR(Run(work.merge()));
      return 0;
    case wire::DeviceWork::kSearchSorted: {
      const wire::SearchSorted& search = work.search_sorted();
      ASSIGN_OR_RETURN(DType dtype, DTypeFromWire(search.dtype()));
      SearchRuns runs;
      ASSIGN_OR_RETURN(runs.sorted, Lookup(search.sorted()));
      ASSIGN_OR_RETURN(runs.values, Lookup(search.values()));
      ASSIGN_OR_RETURN(runs.out, Lookup(search.out()));
      runs.sorted_count = search.sorted_count();
      runs.count = search.count();
      runs.right = search.right();
      if (!SearchRunsFit(dtype, runs)) return OutOfBuffer("a search");
      RETURN_IF_ERROR(backend_.SearchSorted(dtype, runs));
      return 0;
    }
    case wire::DeviceWork::kCsr:
      RETURN_IF_ERROR(Run(work.csr()));
      return 0;
    case wire::DeviceWork::kFactorize:
      RETURN_IF_ERROR(Run(work.factorize()));
      return 0;
    case wire::DeviceWork::kSendBox: {
      const wire::SendBox& send = work.send_box();
      ASSIGN_OR_RETURN(DType dtype, DTypeFromWire(send.dtype()));
      ASSIGN_OR_RETURN(BufferBox src, Lookup(dtype, send.src()));
      RETURN_IF_ERROR(data_plane_.Send(backend_, dtype, src, send.peer_rank(), send.tag()));
      return 0;
    }
    case wire::DeviceWork::kReceiveBox: {
      const wire::ReceiveBox& receive = work.receive_box();
      ASSIGN_OR_RETURN(DType dtype, DTypeFromWire(receive.dtype()));
      ASSIGN_OR_RETURN(BufferBox dst, Lookup(dtype, receive.dst()));
      ASSIGN_OR_RETURN(Combine combine, CombineFromWire(receive.combine()));
      RETURN_IF_ERROR(
          data_plane_.Receive(backend_, dtype, dst, combine, receive.peer_rank(), receive.tag()));
      return 0;
    }
    case wire::DeviceWork::WORK_NOT_SET:
      break;
  }
  return absl::InternalError("cluster message malformed: no device work");
}

void MemberWork::Free(absl::Span<const uint64_t> handles) {
  absl::MutexLock lock(&mu_);
  for (uint64_t handle : handles) buffers_.erase(handle);
}

absl::Status MemberWork::Write(uint64_t handle, int64_t offset, const std::string& data) {
  ASSIGN_OR_RETURN(BufferPtr buffer, Lookup(handle));
  const std::optional<int64_t> end = AddOrNull(offset, static_cast<int64_t>(data.size()));
  if (offset < 0 || !end || *end > buffer->bytes()) {
    return absl::InternalError("a write lies outside its buffer");
  }
  return backend_.WriteFromHost(buffer, offset, data.data(), static_cast<int64_t>(data.size()));
}

absl::StatusOr<std::string> MemberWork::Read(uint64_t handle, int64_t offset, int64_t bytes) {
  ASSIGN_OR_RETURN(BufferPtr buffer, Lookup(handle));
  const std::optional<int64_t> end = AddOrNull(offset, bytes);
  if (offset < 0 || bytes < 0 || !end || *end > buffer->bytes()) {
    return absl::InternalError("a read lies outside its buffer");
  }
  std::string out(static_cast<size_t>(bytes), '\0');
  ASSIGN_OR_RETURN(std::unique_ptr<PendingRead> read,
                   backend_.ReadToHost(buffer, offset, bytes, out.data()));
  RETURN_IF_ERROR(read->Wait());
  return out;
}

int64_t MemberWork::live_buffers() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(buffers_.size());
}

}  // namespace distarray::cluster
