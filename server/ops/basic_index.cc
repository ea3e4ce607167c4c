#include "server/ops/basic_index.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace distarray {
namespace {

// Python's slice.indices(n) (PySlice_AdjustIndices): clamps start and stop to the axis and counts
// the positions. In 128 bits, so no client value can overflow it.
AxisSelection ClampSlice(const v1::Slice& slice, int64_t n, int64_t step) {
  const __int128 lower = step > 0 ? 0 : -1;
  const __int128 upper = step > 0 ? n : n - 1;
  auto clamp = [&](bool has, int64_t value, __int128 fallback) -> __int128 {
    if (!has) return fallback;
    __int128 v = value;
    if (v < 0) {
      v += n;
      return v < lower ? lower : v;
    }
    return v > upper ? upper : v;
  };
  const __int128 start = clamp(slice.has_start(), slice.start(), step > 0 ? lower : upper);
  const __int128 stop = clamp(slice.has_stop(), slice.stop(), step > 0 ? upper : lower);
  const __int128 magnitude = step > 0 ? static_cast<__int128>(step) : -static_cast<__int128>(step);
  __int128 count = 0;
  if (step > 0 && stop > start) count = (stop - start - 1) / magnitude + 1;
  if (step < 0 && start > stop) count = (start - stop - 1) / magnitude + 1;
  AxisSelection selection;
  selection.range.count = static_cast<int64_t>(count);
  // More than one position means the step is below the axis size, so it fits int64.
  selection.range.step = count > 1 ? static_cast<int64_t>(magnitude) : 1;
  if (count == 0) {
    selection.range.start = 0;
  } else if (step > 0) {
    selection.range.start = static_cast<int64_t>(start);
  } else {
    // Walked downwards from `start`: the same positions upwards from the last one.
    selection.range.start = static_cast<int64_t>(start - magnitude * (count - 1));
    selection.reversed = count > 1;
  }
  return selection;
}

// An integer list cut into maximal runs in arithmetic progression (a repeated position starts a
// new run: a range cannot step by 0). Positions outside the axis are OUT_OF_RANGE.
// `values` are the list's (IndexList) or an array's (IndexItem.array); `field` names position k
// as field[k].
absl::StatusOr<std::vector<AxisSelection>> RunsOf(absl::Span<const int64_t> values, int64_t n,
                                                  int axis, const std::string& field) {
  for (size_t k = 0; k < values.size(); ++k) {
    const int64_t value = values[k];
    if (value < -n || value >= n) {
      return absl::OutOfRangeError(absl::StrCat(field, "[", k, "]: index ", value,
                                                " is out of bounds for axis ", axis, " with size ",
                                                n));
    }
  }
  // Normalized where read (no copy: an index array may hold 1<<24 positions).
  auto position = [&](size_t k) { return values[k] < 0 ? values[k] + n : values[k]; };
  std::vector<AxisSelection> runs;
  size_t k = 0;
  while (k < values.size()) {
    size_t end = k + 1;
    const int64_t step = end < values.size() ? position(end) - position(k) : 1;
    if (step != 0) {
      while (end < values.size() && position(end) - position(end - 1) == step) ++end;
    }
    AxisSelection run;
    const int64_t count = static_cast<int64_t>(end - k);
    run.range.count = count;
    run.range.step = count > 1 ? (step > 0 ? step : -step) : 1;
    run.range.start = step > 0 || count == 1 ? position(k) : position(end - 1);
    run.reversed = count > 1 && step < 0;
    runs.push_back(run);
    k = end;
  }
  return runs;
}

// Where `position` (global) sits in a chunk's dense buffer along one axis.
int64_t LocalIndex(const Range& chunk, int64_t position) {
  return (position - chunk.start) / chunk.step;
}

}  // namespace

absl::StatusOr<BasicIndex> NormalizeIndexKey(const v1::IndexKey& key, const Shape& shape,
                                             absl::string_view field,
                                             const std::vector<int64_t>* held_positions) {
  const int rank = static_cast<int>(shape.size());
  if (key.items_size() > kMaxIndexItems) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".items: ", key.items_size(),
                                                   " items exceed the limit of ", kMaxIndexItems));
  }
  int consuming = 0;  // items that take an axis of the source
  int ellipsis = -1;
  int list_item = -1;
  for (int i = 0; i < key.items_size(); ++i) {
    switch (key.items(i).kind_case()) {
      case v1::IndexItem::kArray:
        if (held_positions == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(
              field, ".items[", i, "].array: an index array is read by the request's handler"));
        }
        [[fallthrough]];
      case v1::IndexItem::kIndices:
        if (list_item >= 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(field, ".items[", i, "]: a key holds at most one integer array (items[",
                           list_item, "] is one)"));
        }
        // An empty list selects nothing (NumPy's a[[]]): a zero-size result. An array's length
        // was bounded before its values were read.
        if (key.items(i).has_indices() &&
            key.items(i).indices().values_size() > kMaxIndexListLength) {
          return absl::InvalidArgumentError(
              absl::StrCat(field, ".items[", i, "].indices.values: give 0 to ", kMaxIndexListLength,
                           " positions; got ", key.items(i).indices().values_size()));
        }
        list_item = i;
        ++consuming;
        break;
      case v1::IndexItem::kIndex:
      case v1::IndexItem::kSlice:
        ++consuming;
        break;
      case v1::IndexItem::kNewAxis:
        break;
      case v1::IndexItem::kEllipsis:
        if (ellipsis >= 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(field, ".items[", i, "]: a key holds at most one ellipsis (items[",
                           ellipsis, "] is one)"));
        }
        ellipsis = i;
        break;
      case v1::IndexItem::KIND_NOT_SET:
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".items[", i, "]: give an index, a slice, new_axis or ellipsis"));
    }
  }
  if (consuming > rank) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": too many indices: the array has ",
                                                   rank, " axes, the key indexes ", consuming));
  }

  BasicIndex index;
  index.axes.resize(rank);
  int axis = 0;
  auto take_whole = [&](int a) {
    index.axes[a].range = Range{0, 1, shape[a]};
    index.result_axes.push_back(a);
  };
  for (int i = 0; i < key.items_size(); ++i) {
    const v1::IndexItem& item = key.items(i);
    const std::string item_field = absl::StrCat(field, ".items[", i, "]");
    switch (item.kind_case()) {
      case v1::IndexItem::kIndex: {
        const int64_t n = shape[axis];
        const int64_t value = item.index();
        if (value < -n || value >= n) {
          return absl::OutOfRangeError(absl::StrCat(item_field, ": index ", value,
                                                    " is out of bounds for axis ", axis,
                                                    " with size ", n));
        }
        index.axes[axis].integer = true;
        index.axes[axis].range = Range{value < 0 ? value + n : value, 1, 1};
        ++axis;
        break;
      }
      case v1::IndexItem::kSlice: {
        const v1::Slice& slice = item.slice();
        const int64_t step = slice.has_step() ? slice.step() : 1;
        if (step == 0) {
          return absl::InvalidArgumentError(absl::StrCat(item_field, ".step: must not be zero"));
        }
        index.axes[axis] = ClampSlice(slice, shape[axis], step);
        index.result_axes.push_back(axis);
        ++axis;
        break;
      }
      case v1::IndexItem::kIndices:
      case v1::IndexItem::kArray: {
        if (item.has_indices()) {
          ASSIGN_OR_RETURN(index.runs, RunsOf(item.indices().values(), shape[axis], axis,
                                              item_field + ".indices.values"));
        } else {
          ASSIGN_OR_RETURN(index.runs,
                           RunsOf(*held_positions, shape[axis], axis, item_field + ".array"));
        }
        int64_t offset = 0;
        for (const AxisSelection& run : index.runs) {
          index.run_offsets.push_back(offset);
          offset += run.range.count;
        }
        index.list_axis = axis;
        index.axes[axis].range = Range{0, 1, offset};  // only its count (the result extent) is read
        index.result_axes.push_back(axis);
        ++axis;
        break;
      }
      case v1::IndexItem::kNewAxis:
        index.result_axes.push_back(-1);
        break;
      case v1::IndexItem::kEllipsis:
        for (int k = 0; k < rank - consuming; ++k) take_whole(axis++);
        break;
      case v1::IndexItem::KIND_NOT_SET:
        break;  // refused above
    }
  }
  while (axis < rank) take_whole(axis++);
  if (index.result_axes.size() > static_cast<size_t>(kMaxRank)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": the result would have ",
                                                   index.result_axes.size(), " axes; the most is ",
                                                   kMaxRank));
  }
  for (int a : index.result_axes) {
    const int64_t extent = a < 0 ? 1 : index.axes[a].range.count;
    index.result_shape.push_back(extent);
    if (extent == 0) index.empty = true;
  }
  return index;
}

namespace {

// One selection of a key without an integer list (or with its list axis set to one run).
std::optional<ChunkSelection> SelectOne(const BasicIndex& index, const Box& chunk_box) {
  if (index.empty) return std::nullopt;
  const int rank = static_cast<int>(index.axes.size());
  std::vector<Range> met(rank);  // the selected positions the chunk holds, per source axis
  for (int a = 0; a < rank; ++a) {
    std::optional<Range> both = Intersect(index.axes[a].range, chunk_box[a]);
    if (!both) return std::nullopt;
    met[a] = *both;
  }
  const std::vector<int64_t> dense = DenseStrides(BoxShape(chunk_box));
  ChunkSelection selection;
  selection.view.rank = static_cast<int>(index.result_axes.size());
  bool in_order = true;
  for (int a = 0; a < rank; ++a) {
    const Range& chunk = chunk_box[a];
    const Range& m = met[a];
    const int64_t local_step = m.step / chunk.step;
    selection.local_box.push_back(Range{LocalIndex(chunk, m.start), local_step, m.count});
    if (m.count != chunk.count) in_order = false;
    if (index.axes[a].integer) {
      selection.view.offset += LocalIndex(chunk, m.start) * dense[a];
    }
  }
  for (size_t r = 0; r < index.result_axes.size(); ++r) {
    const int a = index.result_axes[r];
    if (a < 0) {
      selection.result_box.push_back(Range{0, 1, 1});
      selection.view.count[r] = 1;
      selection.view.stride[r] = 0;
      continue;
    }
    const AxisSelection& axis = index.axes[a];
    const Range& m = met[a];
    const int64_t step = m.step / axis.range.step;
    const int64_t first = axis.reversed ? (axis.range.last() - m.last()) / axis.range.step
                                        : (m.start - axis.range.start) / axis.range.step;
    selection.result_box.push_back(Range{first, m.count == 1 ? 1 : step, m.count});
    const int64_t stride = (m.step / chunk_box[a].step) * dense[a];
    const bool down = axis.reversed && m.count > 1;
    if (down) in_order = false;
    selection.view.count[r] = m.count;
    selection.view.stride[r] = down ? -stride : stride;
    selection.view.offset += LocalIndex(chunk_box[a], down ? m.last() : m.start) * dense[a];
  }
  selection.whole_chunk_in_order = in_order;
  for (const AxisSelection& axis : index.axes) selection.reversed.push_back(axis.reversed);
  return selection;
}

}  // namespace

std::vector<ChunkSelection> SelectFromChunk(const BasicIndex& index, const Box& chunk_box,
                                            int64_t max_selections) {
  std::vector<ChunkSelection> selections;
  if (index.list_axis < 0) {
    if (std::optional<ChunkSelection> s = SelectOne(index, chunk_box)) {
      selections.push_back(*std::move(s));
    }
    return selections;
  }
  const size_t result_axis = static_cast<size_t>(
      std::find(index.result_axes.begin(), index.result_axes.end(), index.list_axis) -
      index.result_axes.begin());
  // The key without its list (a copy of the runs per chunk would cost as much as the runs).
  BasicIndex one_run;
  one_run.axes = index.axes;
  one_run.result_axes = index.result_axes;
  one_run.result_shape = index.result_shape;
  one_run.empty = index.empty;
  const Range& along = chunk_box[index.list_axis];
  for (size_t k = 0; k < index.runs.size(); ++k) {
    if (static_cast<int64_t>(selections.size()) > max_selections) break;
    // Most runs of a long list miss a chunk split along the list's axis: skipped cheaply.
    const Range& run = index.runs[k].range;
    if (run.last() < along.start || run.start > along.last()) continue;
    one_run.axes[index.list_axis] = index.runs[k];
    std::optional<ChunkSelection> s = SelectOne(one_run, chunk_box);
    if (!s) continue;
    // The run's own positions count from 0; in the result they follow the runs before it.
    s->result_box[result_axis].start += index.run_offsets[k];
    s->whole_chunk_in_order = false;  // its box is placed by the list, not by the chunk
    selections.push_back(*std::move(s));
  }
  return selections;
}

}  // namespace distarray
