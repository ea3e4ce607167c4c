// A flat, fixed-size description of a box inside a dense buffer, passed by value to kernels
// (host loops and CUDA threads alike). CUDA-safe header.
#ifndef DISTARRAY_COMMON_STRIDED_BOX_H_
#define DISTARRAY_COMMON_STRIDED_BOX_H_

#include <cstdint>

namespace distarray {

// The most axes an array has. NumPy allows 64; 16 keeps a view small enough to pass by value to
// every kernel (272 bytes) and covers the array API suite's 9-axis reshapes.
constexpr int kMaxRank = 16;

struct StridedBox {
  int rank = 0;
  int64_t count[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};  // elements between neighbours along each axis of the box
  int64_t offset = 0;             // element offset of the box's first element

#ifdef __CUDACC__
  __host__ __device__
#endif
      int64_t
      size() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= count[d];
    return n;
  }
};

}  // namespace distarray

#endif  // DISTARRAY_COMMON_STRIDED_BOX_H_
