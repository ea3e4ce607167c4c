// One UploadArray stream: bytes arrive in pieces of any size and are written to the chunks one
// slab (a bounded C-order block of the region in the client's order; see slab_plan.h) at a
// time, so the device copy of one slab overlaps the receipt of the next and the host holds at
// most one slab whatever the region's shape.
#ifndef DISTARRAY_SERVER_ENGINE_UPLOAD_SESSION_H_
#define DISTARRAY_SERVER_ENGINE_UPLOAD_SESSION_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/index_map.h"
#include "server/ops/array.h"
#include "server/ops/chunk_index.h"
#include "server/ops/slab_plan.h"

namespace distarray {

class Engine;

class UploadSession {
 public:
  // Where the bytes go: a new, unregistered array; a registered array's own buffers; or a copy
  // of a registered array whose buffers another array also holds (a reshard's result sharing
  // them), which replaces it under its handle when the upload finishes.
  enum class Target { kNewArray, kInPlace, kCopyOnWrite };

  // `array` is the target; `region` is where the bytes go, in global coordinates, walked in
  // NumPy's order: descending along the axes marked so (a region slice with a negative step), so
  // the stream's first bytes land where NumPy's a[region] = values puts values' first elements.
  UploadSession(Engine& engine, Array array, Target target, RegionSelection region);
  // The same for a region walked in ascending order along every axis.
  UploadSession(Engine& engine, Array array, Target target, Box region);

  // INVALID_ARGUMENT when the stream carries more bytes than the region holds.
  absl::Status Append(absl::string_view bytes);
  // INVALID_ARGUMENT when fewer bytes arrived than the region holds; otherwise registers a new
  // array (ALREADY_EXISTS if its name was taken meanwhile) or returns the updated one.
  absl::StatusOr<ArrayPtr> Finish();

  int64_t expected_bytes() const { return expected_bytes_; }
  int64_t element_size() const { return element_size_; }

 private:
  // Writes the walker's current slab, whose bytes (in the client's order) start at `slab_data`,
  // to the chunks it meets, and moves the walker on.
  absl::Status FlushSlab(const char* slab_data);

  Engine& engine_;
  Array array_;
  const Target target_;
  const int64_t element_size_;
  const IndexMap map_;        // the target's chunks, and an index of them, so a slab finds the
  const ChunkIndex index_;    // chunks it meets without a scan of every chunk
  absl::Status plan_status_;  // a region whose byte count does not fit (not for valid arrays)
  std::optional<SlabWalker> walker_;  // the slab being filled; set when plan_status_ is OK
  int64_t expected_bytes_ = 0;
  int64_t received_bytes_ = 0;
  std::string slab_;  // a slab's bytes as they arrive over several messages
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_ENGINE_UPLOAD_SESSION_H_
