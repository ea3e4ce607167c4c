// Executing layout changes on a DeviceOps sink (the backend, or a recording): allocating chunks,
// reshards and mode changes. Each returns new chunks and leaves the source's buffers untouched
// (arrays are immutable snapshots).
#ifndef DISTARRAY_SERVER_OPS_LAYOUT_H_
#define DISTARRAY_SERVER_OPS_LAYOUT_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/backend/device_ops.h"
#include "server/ops/array.h"
#include "server/ops/chunk_index.h"

namespace distarray {

// One uninitialized buffer per chunk of `map`. RESOURCE_EXHAUSTED, with nothing launched and
// nothing kept, when a device's limit would be passed even after the backend's memory reclaimer
// ran (SetMemoryReclaimer: the engine's cached graphs given up).
absl::StatusOr<std::vector<Chunk>> AllocateChunks(DeviceOps& ops, DType dtype, const IndexMap& map);

// Sets every element of `chunks` (dense buffers of their boxes) to `value`.
absl::Status FillChunks(DeviceOps& ops, DType dtype, const std::vector<Chunk>& chunks,
                        const Scalar& value);

// What AllocateChunks on `ops` (the engine's backend) calls when a device refuses an allocation
// for memory: frees what can be given up and returns whether anything was, so the allocation is
// tried once more. The engine sets it at construction and clears it (nullptr) before it goes. A
// recording has none: what it allocates is the graph's, and the program runner gives the cache up
// and records again instead.
void SetMemoryReclaimer(const DeviceOps* ops, std::function<bool()> reclaimer);

// Sets every element that is not the first copy of its value to `mode`'s identity, in place, on
// chunks the caller owns exclusively (fresh buffers holding REPLICA values).
absl::Status ApplyOwnershipMask(DeviceOps& ops, DType dtype, Mode mode,
                                const std::vector<Chunk>& chunks, const StopCheck& stop = {});

// Whether a relayout's result may hold its source's buffers. kShareLeadingParts: a target chunk
// whose values are the leading part, in C order, of a REPLICA source chunk on the same device
// (the same box, or fewer leading rows of it) holds that chunk's buffer instead of a copy; a
// layout and mode that do not change share every chunk. Only for results nothing writes into:
// arrays registered by an RPC are immutable snapshots, and program slots are copies of them.
enum class SourceBuffers { kCopy, kShareLeadingParts };

// New chunks holding `array`'s logical values in layout `map` and mode `mode`. An op-mode source
// goes through REPLICA first (docs/design.md explains why). Asynchronous: returns once the work is
// enqueued; consumers of each new chunk wait on that chunk alone. Planning stops with `stop`'s
// status once the call it serves is abandoned (planning a large map can take a second of CPU).
absl::StatusOr<std::vector<Chunk>> Relayout(DeviceOps& ops, const Array& array, const IndexMap& map,
                                            Mode mode, const StopCheck& stop = {},
                                            SourceBuffers sources = SourceBuffers::kCopy);

// What an element no chunk covers reads as in `mode`: "0", "1", "-inf", "127", "(inf, inf)".
std::string UncoveredValueText(DType dtype, Mode mode);

// FAILED_PRECONDITION (naming `field` and one such element) when a relayout from (`from`,
// `from_mode`) to (`to`, `to_mode`) would change the value of an element that neither map
// covers: it reads as `from_mode`'s identity before and `to_mode`'s after (a MAX array's gap is
// -inf, a REPLICA array's is 0). Elements the result covers are filled with the source's value;
// elements only the source covers are dropped by choice of the result's map.
absl::Status CheckUncoveredValuesKept(const Shape& shape, DType dtype, const IndexMap& from,
                                      Mode from_mode, const IndexMap& to, Mode to_mode,
                                      absl::string_view field, const StopCheck& stop = {});

// Chunks holding `array`'s logical values in layout `map` (REPLICA), for reading only: a target
// chunk identical to the REPLICA array's chunk at the same position (same device and box) shares
// its buffer
// instead of copying it; the rest are resharded together. Nothing may write into the result.
absl::StatusOr<std::vector<Chunk>> ReadOnlyChunksIn(DeviceOps& ops, const Array& array,
                                                    const IndexMap& map,
                                                    const StopCheck& stop = {});

// Working layouts of the ops that need whole lines along an axis (sort, scan), each with no gaps
// and no overlaps. `shape` split evenly along `axis` over `devices` (fewer parts where the axis is
// shorter).
IndexMap SplitAlong(const Shape& shape, int axis, const std::vector<int>& devices);
// `shape` cut along `axis` into blocks of one length over `devices`, the last block shorter where
// the length does not divide.
IndexMap EqualBlocksAlong(const Shape& shape, int axis, const std::vector<int>& devices);
// The distinct devices of `map`, ascending (device 0 for an empty map).
std::vector<int> DevicesOf(const IndexMap& map);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_LAYOUT_H_
