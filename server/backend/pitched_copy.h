// A box copy seen as rows of contiguous elements at fixed pitches: the shape cudaMemcpy2DAsync
// moves at the device-copy rate, where an element-by-element kernel spends its time on index
// arithmetic (a slice u[1:-1, 1:-1] of a row-major grid is such a copy). Pure; CPU-tested.
#ifndef DISTARRAY_SERVER_BACKEND_PITCHED_COPY_H_
#define DISTARRAY_SERVER_BACKEND_PITCHED_COPY_H_

#include <cstdint>
#include <optional>

#include "common/strided_box.h"

namespace distarray {

struct PitchedCopy {
  int64_t src_offset = 0, dst_offset = 0;  // elements
  int64_t src_pitch = 0, dst_pitch = 0;    // elements from one row's start to the next
  int64_t width = 0;                       // contiguous elements per row
  int64_t rows = 0;
};

// `src` and `dst` have the same counts per axis (a BoxCopy's two sides). nullopt when either
// side's innermost moving axis is not contiguous, or its outer axes do not step by one pitch.
inline std::optional<PitchedCopy> AsPitched(const StridedBox& src, const StridedBox& dst) {
  if (src.rank != dst.rank) return std::nullopt;
  PitchedCopy copy{src.offset, dst.offset, 0, 0, 1, 1};
  int d = src.rank - 1;
  // The row: the innermost axes that are contiguous in both, merged.
  for (; d >= 0; --d) {
    if (src.count[d] != dst.count[d]) return std::nullopt;
    if (src.count[d] == 1) continue;
    if (src.stride[d] != copy.width || dst.stride[d] != copy.width) break;
    copy.width *= src.count[d];
  }
  // The rows: the next moving axis sets the pitches; every outer one must continue them.
  bool pitched = false;
  for (; d >= 0; --d) {
    if (src.count[d] != dst.count[d]) return std::nullopt;
    if (src.count[d] == 1) continue;
    if (!pitched) {
      if (src.stride[d] < copy.width || dst.stride[d] < copy.width) return std::nullopt;
      copy.src_pitch = src.stride[d];
      copy.dst_pitch = dst.stride[d];
      copy.rows = src.count[d];
      pitched = true;
      continue;
    }
    if (src.stride[d] != copy.src_pitch * copy.rows ||
        dst.stride[d] != copy.dst_pitch * copy.rows) {
      return std::nullopt;
    }
    copy.rows *= src.count[d];
  }
  if (!pitched) {
    copy.src_pitch = copy.width;
    copy.dst_pitch = copy.width;
  }
  return copy;
}

}  // namespace distarray

#endif  // DISTARRAY_SERVER_BACKEND_PITCHED_COPY_H_
