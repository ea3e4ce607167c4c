// Slabs: how a download or an upload walks a region in pieces of bounded size. A slab is a
// C-order block of the region's values as the client sees them (NumPy's order, descending along
// axes the client's slice walks downwards): single indices on the outer axes, a run of indices on
// the split axis, and the inner axes whole. The split axis is the outermost one whose inner axes
// fit the target, so a slab holds at most max(target, one element) bytes whatever the shape (one
// huge row is split too), and the host memory a transfer holds is O(target).
//
// Header-only: the walker is small, and the engine and the tests both use it.
#ifndef DISTARRAY_SERVER_OPS_SLAB_PLAN_H_
#define DISTARRAY_SERVER_OPS_SLAB_PLAN_H_

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/box.h"
#include "common/checked.h"
#include "common/index_map.h"
#include "common/sizes.h"
#include "common/status_macros.h"
#include "common/strided_box.h"

namespace distarray {

inline constexpr int64_t kDownloadSlabTargetBytes = 16_MiB;
inline constexpr int64_t kUploadSlabTargetBytes = 8_MiB;

namespace slab_internal {
inline std::atomic<int64_t> download_target_override{0};
inline std::atomic<int64_t> upload_target_override{0};
}  // namespace slab_internal

// The slab targets in use: the constants above, unless a test made them smaller so that small
// arrays span many slabs.
inline int64_t DownloadSlabTargetBytes() {
  const int64_t t = slab_internal::download_target_override.load(std::memory_order_relaxed);
  return t > 0 ? t : kDownloadSlabTargetBytes;
}
inline int64_t UploadSlabTargetBytes() {
  const int64_t t = slab_internal::upload_target_override.load(std::memory_order_relaxed);
  return t > 0 ? t : kUploadSlabTargetBytes;
}
// For tests only; 0 restores a default.
inline void SetSlabTargetsForTesting(int64_t download_bytes, int64_t upload_bytes) {
  slab_internal::download_target_override.store(download_bytes);
  slab_internal::upload_target_override.store(upload_bytes);
}

// `box` (ascending, local coordinates of a dense C-order array of `shape`) with the coordinates
// of each axis where mirrored[d] reflected (x -> shape[d] - 1 - x). Visiting it in C order visits
// the box's elements in ascending order and yields where each sits in the mirrored array: the
// copy between a dense ascending piece and a slab held in the client's order.
inline StridedBox MakeMirroredStridedBox(const Shape& shape, const Box& box,
                                         const std::vector<bool>& mirrored) {
  StridedBox out = MakeStridedBox(shape, box);
  const std::vector<int64_t> strides = DenseStrides(shape);
  for (int d = 0; d < out.rank; ++d) {
    if (!mirrored[d]) continue;
    // All values lie inside the array (the box is), so nothing here can wrap.
    out.offset += (shape[d] - 1 - 2 * box[d].start) * strides[d];
    out.stride[d] = -out.stride[d];
  }
  return out;
}

// Walks a normalized region slab by slab in the client's order.
class SlabWalker {
 public:
  // INVALID_ARGUMENT naming `field` if the region's byte count does not fit in int64 (it cannot
  // for a region of a valid array; checked all the same since the counts come from a client).
  static absl::StatusOr<SlabWalker> Create(RegionSelection region, int64_t element_size,
                                           int64_t target_bytes, absl::string_view field) {
    SlabWalker w;
    w.region_ = std::move(region);
    const Box& box = w.region_.box;
    const int rank = static_cast<int>(box.size());
    w.region_.descending.resize(rank, false);
    Shape counts = BoxShape(box);
    ASSIGN_OR_RETURN(w.total_bytes_, CheckedProductOf(counts, element_size, field));
    target_bytes = std::max<int64_t>(target_bytes, 1);
    if (w.total_bytes_ == 0) {
      // A zero-size region: no slab at all.
      w.box_ = w.region_.box;
      w.mirrored_.assign(rank, false);
      w.done_ = true;
      return w;
    }
    if (rank == 0) {
      w.split_ = -1;
      w.Update();
      return w;
    }
    // The outermost axis whose inner axes (one index of it) fit the target; the innermost if
    // not even one element does.
    int64_t inner = element_size;  // bytes of one index of axis d, for d walking outwards
    w.split_ = rank - 1;
    w.split_bytes_ = element_size;
    for (int d = rank - 1; d >= 0; --d) {
      if (inner > target_bytes) break;
      w.split_ = d;
      w.split_bytes_ = inner;
      if (d > 0) {
        auto next = MulOrNull(inner, counts[d]);
        if (!next) break;  // the inner block passes any target
        inner = *next;
      }
    }
    w.run_ = std::clamp<int64_t>(target_bytes / w.split_bytes_, 1, counts[w.split_]);
    w.position_.assign(w.split_ + 1, 0);
    w.Update();
    return w;
  }

  int64_t total_bytes() const { return total_bytes_; }
  bool done() const { return done_; }
  // The current slab in global coordinates (ascending ranges), its size, and per axis whether
  // its values run downwards (only axes along which it has more than one element).
  const Box& box() const { return box_; }
  int64_t bytes() const { return bytes_; }
  const std::vector<bool>& mirrored() const { return mirrored_; }
  bool any_mirrored() const { return any_mirrored_; }

  void Next() {
    if (split_ < 0) {
      done_ = true;
      return;
    }
    position_[split_] += run_;
    if (position_[split_] >= region_.box[split_].count) {
      position_[split_] = 0;
      int d = split_ - 1;
      for (; d >= 0; --d) {
        if (++position_[d] < region_.box[d].count) break;
        position_[d] = 0;
      }
      if (d < 0) {
        done_ = true;
        return;
      }
    }
    Update();
  }

 private:
  SlabWalker() = default;

  // Sets box_, bytes_ and mirrored_ from position_ (logical, client-order indices).
  void Update() {
    const Box& region = region_.box;
    const int rank = static_cast<int>(region.size());
    box_ = region;
    mirrored_.assign(rank, false);
    any_mirrored_ = false;
    bytes_ = split_ < 0 ? total_bytes_ : split_bytes_;
    for (int d = 0; d <= split_; ++d) {
      const Range& r = region[d];
      const int64_t length = d < split_ ? 1 : std::min(run_, r.count - position_[d]);
      // The ascending index of the run's lowest element: the run's first logical index when
      // ascending, its last when the client walks the axis downwards.
      const int64_t first = region_.descending[d] ? r.count - position_[d] - length : position_[d];
      box_[d] = Range{r.start + first * r.step, length == 1 ? 1 : r.step, length};
      if (d == split_) bytes_ *= length;
    }
    for (int d = std::max(split_, 0); d < rank; ++d) {
      mirrored_[d] = region_.descending[d] && box_[d].count > 1;
      any_mirrored_ = any_mirrored_ || mirrored_[d];
    }
  }

  RegionSelection region_;
  int64_t total_bytes_ = 0;
  int split_ = -1;                 // the axis a slab runs along; -1 for a 0-d region (one slab)
  int64_t split_bytes_ = 0;        // bytes of one index of the split axis within a slab
  int64_t run_ = 1;                // indices of the split axis per slab
  std::vector<int64_t> position_;  // logical index of each axis up to the split axis
  bool done_ = false;
  Box box_;
  int64_t bytes_ = 0;
  std::vector<bool> mirrored_;
  bool any_mirrored_ = false;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_SLAB_PLAN_H_
