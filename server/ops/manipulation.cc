// Planning of the indexing and shape ops: operands resolved, the key or axes normalized, and the
// result's layout derived from the sources' chunks. Execution is in manipulation_execute.cc.
#include "server/ops/manipulation.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/checked.h"
#include "common/promotion.h"
#include "common/proto_convert.h"
#include "common/status_macros.h"
#include "server/ops/flat_runs.h"
#include "server/ops/reshard_planner.h"
#include "server/ops/scan.h"
#include "server/ops/sort.h"

namespace distarray {

absl::StatusOr<ArrayPtr> ResolveArrayOperand(const OpContext& context, const v1::Operand& operand,
                                             const std::string& field) {
  if (operand.kind_case() == v1::Operand::KIND_NOT_SET || operand.has_scalar()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": give an array"));
  }
  return context.resolve(operand, field);
}

namespace {

// ---------------------------------------------------------------------------------------------
// get_item and set_item

// The key normalized for `shape`, the values of its index array (IndexItem.array) read from the
// devices first. The array is checked (an integer dtype, one axis, at most kMaxIndexArrayLength
// positions) before anything is read or allocated; a key with another integer array beside it is
// left to NormalizeIndexKey to refuse, unread.
absl::StatusOr<BasicIndex> NormalizeKey(const OpContext& context, const v1::IndexKey& key,
                                        const Shape& shape, const std::string& field) {
  int arrays = 0, held = -1;
  for (int i = 0; i < key.items_size(); ++i) {
    if (key.items(i).has_indices() || key.items(i).has_array()) ++arrays;
    if (key.items(i).has_array() && held < 0) held = i;
  }
  if (held < 0) return NormalizeIndexKey(key, shape, field);
  std::vector<int64_t> positions;
  if (arrays == 1 && key.items_size() <= kMaxIndexItems) {
    const std::string item_field = absl::StrCat(field, ".items[", held, "].array");
    if (!context.read_positions) {
      return absl::UnimplementedError(absl::StrCat(
          item_field,
          ": an index array held in the daemon is served by Manipulate, not inside programs "
          "(its values decide the plan); index with a listed IndexList there"));
    }
    ASSIGN_OR_RETURN(ArrayPtr array,
                     ResolveArrayOperand(context, key.items(held).array(), item_field));
    if (!IsSignedInteger(array->dtype) && !IsUnsignedInteger(array->dtype)) {
      return absl::InvalidArgumentError(
          absl::StrCat(item_field, ": an index array must have an integer dtype, not ",
                       DTypeName(array->dtype)));
    }
    if (array->shape.size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat(item_field, ": an index array must have one axis, not ", array->shape.size(),
                       " (shape ", ShapeString(array->shape), ")"));
    }
    if (array->shape[0] > kMaxIndexArrayLength) {
      return absl::InvalidArgumentError(absl::StrCat(
          item_field, ": give 0 to ", kMaxIndexArrayLength, " positions; got ", array->shape[0]));
    }
    ASSIGN_OR_RETURN(positions, context.read_positions(array, item_field));
  }
  return NormalizeIndexKey(key, shape, field, &positions);
}

// The result of a list's get_item split along the list's axis into near-equal parts, one per
// device that holds pieces (in the order the pieces meet them), each whole along the other axes.
IndexMap CompactListLayout(const BasicIndex& index, const IndexMap& pieces) {
  std::vector<int> devices;
  for (const ChunkSpec& piece : pieces) {
    if (std::find(devices.begin(), devices.end(), piece.device) == devices.end()) {
      devices.push_back(piece.device);
    }
  }
  const size_t axis = static_cast<size_t>(
      std::find(index.result_axes.begin(), index.result_axes.end(), index.list_axis) -
      index.result_axes.begin());
  const int64_t length = index.result_shape[axis];
  const int64_t parts = std::min<int64_t>(static_cast<int64_t>(devices.size()), length);
  IndexMap map;
  for (int64_t k = 0; k < parts; ++k) {
    const int64_t start = length * k / parts, stop = length * (k + 1) / parts;
    Box box = FullBox(index.result_shape);
    box[axis] = Range{start, 1, stop - start};
    map.push_back(ChunkSpec{devices[k], std::move(box)});
  }
  return map;
}

absl::Status PlanGetItem(const OpContext& context, const v1::GetItemSpec& spec,
                         const std::string& field, PlannedManipulation& planned) {
  ASSIGN_OR_RETURN(ArrayPtr source, ResolveArrayOperand(context, spec.source(), field + ".source"));
  ASSIGN_OR_RETURN(planned.index, NormalizeKey(context, spec.key(), source->shape, field + ".key"));
  planned.result = {planned.index.result_shape, source->dtype, source->mode, {}};
  // A key that selects nothing gives a zero-size result, which has no chunks.
  for (const Chunk& chunk : planned.index.empty ? std::vector<Chunk>() : source->chunks) {
    const int64_t room = context.max_chunks - static_cast<int64_t>(planned.result.map.size());
    for (ChunkSelection& s : SelectFromChunk(planned.index, chunk.spec.box, room)) {
      planned.result.map.push_back(ChunkSpec{chunk.spec.device, std::move(s.result_box)});
    }
    // An integer list cuts each chunk into a piece per run; the pieces are the result's chunks.
    if (static_cast<int64_t>(planned.result.map.size()) > context.max_chunks) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ".key: the result would have more than ", context.max_chunks,
          " chunks (an integer list of many short runs over many chunks); take fewer positions "
          "per call"));
    }
  }
  if (planned.index.list_axis >= 0 && source->mode == Mode::kReplica &&
      static_cast<int64_t>(planned.result.map.size()) > kCompactListPieces) {
    planned.compact_list = true;
    planned.result.map = CompactListLayout(planned.index, planned.result.map);
  }
  planned.sources = {std::move(source)};
  return absl::OkStatus();
}

// NumPy's broadcast of a value into a region: the value's axes align with the region's last
// ones, each of the value's extents equal to the region's or 1.
absl::Status CheckBroadcastsTo(const Shape& value, const Shape& region, const std::string& field) {
  bool fits = value.size() <= region.size();
  for (size_t v = 0; fits && v < value.size(); ++v) {
    const int64_t extent = region[v + region.size() - value.size()];
    fits = value[v] == extent || value[v] == 1;
  }
  if (fits) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, ": a value of shape ", ShapeString(value),
                                                 " does not broadcast to the selected region of "
                                                 "shape ",
                                                 ShapeString(region)));
}

absl::Status PlanSetItem(const OpContext& context, const v1::SetItemSpec& spec,
                         const std::string& field, PlannedManipulation& planned) {
  ASSIGN_OR_RETURN(ArrayPtr target, ResolveArrayOperand(context, spec.target(), field + ".target"));
  ASSIGN_OR_RETURN(planned.index, NormalizeKey(context, spec.key(), target->shape, field + ".key"));
  const std::string value_field = field + ".value";
  switch (spec.value().kind_case()) {
    case v1::Operand::KIND_NOT_SET:
      return absl::InvalidArgumentError(absl::StrCat(value_field, ": give an array or a scalar"));
    case v1::Operand::kScalar: {
      ASSIGN_OR_RETURN(planned.scalar,
                       ScalarFromProto(spec.value().scalar(), value_field + ".scalar"));
      if (planned.scalar.kind == Scalar::Kind::kComplex && !IsComplex(target->dtype)) {
        return absl::InvalidArgumentError(
            absl::StrCat(value_field, ".scalar: a complex value cannot be stored in an array of ",
                         DTypeName(target->dtype)));
      }
      RETURN_IF_ERROR(ValidateWeakScalar(planned.scalar, target->dtype, value_field + ".scalar"));
      break;
    }
    default: {
      ASSIGN_OR_RETURN(planned.value, context.resolve(spec.value(), value_field));
      RETURN_IF_ERROR(
          CheckBroadcastsTo(planned.value->shape, planned.index.result_shape, value_field));
    }
  }
  const IndexMap map = target->index_map();
  // A write into an op-mode target first turns it REPLICA (as Elementwise's out does); an element
  // no chunk holds would change what it reads as.
  RETURN_IF_ERROR(CheckUncoveredValuesKept(target->shape, target->dtype, map, target->mode, map,
                                           Mode::kReplica, field + ".target", context.alive));
  // Selected elements no chunk holds could not keep the value written.
  if (!planned.index.empty) {
    IndexMap pieces;
    for (const ChunkSpec& chunk : map) {
      const int64_t room = context.max_chunks - static_cast<int64_t>(pieces.size());
      for (ChunkSelection& s : SelectFromChunk(planned.index, chunk.box, room)) {
        pieces.push_back(ChunkSpec{chunk.device, std::move(s.result_box)});
      }
      if (static_cast<int64_t>(pieces.size()) > context.max_chunks) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".key: the write would cut the target into more than ",
                         context.max_chunks, " pieces; write fewer positions per call"));
      }
    }
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> hole,
                     FindElementCoveredByNeither(planned.index.result_shape, pieces, {},
                                                 kDefaultPlanWorkLimit, context.alive));
    if (hole) {
      return absl::FailedPreconditionError(absl::StrCat(
          field, ".key: selects elements no chunk of the target holds (element (",
          absl::StrJoin(*hole, ", "),
          ") of the selected region); a write there could not be kept. Reshard the target to an "
          "index map that covers them first"));
    }
  }
  planned.result = {target->shape, target->dtype, Mode::kReplica, map};
  planned.sources = {std::move(target)};
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// permute_dims

absl::Status PlanPermuteDims(const OpContext& context, const v1::PermuteDimsSpec& spec,
                             const std::string& field, PlannedManipulation& planned) {
  ASSIGN_OR_RETURN(ArrayPtr source, ResolveArrayOperand(context, spec.source(), field + ".source"));
  const int rank = static_cast<int>(source->shape.size());
  if (spec.axes_size() != rank) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".axes: gives ", spec.axes_size(),
                                                   " axes for an array of rank ", rank));
  }
  std::vector<bool> seen(rank, false);
  for (int i = 0; i < rank; ++i) {
    int axis = spec.axes(i);
    if (axis < -rank || axis >= rank || seen[axis < 0 ? axis + rank : axis]) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".axes[", i, "]: ", axis,
                                                     " is out of range or repeated; axes must "
                                                     "be a permutation of the ",
                                                     rank, " axes"));
    }
    if (axis < 0) axis += rank;
    seen[axis] = true;
    planned.axes.push_back(axis);
  }
  Shape shape;
  for (int axis : planned.axes) shape.push_back(source->shape[axis]);
  planned.result = {shape, source->dtype, source->mode, {}};
  for (const Chunk& chunk : source->chunks) {
    Box box;
    for (int axis : planned.axes) box.push_back(chunk.spec.box[axis]);
    planned.result.map.push_back(ChunkSpec{chunk.spec.device, std::move(box)});
  }
  planned.sources = {std::move(source)};
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// reshape

absl::StatusOr<Shape> ReshapeTarget(const Shape& from, const v1::Shape& to,
                                    const std::string& field, DType dtype) {
  const int64_t size = NumElements(from);
  int inferred = -1;
  int64_t known = 1;
  Shape shape(to.dims().begin(), to.dims().end());
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1 && inferred < 0) {
      inferred = static_cast<int>(d);
      continue;
    }
    if (shape[d] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".dims[", d,
                       "]: must not be negative (but for one -1, inferred); got ", shape[d]));
    }
    ASSIGN_OR_RETURN(known, CheckedMul(known, shape[d], field));
  }
  if (inferred >= 0 && known == 0) {
    // As NumPy: -1 beside an axis of length 0 could be any length.
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": cannot infer the -1 axis of shape ",
                     ShapeString(Shape(to.dims().begin(), to.dims().end())),
                     " for an array of shape ", ShapeString(from), ": another axis has length 0"));
  }
  if (inferred >= 0 && size % known == 0) shape[inferred] = size / known;
  const bool fits = inferred >= 0 ? size % known == 0 : known == size;
  if (!fits) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": cannot reshape an array of shape ", ShapeString(from), " (", size,
        " elements) into shape ", ShapeString(Shape(to.dims().begin(), to.dims().end()))));
  }
  RETURN_IF_ERROR(ValidateShape(shape, dtype, field));
  return shape;
}

// The result's layout when elements must move: split along the first axis, evenly, over the
// source's devices (in the order the source's chunks name them).
IndexMap SplitOverDevices(const Shape& shape, const IndexMap& source) {
  std::vector<int> devices;
  for (const ChunkSpec& chunk : source) {
    if (std::find(devices.begin(), devices.end(), chunk.device) == devices.end()) {
      devices.push_back(chunk.device);
    }
  }
  if (devices.empty()) devices.push_back(0);
  Box box = FullBox(shape);
  if (shape.empty()) return {ChunkSpec{devices.front(), box}};
  const int64_t parts = std::min<int64_t>(static_cast<int64_t>(devices.size()), shape[0]);
  IndexMap map;
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t begin = shape[0] * p / parts;
    const int64_t end = shape[0] * (p + 1) / parts;
    box[0] = Range{begin, 1, end - begin};
    map.push_back(ChunkSpec{devices[p], box});
  }
  return map;
}

absl::Status PlanReshape(const OpContext& context, const v1::ReshapeSpec& spec,
                         const std::string& field, PlannedManipulation& planned) {
  ASSIGN_OR_RETURN(ArrayPtr source, ResolveArrayOperand(context, spec.source(), field + ".source"));
  ASSIGN_OR_RETURN(const Shape shape,
                   ReshapeTarget(source->shape, spec.shape(), field + ".shape", source->dtype));
  planned.result = {shape, source->dtype, source->mode, {}};
  // Every chunk whose elements are one C-order run that is also a box of the new shape keeps its
  // buffer: the same bytes in the same order, relabelled.
  planned.reshape_in_place = true;
  for (const Chunk& chunk : source->chunks) {
    const std::optional<int64_t> start = ContiguousOffset(source->shape, chunk.spec.box);
    std::optional<Box> box;
    if (start) box = FlatRunAsBox(shape, *start, NumElements(chunk.spec.box));
    if (!box) {
      planned.reshape_in_place = false;
      break;
    }
    planned.result.map.push_back(ChunkSpec{chunk.spec.device, *std::move(box)});
  }
  if (!planned.reshape_in_place) planned.result.map = SplitOverDevices(shape, source->index_map());
  planned.sources = {std::move(source)};
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// broadcast_to

absl::Status PlanBroadcastTo(const OpContext& context, const v1::BroadcastToSpec& spec,
                             const std::string& field, PlannedManipulation& planned) {
  ASSIGN_OR_RETURN(ArrayPtr source, ResolveArrayOperand(context, spec.source(), field + ".source"));
  const Shape shape = FromProto(spec.shape());
  RETURN_IF_ERROR(ValidateShape(shape, source->dtype, field + ".shape"));
  const Shape& from = source->shape;
  bool fits = from.size() <= shape.size();
  const size_t lead = fits ? shape.size() - from.size() : 0;
  for (size_t k = 0; fits && k < from.size(); ++k) {
    fits = from[k] == shape[k + lead] || from[k] == 1;
  }
  if (!fits) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".shape: an array of shape ", ShapeString(from),
                     " does not broadcast to shape ", ShapeString(shape)));
  }
  planned.result = {shape, source->dtype, source->mode, {}};
  for (const Chunk& chunk : source->chunks) {
    Box box;
    for (size_t d = 0; d < lead; ++d) box.push_back(Range{0, 1, shape[d]});
    for (size_t k = 0; k < from.size(); ++k) {
      box.push_back(from[k] == shape[k + lead] ? chunk.spec.box[k] : Range{0, 1, shape[k + lead]});
    }
    planned.result.map.push_back(ChunkSpec{chunk.spec.device, std::move(box)});
  }
  planned.sources = {std::move(source)};
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// concat and stack

absl::Status PlanConcat(const OpContext& context, const v1::ConcatSpec& spec,
                        const std::string& field, PlannedManipulation& planned) {
  const int n = spec.sources_size();
  if (n < 1 || n > kMaxConcatSources) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".sources: give 1 to ", kMaxConcatSources, " arrays; got ", n));
  }
  for (int i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(
        ArrayPtr source,
        ResolveArrayOperand(context, spec.sources(i), absl::StrCat(field, ".sources[", i, "]")));
    planned.sources.push_back(std::move(source));
  }
  const Shape& first = planned.sources[0]->shape;
  const int rank = static_cast<int>(first.size()) + (spec.stack() ? 1 : 0);
  if (rank == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".sources[0]: a 0-d array cannot be concatenated (stack it)"));
  }
  int axis = spec.axis();
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".axis: ", axis, " is out of range for a result of rank ", rank));
  }
  if (axis < 0) axis += rank;

  DType dtype = planned.sources[0]->dtype;
  Mode mode = planned.sources[0]->mode;
  int64_t extent = 0;
  int64_t chunks = 0;
  std::vector<int64_t> offsets;  // where each source starts along the axis
  for (int i = 0; i < n; ++i) {
    const Array& source = *planned.sources[i];
    const std::string source_field = absl::StrCat(field, ".sources[", i, "]");
    bool same = source.shape.size() == first.size();
    for (size_t d = 0; same && d < first.size(); ++d) {
      same = source.shape[d] == first[d] || (!spec.stack() && static_cast<int>(d) == axis);
    }
    if (!same) {
      return absl::InvalidArgumentError(absl::StrCat(
          source_field, ": shape ", ShapeString(source.shape), " does not match sources[0]'s ",
          ShapeString(first),
          spec.stack() ? " (stack needs equal shapes)" : absl::StrCat(" outside axis ", axis)));
    }
    std::optional<DType> promoted = PromoteTypes(dtype, source.dtype);
    if (!promoted) {
      return absl::InvalidArgumentError(absl::StrCat(source_field, ": dtype ",
                                                     DTypeName(source.dtype),
                                                     " does not promote with ", DTypeName(dtype)));
    }
    dtype = *promoted;
    if (source.mode != mode) mode = Mode::kReplica;
    offsets.push_back(extent);
    ASSIGN_OR_RETURN(extent,
                     CheckedAdd(extent, spec.stack() ? 1 : source.shape[axis], field + ".sources"));
    chunks += static_cast<int64_t>(source.chunks.size());
  }
  if (chunks > context.max_chunks) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".sources: the result would have ",
                                                   chunks, " chunks, over the limit of ",
                                                   context.max_chunks));
  }
  Shape shape = first;
  if (spec.stack()) {
    shape.insert(shape.begin() + axis, extent);
  } else {
    shape[axis] = extent;
  }
  RETURN_IF_ERROR(ValidateShape(shape, dtype, field + ".sources"));
  planned.result = {shape, dtype, mode, {}};
  for (int i = 0; i < n; ++i) {
    const Array& source = *planned.sources[i];
    const IndexMap map = source.index_map();
    if (source.mode != mode) {
      RETURN_IF_ERROR(CheckUncoveredValuesKept(source.shape, source.dtype, map, source.mode, map,
                                               mode, absl::StrCat(field, ".sources[", i, "]"),
                                               context.alive));
    }
    for (const ChunkSpec& chunk : map) {
      Box box = chunk.box;
      if (spec.stack()) {
        box.insert(box.begin() + axis, Range{offsets[i], 1, 1});
      } else {
        box[axis].start += offsets[i];
      }
      planned.result.map.push_back(ChunkSpec{chunk.device, std::move(box)});
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PlannedManipulation> PlanManipulation(const OpContext& context,
                                                     const v1::ManipulationSpec& spec,
                                                     absl::string_view field) {
  PlannedManipulation planned;
  planned.op = spec.op_case();
  const std::string prefix(field);
  switch (spec.op_case()) {
    case v1::ManipulationSpec::kGetItem:
      RETURN_IF_ERROR(PlanGetItem(context, spec.get_item(), prefix + ".get_item", planned));
      break;
    case v1::ManipulationSpec::kSetItem:
      RETURN_IF_ERROR(PlanSetItem(context, spec.set_item(), prefix + ".set_item", planned));
      break;
    case v1::ManipulationSpec::kPermuteDims:
      RETURN_IF_ERROR(
          PlanPermuteDims(context, spec.permute_dims(), prefix + ".permute_dims", planned));
      break;
    case v1::ManipulationSpec::kReshape:
      RETURN_IF_ERROR(PlanReshape(context, spec.reshape(), prefix + ".reshape", planned));
      break;
    case v1::ManipulationSpec::kConcat:
      RETURN_IF_ERROR(PlanConcat(context, spec.concat(), prefix + ".concat", planned));
      break;
    case v1::ManipulationSpec::kBroadcastTo:
      RETURN_IF_ERROR(
          PlanBroadcastTo(context, spec.broadcast_to(), prefix + ".broadcast_to", planned));
      break;
    case v1::ManipulationSpec::kSort:
      RETURN_IF_ERROR(PlanSort(context, spec.sort(), prefix + ".sort", planned));
      break;
    case v1::ManipulationSpec::kSearchSorted:
      RETURN_IF_ERROR(
          PlanSearchSorted(context, spec.search_sorted(), prefix + ".search_sorted", planned));
      break;
    case v1::ManipulationSpec::kScan:
      RETURN_IF_ERROR(PlanScan(context, spec.scan(), prefix + ".scan", planned));
      break;
    case v1::ManipulationSpec::OP_NOT_SET:
      return absl::InvalidArgumentError(
          absl::StrCat(field,
                       ": give an op (get_item, set_item, permute_dims, reshape, concat, "
                       "broadcast_to, sort, search_sorted or scan)"));
  }
  // A zero-size result has no chunks (docs/design.md), whatever a source's chunks would become
  // (broadcast_to of a (1,) array to (0,) would stretch them to empty boxes).
  if (NumElements(planned.result.shape) == 0) planned.result.map.clear();
  return planned;
}

}  // namespace distarray
