// Scans (scan.h). A chunk whose box starts at 0 along the axis scans its lines as they are; a
// chunk further along starts each line from its carry: the combination, over the chunks that hold
// the same line earlier along the axis, of their local scans' last elements. The carries are the
// only elements that move between devices (a box copy combining into a buffer of one element per
// line); no chunk waits for another's carry to be complete, because each carry adds up local
// totals, not finished scans. A chunk that some later chunk needs a total from scans twice: once
// alone (its totals) and once from its carry; the others scan once.
#include "server/ops/scan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/kernels/reduce_ops.h"
#include "server/ops/layout.h"
#include "server/ops/reshard_planner.h"

namespace distarray {
namespace {

// Whether every chunk holds whole lines along `axis` (nothing to carry between chunks).
bool WholeLines(const IndexMap& map, const Shape& shape, int axis) {
  return std::all_of(map.begin(), map.end(), [&](const ChunkSpec& chunk) {
    return chunk.box[axis] == Range{0, 1, shape[axis]};
  });
}

// Whether `map`'s boxes all step forward by 1 and no two overlap: the chunks whose carries
// ExecuteScan pairs up (a line's elements before a chunk then lie in whole chunks before it).
bool CarriesCanPair(const IndexMap& map) {
  if (map.size() > kMaxScanCarryChunks) return false;
  for (const ChunkSpec& chunk : map) {
    for (const Range& r : chunk.box) {
      if (r.step != 1) return false;
    }
  }
  for (size_t i = 0; i < map.size(); ++i) {
    for (size_t j = i + 1; j < map.size(); ++j) {
      bool overlap = true;
      for (size_t d = 0; d < map[i].box.size() && overlap; ++d) {
        const Range& a = map[i].box[d];
        const Range& b = map[j].box[d];
        overlap = std::max(a.start, b.start) < std::min(a.start + a.count, b.start + b.count);
      }
      if (overlap) return false;
    }
  }
  return true;
}

struct Lines {
  int64_t outer = 1, length = 0, inner = 1;
};

Lines LinesOf(const Shape& shape, int axis) {
  Lines lines{.length = shape[axis]};
  for (int d = 0; d < axis; ++d) lines.outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) lines.inner *= shape[d];
  return lines;
}

// One chunk's scan: `in` (the chunk in the result dtype) to a new buffer, from `carry` if given.
absl::StatusOr<BufferPtr> ScanChunk(DeviceOps& ops, DType dtype, const BufferPtr& in,
                                    const Lines& lines, bool product, const BufferPtr& carry) {
  const int device = in->device();
  ScanLines scan{.in = in,
                 .carry = carry,
                 .outer = lines.outer,
                 .length = lines.length,
                 .inner = lines.inner,
                 .product = product};
  ASSIGN_OR_RETURN(
      scan.out, ops.Allocate(device, lines.outer * lines.length * lines.inner * DTypeSize(dtype)));
  const int64_t scratch = ops.ScanScratchBytes(dtype, scan);
  if (scratch < 0) return absl::InternalError("scan: the backend could not size its scratch");
  if (scratch > 0) {
    ASSIGN_OR_RETURN(scan.scratch, ops.Allocate(device, scratch));
  }
  RETURN_IF_ERROR(ops.Scan(dtype, scan));
  return scan.out;
}

// The part of `a` (a box along every axis, step 1) inside `b`, relative to `a`'s start; the
// scanned axis takes `along` instead.
Box RelativeIntersection(const Box& a, const Box& b, int axis, Range along) {
  Box out(a.size());
  for (size_t d = 0; d < a.size(); ++d) {
    if (static_cast<int>(d) == axis) {
      out[d] = along;
      continue;
    }
    const int64_t start = std::max(a[d].start, b[d].start);
    const int64_t end = std::min(a[d].start + a[d].count, b[d].start + b[d].count);
    out[d] = Range{start - a[d].start, 1, std::max<int64_t>(0, end - start)};
  }
  return out;
}

// Whether chunk `p` holds part of chunk `c`'s lines before it along `axis`.
bool IsBefore(const Box& p, const Box& c, int axis) {
  if (p[axis].start + p[axis].count > c[axis].start) return false;
  for (size_t d = 0; d < p.size(); ++d) {
    if (static_cast<int>(d) == axis) continue;
    if (std::max(p[d].start, c[d].start) >=
        std::min(p[d].start + p[d].count, c[d].start + c[d].count)) {
      return false;
    }
  }
  return true;
}

}  // namespace

DType ScanResultDType(DType dtype) {
  // sum's dtype rule (Reducer<kSum>::Out); the 16-bit floats, which reductions compute in
  // float32, keep their own, as NumPy's cumsum does.
  if (IsHalf(dtype)) return dtype;
  return DispatchComputeDType(dtype, [](auto tag) {
    return DTypeFor<typename Reducer<ReduceKind::kSum, decltype(tag)>::Out>();
  });
}

absl::Status PlanScan(const OpContext& context, const v1::ScanSpec& spec, const std::string& field,
                      PlannedManipulation& planned) {
  ASSIGN_OR_RETURN(ArrayPtr source, ResolveArrayOperand(context, spec.source(), field + ".source"));
  const int rank = static_cast<int>(source->shape.size());
  if (rank == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".source: a 0-d array has no axis to scan along"));
  }
  int axis = spec.axis();
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".axis: ", axis, " is out of range for an array of rank ", rank));
  }
  if (axis < 0) axis += rank;
  planned.scan = ScanPlan{.axis = axis, .product = spec.product()};

  const Shape& shape = source->shape;
  const IndexMap map = source->index_map();
  // Elements no chunk covers read as 0, but their running sums need not be: a source with such
  // gaps gets a result that covers every element (its working layout).
  ASSIGN_OR_RETURN(
      const std::optional<std::vector<int64_t>> gap,
      FindElementCoveredByNeither(shape, map, {}, kDefaultPlanWorkLimit, context.alive));
  if (gap || !(WholeLines(map, shape, axis) || CarriesCanPair(map))) {
    const std::vector<int> devices = DevicesOf(map);
    int other = -1;
    for (int d = 0; d < rank && other < 0; ++d) {
      if (d != axis && shape[d] >= 2) other = d;
    }
    planned.scan.working =
        other >= 0 ? SplitAlong(shape, other, devices) : EqualBlocksAlong(shape, axis, devices);
  }
  planned.result = {shape, ScanResultDType(source->dtype), Mode::kReplica,
                    gap ? planned.scan.working : map};
  planned.sources = {std::move(source)};
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Chunk>> ExecuteScan(const OpContext& context,
                                               const PlannedManipulation& planned) {
  DeviceOps& ops = *context.ops;
  const Array& source = *planned.sources[0];
  const ScanPlan& plan = planned.scan;
  const DType dtype = planned.result.dtype;
  const int axis = plan.axis;
  if (NumElements(source.shape) == 0) return std::vector<Chunk>{};

  std::vector<Chunk> chunks;
  if (!plan.working.empty()) {
    ASSIGN_OR_RETURN(chunks, ReadOnlyChunksIn(ops, source, plan.working, context.alive));
  } else if (source.mode == Mode::kReplica) {
    chunks = source.chunks;
  } else {
    ASSIGN_OR_RETURN(chunks,
                     Relayout(ops, source, source.index_map(), Mode::kReplica, context.alive));
  }

  // Each chunk's values in the result dtype, and which chunks hold each one's earlier elements.
  const size_t count = chunks.size();
  std::vector<BufferPtr> values(count);
  std::vector<std::vector<size_t>> before(count);
  std::vector<bool> needed_alone(count, false);
  for (size_t c = 0; c < count; ++c) {
    RETURN_IF_ERROR(context.CheckAlive());
    values[c] = chunks[c].buffer;
    if (source.dtype != dtype) {
      const int64_t n = NumElements(chunks[c].spec.box);
      ASSIGN_OR_RETURN(values[c], ops.Allocate(chunks[c].spec.device, n * DTypeSize(dtype)));
      RETURN_IF_ERROR(ops.Cast(source.dtype, dtype, chunks[c].buffer, values[c], n));
    }
    if (chunks[c].spec.box[axis].start == 0) continue;
    for (size_t p = 0; p < count; ++p) {
      if (p != c && IsBefore(chunks[p].spec.box, chunks[c].spec.box, axis)) {
        before[c].push_back(p);
        needed_alone[p] = true;
      }
    }
  }

  // Local scans: the final result of chunks that start the axis, the totals of the others.
  std::vector<BufferPtr> alone(count);
  for (size_t c = 0; c < count; ++c) {
    if (!needed_alone[c] && !before[c].empty()) continue;
    RETURN_IF_ERROR(context.CheckAlive());
    const Lines lines = LinesOf(BoxShape(chunks[c].spec.box), axis);
    ASSIGN_OR_RETURN(alone[c], ScanChunk(ops, dtype, values[c], lines, plan.product, nullptr));
  }

  std::vector<Chunk> out;
  for (size_t c = 0; c < count; ++c) {
    RETURN_IF_ERROR(context.CheckAlive());
    const ChunkSpec& spec = chunks[c].spec;
    if (before[c].empty()) {
      out.push_back(Chunk{spec, alone[c]});
      continue;
    }
    // The carry: one element per line, the identity combined with each earlier chunk's totals.
    Shape carry_shape = BoxShape(spec.box);
    carry_shape[axis] = 1;
    ASSIGN_OR_RETURN(BufferPtr carry,
                     ops.Allocate(spec.device, NumElements(carry_shape) * DTypeSize(dtype)));
    RETURN_IF_ERROR(ops.FillConstant(dtype, BufferBox{carry, carry_shape, FullBox(carry_shape)},
                                     Scalar::Int(plan.product ? 1 : 0)));
    std::vector<BoxCopy> copies;
    for (size_t p : before[c]) {
      const Box& from = chunks[p].spec.box;
      const int64_t last = from[axis].count - 1;
      copies.push_back(
          BoxCopy{.src = BufferBox{alone[p], BoxShape(from),
                                   RelativeIntersection(from, spec.box, axis, Range{last, 1, 1})},
                  .dst = BufferBox{carry, carry_shape,
                                   RelativeIntersection(spec.box, from, axis, Range{0, 1, 1})},
                  .combine = plan.product ? Combine::kMultiply : Combine::kAdd});
    }
    RETURN_IF_ERROR(ops.Copy(dtype, copies));
    const Lines lines = LinesOf(BoxShape(spec.box), axis);
    ASSIGN_OR_RETURN(BufferPtr scanned,
                     ScanChunk(ops, dtype, values[c], lines, plan.product, carry));
    out.push_back(Chunk{spec, std::move(scanned)});
  }
  if (planned.result.map == plan.working || plan.working.empty()) return out;
  Array staged;
  staged.shape = source.shape;
  staged.dtype = dtype;
  staged.mode = Mode::kReplica;
  staged.chunks = std::move(out);
  return Relayout(ops, staged, planned.result.map, Mode::kReplica, context.alive);
}

}  // namespace distarray
