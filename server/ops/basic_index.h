// Indexing (NumPy's integers, slices, None, ... and one integer array) as pure functions of
// metadata: what a key selects from an array of a given shape, and where each chunk's selected
// elements sit in the result and in the chunk's buffer. get_item and set_item (manipulation.h) are
// built on it.
#ifndef DISTARRAY_SERVER_OPS_BASIC_INDEX_H_
#define DISTARRAY_SERVER_OPS_BASIC_INDEX_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/box.h"
#include "common/strided_box.h"
#include "distarray/v1/distarray.pb.h"

namespace distarray {

// The most items a key may hold (NumPy allows 64 dimensions; our arrays have at most kMaxRank).
inline constexpr int kMaxIndexItems = 64;
// The most positions an integer-array index (IndexItem.indices) may list.
inline constexpr int kMaxIndexListLength = 65536;
// The most positions an integer array held in the daemon (IndexItem.array) may hold. Its values
// are read to the host once (8 bytes a position there) and cut into runs, so the bound keeps that
// copy at 128 MiB; the result's chunks are bounded separately (--max_chunks), so random positions
// reach it only where they form few runs.
inline constexpr int64_t kMaxIndexArrayLength = int64_t{1} << 24;

// What a key selects along one axis of the source.
struct AxisSelection {
  bool integer = false;  // one position, and the axis is dropped from the result
  // The selected positions in ascending order (count 0: none). Python's negative steps select the
  // same positions; `reversed` says the result walks them downwards.
  Range range;
  bool reversed = false;
};

struct BasicIndex {
  std::vector<AxisSelection> axes;  // one per source axis
  // Per result axis, the source axis it comes from, or -1 for a new axis (None).
  std::vector<int> result_axes;
  Shape result_shape;
  bool empty = false;  // some axis selects nothing: the result has no elements
  // An integer-array index: source axis `list_axis` (-1: none) selects `runs` one after another,
  // each a run of positions in arithmetic progression (a list cut where its step changes), the
  // k-th landing at result position run_offsets[k] along that axis. axes[list_axis] is unused.
  int list_axis = -1;
  std::vector<AxisSelection> runs;
  std::vector<int64_t> run_offsets;
};

// Normalizes `key` for an array of `shape` with Python's rules (slice ends clamped to the axis,
// negative positions counting from the end). An integer outside its axis is OUT_OF_RANGE naming
// the item and the axis; malformed keys (a zero step, two ellipses, more indices than axes, a
// result of more than kMaxRank axes, more than kMaxIndexItems items) are INVALID_ARGUMENT naming
// `field` and the item. `held_positions` are the values of the key's IndexItem.array, read from
// the devices by the caller (an array item with none given is INVALID_ARGUMENT).
absl::StatusOr<BasicIndex> NormalizeIndexKey(const v1::IndexKey& key, const Shape& shape,
                                             absl::string_view field,
                                             const std::vector<int64_t>* held_positions = nullptr);

// How one chunk of the source meets a key.
struct ChunkSelection {
  // The chunk's selected elements in the result's coordinates (ascending).
  Box result_box;
  // The same elements in the chunk's local coordinates, one range per source axis (ascending).
  Box local_box;
  // Reads the chunk's dense buffer in the result box's C order: element i of the result box is
  // buffer element BoxOffset(view, i). Reversed axes have negative strides, new axes stride 0.
  StridedBox view;
  // The result box's C order is the chunk's buffer order, element for element: the chunk is
  // selected whole, walked upwards (the result chunk may hold the source's buffer).
  bool whole_chunk_in_order = false;
  // Per source axis, whether the result walks it downwards (a negative step, or a list's run).
  std::vector<bool> reversed;
};

// The chunk's selected elements: one selection for a basic key (none when the chunk holds no
// selected element, or the selection is empty), one per run of an integer list that meets it.
// Stops once it has more than `max_selections` (the caller's chunk bound), so a list of millions
// of runs is refused without building them all.
std::vector<ChunkSelection> SelectFromChunk(const BasicIndex& index, const Box& chunk_box,
                                            int64_t max_selections = INT64_MAX);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_BASIC_INDEX_H_
