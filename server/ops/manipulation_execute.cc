// Execution of the indexing and shape ops planned in manipulation.cc. The moves are of three
// kinds: a chunk relabelled (its buffer kept, or copied whole where buffers may not be shared), a
// strided gather on one device (the positive ufunc on a bit-copy dtype, reading through a view
// that reverses, permutes or drops axes), and the relayouts of layout.h where elements change
// devices.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/ops/device_gather.h"
#include "server/ops/flat_runs.h"
#include "server/ops/manipulation.h"
#include "server/ops/scan.h"
#include "server/ops/sort.h"

namespace distarray {
namespace {

// Whether `view` walks every axis with more than one element upwards (no reversed axis).
bool Upwards(const StridedBox& view) {
  for (int d = 0; d < view.rank; ++d) {
    if (view.count[d] > 1 && view.stride[d] < 0) return false;
  }
  return true;
}

// A chunk of the result that holds `source`'s elements in the same order under a new box: the
// same buffer where sharing is allowed, else a copy of it.
absl::StatusOr<Chunk> Relabelled(DeviceOps& ops, DType dtype, const Chunk& source, ChunkSpec spec,
                                 SourceBuffers sources) {
  if (sources == SourceBuffers::kShareLeadingParts) {
    source.buffer->MarkShared();
    return Chunk{std::move(spec), source.buffer};
  }
  ASSIGN_OR_RETURN(std::vector<Chunk> fresh, AllocateChunks(ops, dtype, {spec}));
  const int64_t n = NumElements(spec.box);
  RETURN_IF_ERROR(ops.Copy(
      dtype, {BoxCopy{FlatRun(source.buffer, n, 0, n), FlatRun(fresh.front().buffer, n, 0, n)}}));
  return std::move(fresh.front());
}

// Every chunk of `source` relabelled with the box of `map` at its position (Relabelled).
absl::StatusOr<std::vector<Chunk>> RelabelledAll(DeviceOps& ops, const Array& source,
                                                 const IndexMap& map, SourceBuffers sources) {
  std::vector<Chunk> out;
  for (size_t c = 0; c < source.chunks.size(); ++c) {
    ASSIGN_OR_RETURN(Chunk kept, Relabelled(ops, source.dtype, source.chunks[c], map[c], sources));
    out.push_back(std::move(kept));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

absl::StatusOr<std::vector<Chunk>> ExecuteGetItem(const OpContext& context,
                                                  const PlannedManipulation& p,
                                                  SourceBuffers sources) {
  DeviceOps& ops = *context.ops;
  const Array& source = *p.sources[0];
  std::vector<Chunk> out;
  std::vector<std::pair<const Chunk*, ChunkSelection>> gathers;
  IndexMap gathered_map;
  for (const Chunk& chunk : source.chunks) {
    for (ChunkSelection& s : SelectFromChunk(p.index, chunk.spec.box)) {
      if (s.whole_chunk_in_order && sources == SourceBuffers::kShareLeadingParts) {
        chunk.buffer->MarkShared();
        out.push_back(Chunk{ChunkSpec{chunk.spec.device, s.result_box}, chunk.buffer});
        continue;
      }
      gathered_map.push_back(ChunkSpec{chunk.spec.device, s.result_box});
      out.push_back(Chunk{gathered_map.back(), nullptr});
      gathers.emplace_back(&chunk, std::move(s));
    }
  }
  // Everything is allocated before anything is launched.
  ASSIGN_OR_RETURN(std::vector<Chunk> fresh, AllocateChunks(ops, source.dtype, gathered_map));
  size_t next = 0;
  for (Chunk& chunk : out) {
    if (chunk.buffer != nullptr) continue;
    chunk.buffer = fresh[next].buffer;
    const auto& [from, selection] = gathers[next];
    ++next;
    if (Upwards(selection.view)) {
      // The selected box copied as it lies: the result's dense C order is the order of the local
      // box's elements (dropped and new axes have one element), so it is a box copy, which the
      // backends run as a memcpy where rows are contiguous.
      const Shape local_shape = BoxShape(selection.local_box);
      RETURN_IF_ERROR(
          ops.Copy(source.dtype,
                   {BoxCopy{BufferBox{from->buffer, BoxShape(from->spec.box), selection.local_box},
                            BufferBox{chunk.buffer, local_shape, FullBox(local_shape)}}}));
      continue;
    }
    RETURN_IF_ERROR(Gather(ops, source.dtype, from->buffer, NumElements(from->spec.box),
                           selection.view, chunk.buffer, NumElements(chunk.spec.box)));
  }
  if (!p.compact_list) return out;
  // The list's many pieces gathered into the planned compact layout (one relayout of the
  // result's bytes); the pieces are freed as it completes.
  Array pieces;
  pieces.shape = p.result.shape;
  pieces.dtype = source.dtype;
  pieces.mode = Mode::kReplica;
  pieces.chunks = std::move(out);
  return Relayout(ops, pieces, p.result.map, Mode::kReplica, context.alive);
}

// The value's elements that land in one chunk's selected region, and how to read them in the
// order of the chunk's local box (reversed axes walked backwards, broadcast axes repeated).
struct ValuePiece {
  Box value_box;    // in the value's coordinates
  StridedBox view;  // into the piece's dense buffer, in the C order of the chunk's local box
};

ValuePiece PieceFor(const PlannedManipulation& p, const ChunkSelection& selection) {
  const Shape& region = p.index.result_shape;
  const Shape& value = p.value->shape;
  const size_t lead = region.size() - value.size();  // region axes the value has none of
  ValuePiece piece;
  for (size_t v = 0; v < value.size(); ++v) {
    piece.value_box.push_back(value[v] == 1 ? Range{0, 1, 1} : selection.result_box[v + lead]);
  }
  const std::vector<int64_t> dense = DenseStrides(BoxShape(piece.value_box));
  const int rank = static_cast<int>(p.index.axes.size());
  piece.view.rank = rank;
  for (int a = 0; a < rank; ++a) {
    piece.view.count[a] = selection.local_box[a].count;
    piece.view.stride[a] = 0;
    if (p.index.axes[a].integer) continue;
    const size_t r =
        static_cast<size_t>(std::find(p.index.result_axes.begin(), p.index.result_axes.end(), a) -
                            p.index.result_axes.begin());
    if (r < lead || value[r - lead] == 1) continue;  // broadcast along this axis
    const int64_t stride = dense[r - lead];
    const int64_t count = selection.local_box[a].count;
    if (selection.reversed[a] && count > 1) {
      piece.view.stride[a] = -stride;
      piece.view.offset += (count - 1) * stride;
    } else {
      piece.view.stride[a] = stride;
    }
  }
  return piece;
}

// Writes a value's piece into `destination` (a local box of a target chunk on `device`): a box copy
// where the piece's dense order is the box's order (nothing reversed or broadcast), else a gather
// into that order first.
absl::Status WritePiece(DeviceOps& ops, DType dtype, const Chunk& value, const ValuePiece& piece,
                        const BufferBox& destination, int device) {
  const Shape region_shape = BoxShape(destination.box);
  const int64_t count = NumElements(region_shape);
  if (NumElements(value.spec.box) == count && Upwards(piece.view)) {
    return ops.Copy(dtype, {BoxCopy{BufferBox{value.buffer, region_shape, FullBox(region_shape)},
                                    destination}});
  }
  ASSIGN_OR_RETURN(std::vector<Chunk> staged,
                   AllocateChunks(ops, dtype, {ChunkSpec{device, FullBox(region_shape)}}));
  RETURN_IF_ERROR(Gather(ops, dtype, value.buffer, NumElements(value.spec.box), piece.view,
                         staged.front().buffer, count));
  return ops.Copy(dtype,
                  {BoxCopy{BufferBox{staged.front().buffer, region_shape, FullBox(region_shape)},
                           destination}});
}

// `in_place`: write into the target's own buffers (ExecuteSetItemInPlace).
absl::StatusOr<std::vector<Chunk>> ExecuteSetItem(const OpContext& context,
                                                  const PlannedManipulation& p,
                                                  SourceBuffers sources, bool in_place = false) {
  DeviceOps& ops = *context.ops;
  const Array& target = *p.sources[0];
  const DType dtype = target.dtype;
  // An op-mode target is made REPLICA first: fresh buffers, written in place below.
  std::vector<Chunk> chunks = target.chunks;
  const bool fresh = in_place || target.mode != Mode::kReplica;
  if (fresh && !in_place) {
    ASSIGN_OR_RETURN(chunks,
                     Relayout(ops, target, target.index_map(), Mode::kReplica, context.alive));
  }
  std::vector<std::vector<ChunkSelection>> selections;  // per chunk; several for a list's runs
  IndexMap touched_map;  // the chunks the write reaches, for their new buffers
  IndexMap value_map;    // where the value's pieces must be, one per selection
  std::vector<ValuePiece> pieces;
  for (const Chunk& chunk : chunks) {
    selections.push_back(SelectFromChunk(p.index, chunk.spec.box));
    if (selections.back().empty()) continue;
    if (!fresh) touched_map.push_back(chunk.spec);
    if (!p.value) continue;
    for (const ChunkSelection& selection : selections.back()) {
      pieces.push_back(PieceFor(p, selection));
      value_map.push_back(ChunkSpec{chunk.spec.device, pieces.back().value_box});
    }
  }
  ASSIGN_OR_RETURN(std::vector<Chunk> written, AllocateChunks(ops, dtype, touched_map));
  std::vector<Chunk> values;
  if (p.value) {
    // The value's pieces on the devices of the chunks they land in, in the target's dtype.
    ASSIGN_OR_RETURN(values, ReadOnlyChunksIn(ops, *p.value, value_map, context.alive));
    if (p.value->dtype != dtype) {
      ASSIGN_OR_RETURN(std::vector<Chunk> cast, AllocateChunks(ops, dtype, value_map));
      for (size_t i = 0; i < cast.size(); ++i) {
        RETURN_IF_ERROR(ops.Cast(p.value->dtype, dtype, values[i].buffer, cast[i].buffer,
                                 NumElements(value_map[i].box)));
      }
      values = std::move(cast);
    }
  }
  std::vector<Chunk> out;
  size_t next_written = 0, next_piece = 0;
  for (size_t c = 0; c < chunks.size(); ++c) {
    RETURN_IF_ERROR(context.CheckAlive());
    const Chunk& chunk = chunks[c];
    if (selections[c].empty()) {
      if (fresh) {
        out.push_back(chunk);
      } else {
        ASSIGN_OR_RETURN(Chunk kept, Relabelled(ops, dtype, chunk, chunk.spec, sources));
        out.push_back(std::move(kept));
      }
      continue;
    }
    Chunk result = chunk;
    const int64_t n = NumElements(chunk.spec.box);
    if (!fresh) {
      // Arrays are snapshots: the write goes into a copy of the chunk.
      result.buffer = written[next_written++].buffer;
      RETURN_IF_ERROR(ops.Copy(
          dtype, {BoxCopy{FlatRun(chunk.buffer, n, 0, n), FlatRun(result.buffer, n, 0, n)}}));
    }
    // The selections write in key order on the chunk's device, so a repeated position keeps the
    // last value, as NumPy's does.
    for (const ChunkSelection& selection : selections[c]) {
      const BufferBox destination{result.buffer, BoxShape(chunk.spec.box), selection.local_box};
      if (!p.value) {
        RETURN_IF_ERROR(ops.FillConstant(dtype, destination, p.scalar));
        continue;
      }
      const ValuePiece& piece = pieces[next_piece];
      const Chunk& value = values[next_piece];
      ++next_piece;
      RETURN_IF_ERROR(WritePiece(ops, dtype, value, piece, destination, chunk.spec.device));
    }
    out.push_back(std::move(result));
  }
  return out;
}

absl::StatusOr<std::vector<Chunk>> ExecutePermuteDims(DeviceOps& ops, const PlannedManipulation& p,
                                                      SourceBuffers sources) {
  const Array& source = *p.sources[0];
  bool identity = true;
  for (size_t i = 0; i < p.axes.size(); ++i)
    identity = identity && p.axes[i] == static_cast<int>(i);
  if (identity) return RelabelledAll(ops, source, p.result.map, sources);
  ASSIGN_OR_RETURN(std::vector<Chunk> out, AllocateChunks(ops, source.dtype, p.result.map));
  for (size_t c = 0; c < source.chunks.size(); ++c) {
    const Chunk& from = source.chunks[c];
    const std::vector<int64_t> dense = DenseStrides(BoxShape(from.spec.box));
    StridedBox view;
    view.rank = static_cast<int>(p.axes.size());
    for (size_t i = 0; i < p.axes.size(); ++i) {
      view.count[i] = from.spec.box[p.axes[i]].count;
      view.stride[i] = dense[p.axes[i]];
    }
    const int64_t n = NumElements(from.spec.box);
    RETURN_IF_ERROR(Gather(ops, source.dtype, from.buffer, n, view, out[c].buffer, n));
  }
  return out;
}

absl::StatusOr<std::vector<Chunk>> ExecuteReshape(const OpContext& context,
                                                  const PlannedManipulation& p,
                                                  SourceBuffers sources) {
  DeviceOps& ops = *context.ops;
  const Array& source = *p.sources[0];
  std::vector<Chunk> out;
  if (p.reshape_in_place) {
    return RelabelledAll(ops, source, p.result.map, sources);
  }
  // Each result chunk is a run of flat positions; the source's elements at those positions are
  // boxes of the source's shape. They are gathered onto the result chunk's device by one
  // relayout, then laid end to end.
  struct Placement {
    size_t chunk;
    int64_t offset;  // in the result chunk's buffer
  };
  IndexMap staging_map;
  std::vector<Placement> placements;
  for (size_t j = 0; j < p.result.map.size(); ++j) {
    const ChunkSpec& spec = p.result.map[j];
    const std::optional<int64_t> start = ContiguousOffset(p.result.shape, spec.box);
    if (!start) return absl::InternalError("reshape: a planned chunk is not one C-order run");
    int64_t offset = 0;
    for (Box& box : FlatRunBoxes(source.shape, *start, NumElements(spec.box))) {
      const int64_t n = NumElements(box);
      staging_map.push_back(ChunkSpec{spec.device, std::move(box)});
      placements.push_back(Placement{j, offset});
      offset += n;
    }
  }
  ASSIGN_OR_RETURN(std::vector<Chunk> staged,
                   Relayout(ops, source, staging_map, source.mode, context.alive));
  ASSIGN_OR_RETURN(out, AllocateChunks(ops, source.dtype, p.result.map));
  std::vector<BoxCopy> copies;
  for (size_t k = 0; k < staged.size(); ++k) {
    const int64_t n = NumElements(staged[k].spec.box);
    const Chunk& into = out[placements[k].chunk];
    copies.push_back(
        BoxCopy{FlatRun(staged[k].buffer, n, 0, n),
                FlatRun(into.buffer, NumElements(into.spec.box), placements[k].offset, n)});
  }
  RETURN_IF_ERROR(ops.Copy(source.dtype, copies));
  return out;
}

absl::StatusOr<std::vector<Chunk>> ExecuteBroadcastTo(DeviceOps& ops, const PlannedManipulation& p,
                                                      SourceBuffers sources) {
  const Array& source = *p.sources[0];
  const Shape& shape = p.result.shape;
  const size_t lead = shape.size() - source.shape.size();
  std::vector<Chunk> out;
  if (lead == 0 && shape == source.shape) {
    return RelabelledAll(ops, source, p.result.map, sources);
  }
  ASSIGN_OR_RETURN(out, AllocateChunks(ops, source.dtype, p.result.map));
  for (size_t c = 0; c < source.chunks.size(); ++c) {
    const Chunk& from = source.chunks[c];
    const std::vector<int64_t> dense = DenseStrides(BoxShape(from.spec.box));
    StridedBox view;
    view.rank = static_cast<int>(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
      view.count[d] = out[c].spec.box[d].count;
      // New axes and broadcast ones (a source extent of 1) repeat the same elements.
      const bool repeated = d < lead || source.shape[d - lead] != shape[d];
      view.stride[d] = repeated ? 0 : dense[d - lead];
    }
    RETURN_IF_ERROR(Gather(ops, source.dtype, from.buffer, NumElements(from.spec.box), view,
                           out[c].buffer, NumElements(out[c].spec.box)));
  }
  return out;
}

absl::StatusOr<std::vector<Chunk>> ExecuteConcat(const OpContext& context,
                                                 const PlannedManipulation& p,
                                                 SourceBuffers sources) {
  DeviceOps& ops = *context.ops;
  const DType dtype = p.result.dtype;
  std::vector<Chunk> out;
  size_t next = 0;  // position in the result's map
  for (const ArrayPtr& source : p.sources) {
    RETURN_IF_ERROR(context.CheckAlive());
    std::vector<Chunk> chunks = source->chunks;
    bool fresh = false;
    if (source->mode != p.result.mode) {
      ASSIGN_OR_RETURN(chunks,
                       Relayout(ops, *source, source->index_map(), p.result.mode, context.alive));
      fresh = true;
    }
    if (source->dtype != dtype) {
      ASSIGN_OR_RETURN(std::vector<Chunk> cast, AllocateChunks(ops, dtype, source->index_map()));
      for (size_t c = 0; c < cast.size(); ++c) {
        RETURN_IF_ERROR(ops.Cast(source->dtype, dtype, chunks[c].buffer, cast[c].buffer,
                                 NumElements(cast[c].spec.box)));
      }
      chunks = std::move(cast);
      fresh = true;
    }
    for (const Chunk& chunk : chunks) {
      const ChunkSpec& spec = p.result.map[next++];
      if (fresh) {
        out.push_back(Chunk{spec, chunk.buffer});
        continue;
      }
      ASSIGN_OR_RETURN(Chunk kept, Relabelled(ops, dtype, chunk, spec, sources));
      out.push_back(std::move(kept));
    }
  }
  return out;
}

}  // namespace

bool WritesIntoTargetSafely(const PlannedManipulation& planned) {
  if (planned.op != v1::ManipulationSpec::kSetItem) return false;
  const Array& target = *planned.sources[0];
  if (target.mode != Mode::kReplica) return false;
  if (!planned.value) return true;
  for (const Chunk& t : target.chunks) {
    for (const Chunk& v : planned.value->chunks) {
      if (t.buffer != nullptr && t.buffer == v.buffer) return false;
    }
  }
  return true;
}

absl::StatusOr<OpResult> ExecuteSetItemInPlace(const OpContext& context,
                                               const PlannedManipulation& planned) {
  if (!WritesIntoTargetSafely(planned)) {
    return absl::InternalError("set_item in place: the target is not safe to write into");
  }
  OpResult out{planned.result.shape, planned.result.dtype, planned.result.mode, {}};
  ASSIGN_OR_RETURN(out.chunks, ExecuteSetItem(context, planned, SourceBuffers::kCopy,
                                              /*in_place=*/true));
  return out;
}

absl::StatusOr<OpResult> ExecuteManipulation(const OpContext& context,
                                             const PlannedManipulation& planned,
                                             SourceBuffers sources) {
  RETURN_IF_ERROR(context.CheckAlive());
  // A zero-size result (PlanManipulation) has no chunks: nothing to allocate, copy or launch.
  if (NumElements(planned.result.shape) == 0) {
    return OpResult{planned.result.shape, planned.result.dtype, planned.result.mode, {}};
  }
  auto chunks = [&]() -> absl::StatusOr<std::vector<Chunk>> {
    switch (planned.op) {
      case v1::ManipulationSpec::kGetItem:
        return ExecuteGetItem(context, planned, sources);
      case v1::ManipulationSpec::kSetItem:
        return ExecuteSetItem(context, planned, sources);
      case v1::ManipulationSpec::kPermuteDims:
        return ExecutePermuteDims(*context.ops, planned, sources);
      case v1::ManipulationSpec::kReshape:
        return ExecuteReshape(context, planned, sources);
      case v1::ManipulationSpec::kConcat:
        return ExecuteConcat(context, planned, sources);
      case v1::ManipulationSpec::kBroadcastTo:
        return ExecuteBroadcastTo(*context.ops, planned, sources);
      case v1::ManipulationSpec::kSort:
        return ExecuteSort(context, planned);
      case v1::ManipulationSpec::kSearchSorted:
        return ExecuteSearchSorted(context, planned);
      case v1::ManipulationSpec::kScan:
        return ExecuteScan(context, planned);
      case v1::ManipulationSpec::OP_NOT_SET:
        break;
    }
    return absl::InternalError("manipulation: no op planned");
  };
  OpResult out{planned.result.shape, planned.result.dtype, planned.result.mode, {}};
  ASSIGN_OR_RETURN(out.chunks, chunks());
  return out;
}

}  // namespace distarray
