// The CPU versions of the kernels: the host backend runs them on its device threads, and the
// engine uses CopyBoxOnHost to assemble downloads.
#ifndef DISTARRAY_SERVER_KERNELS_HOST_KERNELS_H_
#define DISTARRAY_SERVER_KERNELS_HOST_KERNELS_H_

#include <cstdint>

#include "common/box.h"
#include "common/scalar.h"
#include "common/strided_box.h"
#include "server/kernels/ops.h"

namespace distarray {

// Visits the element offsets of two boxes with equal counts in C order; the innermost axis runs
// as a tight loop.
template <typename Fn>
void ForEachBoxPair(const StridedBox& a, const StridedBox& b, Fn&& fn) {
  if (a.rank == 0) {
    fn(a.offset, b.offset);
    return;
  }
  const int inner = a.rank - 1;
  int64_t index[kMaxRank] = {};
  int64_t outer_count = 1;
  for (int d = 0; d < inner; ++d) outer_count *= a.count[d];
  int64_t base_a = a.offset, base_b = b.offset;
  for (int64_t o = 0; o < outer_count; ++o) {
    for (int64_t i = 0; i < a.count[inner]; ++i) {
      fn(base_a + i * a.stride[inner], base_b + i * b.stride[inner]);
    }
    // Advance the odometer over the outer axes.
    for (int d = inner - 1; d >= 0; --d) {
      base_a += a.stride[d];
      base_b += b.stride[d];
      if (++index[d] < a.count[d]) break;
      base_a -= a.stride[d] * a.count[d];
      base_b -= b.stride[d] * b.count[d];
      index[d] = 0;
    }
  }
}

template <typename T>
void CopyBoxOnHost(const T* src, const StridedBox& src_box, T* dst, const StridedBox& dst_box,
                   Combine combine) {
  if (combine == Combine::kAssign) {
    ForEachBoxPair(src_box, dst_box, [&](int64_t s, int64_t d) { dst[d] = src[s]; });
  } else {
    ForEachBoxPair(src_box, dst_box,
                   [&](int64_t s, int64_t d) { dst[d] = ApplyCombine(combine, dst[d], src[s]); });
  }
}

template <typename T>
void FillBoxOnHost(T* dst, const StridedBox& box, T value) {
  ForEachBoxPair(box, box, [&](int64_t d, int64_t) { dst[d] = value; });
}

// Fills a chunk's dense buffer; element j of the chunk is global linear index
// sum_d (chunk_box[d].start + i_d * chunk_box[d].step) * global_stride[d].
template <typename T>
void FillGeneratedOnHost(T* dst, const Shape& global_shape, const Box& chunk_box,
                         const Generator& generator) {
  const StridedBox global = MakeStridedBox(global_shape, chunk_box);
  StridedBox dense = global;
  dense.offset = 0;
  const std::vector<int64_t> strides = DenseStrides(BoxShape(chunk_box));
  for (int d = 0; d < dense.rank; ++d) dense.stride[d] = strides[d];
  ForEachBoxPair(global, dense,
                 [&](int64_t g, int64_t d) { dst[d] = GeneratedValue<T>(generator, g); });
}

}  // namespace distarray

#endif  // DISTARRAY_SERVER_KERNELS_HOST_KERNELS_H_
