// Sorting along an axis. Each run of the axis (a line) is sorted by the backend where one chunk
// holds it whole (SortRuns); an axis split over devices is resharded so it is not, or, when the
// array is effectively one line, sorted block by block and finished by rounds of merges between
// neighbouring devices (odd-even transposition of blocks: k blocks are in order after k rounds,
// each round a merge-split in which the lower device keeps the smallest of the two blocks and the
// upper the largest). Argsort carries each element's global position through the merges, which
// also makes them stable.
#include "server/ops/sort.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/kernels/sort_keys.h"
#include "server/ops/device_gather.h"
#include "server/ops/layout.h"
#include "server/ops/reshard_planner.h"

namespace distarray {
namespace {

// A chunk's sorted keys and, for argsort, the positions they came from.
struct SortedChunk {
  BufferPtr keys;
  BufferPtr indices;  // argsort only
};

absl::StatusOr<BufferPtr> AllocateScratch(DeviceOps& ops, int device, int64_t bytes) {
  if (bytes < 0) return absl::InternalError("sort: the backend could not size its scratch");
  if (bytes == 0) return BufferPtr{};
  return ops.Allocate(device, bytes);
}

// Sorts the lines of one chunk (dense buffer of `shape`) along `plan.axis`. Lines that are not
// contiguous (an axis after the sorted one has more than one element) are gathered into
// contiguous runs first and the results scattered back, so the backend only ever sorts runs.
// An argsort keeps the sorted keys only with `keep_keys` (the merges between devices compare
// them); otherwise the positions are its whole result and the keys are never written.
absl::StatusOr<SortedChunk> SortChunk(DeviceOps& ops, DType dtype, const BufferPtr& buffer,
                                      const Shape& shape, const SortPlan& plan, int64_t index_base,
                                      bool keep_keys) {
  const int device = buffer->device();
  const int rank = static_cast<int>(shape.size());
  const int64_t n = NumElements(shape);
  const int64_t length = shape[plan.axis];
  bool contiguous = true;
  for (int d = plan.axis + 1; d < rank; ++d) contiguous = contiguous && shape[d] == 1;

  // The chunk with the sorted axis moved last, and the view that moves it back.
  BufferPtr keys_in = buffer;
  StridedBox from_runs;
  if (!contiguous) {
    std::vector<int> order;
    for (int d = 0; d < rank; ++d) {
      if (d != plan.axis) order.push_back(d);
    }
    order.push_back(plan.axis);
    const std::vector<int64_t> dense = DenseStrides(shape);
    Shape runs_shape;
    StridedBox to_runs;
    to_runs.rank = rank;
    for (int i = 0; i < rank; ++i) {
      to_runs.count[i] = shape[order[i]];
      to_runs.stride[i] = dense[order[i]];
      runs_shape.push_back(shape[order[i]]);
    }
    const std::vector<int64_t> runs_dense = DenseStrides(runs_shape);
    from_runs.rank = rank;
    for (int i = 0; i < rank; ++i) {
      from_runs.count[order[i]] = shape[order[i]];
      from_runs.stride[order[i]] = runs_dense[i];
    }
    ASSIGN_OR_RETURN(keys_in, ops.Allocate(device, n * DTypeSize(dtype)));
    RETURN_IF_ERROR(Gather(ops, dtype, buffer, n, to_runs, keys_in, n));
  }

  SortedChunk sorted;
  if (!plan.indices || keep_keys) {
    ASSIGN_OR_RETURN(sorted.keys, ops.Allocate(device, n * DTypeSize(dtype)));
  }
  if (plan.indices) {
    ASSIGN_OR_RETURN(sorted.indices, ops.Allocate(device, n * 8));
  }
  SortRuns sort{.keys_in = keys_in,
                .keys_out = sorted.keys,
                .indices_out = sorted.indices,
                .lines = n / length,
                .length = length,
                .index_base = index_base,
                .descending = plan.descending,
                .zeros_equal = plan.indices};
  ASSIGN_OR_RETURN(sort.scratch, AllocateScratch(ops, device, ops.SortScratchBytes(dtype, sort)));
  RETURN_IF_ERROR(ops.Sort(dtype, sort));
  if (contiguous) return sorted;

  auto restore = [&](const BufferPtr& runs, DType element) -> absl::StatusOr<BufferPtr> {
    ASSIGN_OR_RETURN(BufferPtr back, ops.Allocate(device, n * DTypeSize(element)));
    RETURN_IF_ERROR(Gather(ops, element, runs, n, from_runs, back, n));
    return back;
  };
  if (plan.indices) {
    ASSIGN_OR_RETURN(sorted.indices, restore(sorted.indices, DType::kInt64));
  } else {
    ASSIGN_OR_RETURN(sorted.keys, restore(sorted.keys, dtype));
  }
  return sorted;
}

std::vector<Chunk> ResultChunks(const std::vector<Chunk>& layout,
                                const std::vector<SortedChunk>& sorted, bool indices) {
  std::vector<Chunk> out;
  for (size_t c = 0; c < layout.size(); ++c) {
    out.push_back(Chunk{layout[c].spec, indices ? sorted[c].indices : sorted[c].keys});
  }
  return out;
}

// Every chunk holds whole lines: each sorts its own.
absl::StatusOr<std::vector<Chunk>> SortLines(const OpContext& context, DType dtype,
                                             const std::vector<Chunk>& chunks,
                                             const SortPlan& plan) {
  std::vector<SortedChunk> sorted;
  for (const Chunk& chunk : chunks) {
    RETURN_IF_ERROR(context.CheckAlive());
    ASSIGN_OR_RETURN(SortedChunk s,
                     SortChunk(*context.ops, dtype, chunk.buffer, BoxShape(chunk.spec.box), plan,
                               /*index_base=*/0, /*keep_keys=*/false));
    sorted.push_back(std::move(s));
  }
  return ResultChunks(chunks, sorted, plan.indices);
}

// One merge-split of neighbouring blocks `low` and `high` (sorted, on their own devices, `high`
// after `low` along the axis): both devices merge both blocks; `low` keeps the first low_count
// elements and `high` the rest. `others` are the copies of the other block, already on each side.
absl::StatusOr<SortedChunk> MergeSplitSide(DeviceOps& ops, DType dtype, const SortedChunk& low,
                                           const SortedChunk& high, int64_t low_count,
                                           int64_t high_count, bool keep_low, bool descending) {
  const int device = keep_low ? low.keys->device() : high.keys->device();
  const int64_t total = low_count + high_count;
  const bool indices = low.indices != nullptr;
  MergeRuns merge{.a_keys = low.keys,
                  .a_indices = low.indices,
                  .b_keys = high.keys,
                  .b_indices = high.indices,
                  .a_count = low_count,
                  .b_count = high_count,
                  .descending = descending,
                  .zeros_equal = indices};
  ASSIGN_OR_RETURN(merge.out_keys, ops.Allocate(device, total * DTypeSize(dtype)));
  if (indices) {
    ASSIGN_OR_RETURN(merge.out_indices, ops.Allocate(device, total * 8));
  }
  ASSIGN_OR_RETURN(merge.scratch,
                   AllocateScratch(ops, device, ops.MergeScratchBytes(dtype, merge)));
  RETURN_IF_ERROR(ops.Merge(dtype, merge));

  const int64_t offset = keep_low ? 0 : low_count;
  const int64_t count = keep_low ? low_count : high_count;
  SortedChunk kept;
  auto keep = [&](const BufferPtr& merged, DType element) -> absl::StatusOr<BufferPtr> {
    ASSIGN_OR_RETURN(BufferPtr part, ops.Allocate(device, count * DTypeSize(element)));
    RETURN_IF_ERROR(ops.Copy(
        element, {BoxCopy{FlatRun(merged, total, offset, count), FlatRun(part, count, 0, count)}}));
    return part;
  };
  ASSIGN_OR_RETURN(kept.keys, keep(merge.out_keys, dtype));
  if (indices) {
    ASSIGN_OR_RETURN(kept.indices, keep(merge.out_indices, DType::kInt64));
  }
  return kept;
}

// A copy of `block` on `device` (keys, and positions for argsort).
absl::StatusOr<SortedChunk> CopyTo(DeviceOps& ops, DType dtype, const SortedChunk& block,
                                   int64_t count, int device) {
  SortedChunk copy;
  ASSIGN_OR_RETURN(copy.keys, ops.Allocate(device, count * DTypeSize(dtype)));
  RETURN_IF_ERROR(ops.Copy(
      dtype, {BoxCopy{FlatRun(block.keys, count, 0, count), FlatRun(copy.keys, count, 0, count)}}));
  if (block.indices) {
    ASSIGN_OR_RETURN(copy.indices, ops.Allocate(device, count * 8));
    RETURN_IF_ERROR(ops.Copy(DType::kInt64, {BoxCopy{FlatRun(block.indices, count, 0, count),
                                                     FlatRun(copy.indices, count, 0, count)}}));
  }
  return copy;
}

// The array is one line split into blocks along the axis (EqualBlocksAlong), in order, one per
// device.
absl::StatusOr<std::vector<Chunk>> SortAcrossBlocks(const OpContext& context, DType dtype,
                                                    const std::vector<Chunk>& blocks,
                                                    const SortPlan& plan) {
  DeviceOps& ops = *context.ops;
  const int k = static_cast<int>(blocks.size());
  std::vector<SortedChunk> sorted;
  std::vector<int64_t> counts;
  for (const Chunk& block : blocks) {
    RETURN_IF_ERROR(context.CheckAlive());
    const Range& along = block.spec.box[plan.axis];
    ASSIGN_OR_RETURN(SortedChunk s,
                     SortChunk(ops, dtype, block.buffer, BoxShape(block.spec.box), plan,
                               /*index_base=*/along.start, /*keep_keys=*/true));
    sorted.push_back(std::move(s));
    counts.push_back(NumElements(block.spec.box));
  }
  for (int round = 0; round < k; ++round) {
    RETURN_IF_ERROR(context.CheckAlive());
    std::vector<SortedChunk> next = sorted;
    for (int low = round % 2; low + 1 < k; low += 2) {
      const int high = low + 1;
      const int low_device = blocks[low].spec.device;
      const int high_device = blocks[high].spec.device;
      ASSIGN_OR_RETURN(SortedChunk high_on_low,
                       CopyTo(ops, dtype, sorted[high], counts[high], low_device));
      ASSIGN_OR_RETURN(SortedChunk low_on_high,
                       CopyTo(ops, dtype, sorted[low], counts[low], high_device));
      ASSIGN_OR_RETURN(next[low], MergeSplitSide(ops, dtype, sorted[low], high_on_low, counts[low],
                                                 counts[high], /*keep_low=*/true, plan.descending));
      ASSIGN_OR_RETURN(next[high],
                       MergeSplitSide(ops, dtype, low_on_high, sorted[high], counts[low],
                                      counts[high], /*keep_low=*/false, plan.descending));
    }
    sorted = std::move(next);
  }
  return ResultChunks(blocks, sorted, plan.indices);
}

absl::Status CheckOrdered(const Array& array, const std::string& field) {
  if (SortKeyCodecFor(array.dtype).bytes != 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": ", DTypeName(array.dtype), " has no order; give arrays of a real dtype or bool"));
}

}  // namespace

absl::Status PlanSort(const OpContext& context, const v1::SortSpec& spec, const std::string& field,
                      PlannedManipulation& planned) {
  ASSIGN_OR_RETURN(ArrayPtr source, ResolveArrayOperand(context, spec.source(), field + ".source"));
  const int rank = static_cast<int>(source->shape.size());
  if (rank == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".source: a 0-d array has no axis to sort along"));
  }
  RETURN_IF_ERROR(CheckOrdered(*source, field + ".source"));
  int axis = spec.axis();
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".axis: ", axis, " is out of range for an array of rank ", rank));
  }
  if (axis < 0) axis += rank;
  SortPlan& plan = planned.sort;
  plan = SortPlan{.axis = axis, .descending = spec.descending(), .indices = spec.indices()};

  const Shape& shape = source->shape;
  const IndexMap map = source->index_map();
  bool whole_lines = true;
  for (const ChunkSpec& chunk : map) {
    whole_lines = whole_lines && chunk.box[axis] == Range{0, 1, shape[axis]};
  }
  // Elements no chunk covers read as 0; a sort moves values into them, so a source with such
  // gaps gets a result that covers every element (its working layout).
  ASSIGN_OR_RETURN(
      const std::optional<std::vector<int64_t>> gap,
      FindElementCoveredByNeither(shape, map, {}, kDefaultPlanWorkLimit, context.alive));
  if (!whole_lines || gap) {
    const std::vector<int> devices = DevicesOf(map);
    int other = -1;
    for (int d = 0; d < rank && other < 0; ++d) {
      if (d != axis && shape[d] >= 2) other = d;
    }
    plan.working =
        other >= 0 ? SplitAlong(shape, other, devices) : EqualBlocksAlong(shape, axis, devices);
    plan.merge_blocks = other < 0 && plan.working.size() > 1;
  }
  planned.result = {shape, plan.indices ? DType::kInt64 : source->dtype, Mode::kReplica,
                    gap ? plan.working : map};
  planned.sources = {std::move(source)};
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Chunk>> ExecuteSort(const OpContext& context,
                                               const PlannedManipulation& planned) {
  DeviceOps& ops = *context.ops;
  const Array& source = *planned.sources[0];
  const SortPlan& plan = planned.sort;
  if (plan.working.empty()) {
    if (source.mode == Mode::kReplica) return SortLines(context, source.dtype, source.chunks, plan);
    ASSIGN_OR_RETURN(std::vector<Chunk> values,
                     Relayout(ops, source, source.index_map(), Mode::kReplica, context.alive));
    return SortLines(context, source.dtype, values, plan);
  }
  ASSIGN_OR_RETURN(std::vector<Chunk> working,
                   ReadOnlyChunksIn(ops, source, plan.working, context.alive));
  std::vector<Chunk> sorted;
  if (plan.merge_blocks) {
    ASSIGN_OR_RETURN(sorted, SortAcrossBlocks(context, source.dtype, working, plan));
  } else {
    ASSIGN_OR_RETURN(sorted, SortLines(context, source.dtype, working, plan));
  }
  if (planned.result.map == plan.working) return sorted;
  Array staged;
  staged.shape = source.shape;
  staged.dtype = planned.result.dtype;
  staged.mode = Mode::kReplica;
  staged.chunks = std::move(sorted);
  return Relayout(ops, staged, planned.result.map, Mode::kReplica, context.alive);
}

absl::Status PlanSearchSorted(const OpContext& context, const v1::SearchSortedSpec& spec,
                              const std::string& field, PlannedManipulation& planned) {
  ASSIGN_OR_RETURN(ArrayPtr sorted, ResolveArrayOperand(context, spec.sorted(), field + ".sorted"));
  ASSIGN_OR_RETURN(ArrayPtr values, ResolveArrayOperand(context, spec.values(), field + ".values"));
  if (sorted->shape.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".sorted: give a 1-D array (this one has ", sorted->shape.size(), " axes)"));
  }
  RETURN_IF_ERROR(CheckOrdered(*sorted, field + ".sorted"));
  if (values->dtype != sorted->dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".values: ", DTypeName(values->dtype), " differs from sorted's ",
                     DTypeName(sorted->dtype), "; convert one (astype) so both have one dtype"));
  }
  planned.sort = SortPlan{.right = spec.right()};
  // Elements no chunk of values covers read as 0, whose position need not be 0: such a values
  // array gets a result split along its first axis, which covers every element.
  const IndexMap map = values->index_map();
  ASSIGN_OR_RETURN(
      const std::optional<std::vector<int64_t>> gap,
      FindElementCoveredByNeither(values->shape, map, {}, kDefaultPlanWorkLimit, context.alive));
  IndexMap result_map = map;
  if (gap) {
    const std::vector<int> devices = DevicesOf(map);
    result_map = values->shape.empty() ? IndexMap{ChunkSpec{devices.front(), {}}}
                                       : SplitAlong(values->shape, 0, devices);
  }
  planned.result = {values->shape, DType::kInt64, Mode::kReplica, std::move(result_map)};
  planned.sources = {std::move(sorted), std::move(values)};
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Chunk>> ExecuteSearchSorted(const OpContext& context,
                                                       const PlannedManipulation& planned) {
  DeviceOps& ops = *context.ops;
  const Array& sorted = *planned.sources[0];
  const Array& values = *planned.sources[1];
  const IndexMap& map = planned.result.map;
  if (NumElements(sorted.shape) == 0) {
    // Every value goes before the first of no elements: position 0, with nothing to read or
    // search (a zero-size array has no chunks).
    ASSIGN_OR_RETURN(std::vector<Chunk> out, AllocateChunks(ops, DType::kInt64, map));
    RETURN_IF_ERROR(FillChunks(ops, DType::kInt64, out, Scalar::Int(0)));
    return out;
  }
  // `sorted` whole on every device that holds values: the search reads all of it per value.
  const std::vector<int> devices = DevicesOf(map);
  IndexMap whole;
  for (int device : devices) whole.push_back(ChunkSpec{device, FullBox(sorted.shape)});
  ASSIGN_OR_RETURN(std::vector<Chunk> sorted_on,
                   ReadOnlyChunksIn(ops, sorted, whole, context.alive));
  ASSIGN_OR_RETURN(std::vector<Chunk> values_in, ReadOnlyChunksIn(ops, values, map, context.alive));
  std::vector<Chunk> out;
  for (const Chunk& chunk : values_in) {
    RETURN_IF_ERROR(context.CheckAlive());
    const int64_t n = NumElements(chunk.spec.box);
    const auto at = std::find(devices.begin(), devices.end(), chunk.spec.device);
    const Chunk& haystack = sorted_on[at - devices.begin()];
    ASSIGN_OR_RETURN(BufferPtr positions, ops.Allocate(chunk.spec.device, n * 8));
    RETURN_IF_ERROR(ops.SearchSorted(sorted.dtype, SearchRuns{.sorted = haystack.buffer,
                                                              .values = chunk.buffer,
                                                              .out = positions,
                                                              .sorted_count = sorted.shape[0],
                                                              .count = n,
                                                              .right = planned.sort.right}));
    out.push_back(Chunk{chunk.spec, std::move(positions)});
  }
  return out;
}

}  // namespace distarray
