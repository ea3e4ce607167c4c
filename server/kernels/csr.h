// The per-row arithmetic of CSR blocks (DeviceOps::CsrMatmul, CsrToDense), shared by the host
// loops and the CUDA kernels so both read a client's offsets and columns the same guarded way:
// a row's range is clamped to the entries the block stores, and a column outside the block is
// skipped. A malformed matrix thus gives wrong values, never a read or write outside its buffers.
// CUDA-safe: no Abseil or protobuf.
#ifndef DISTARRAY_SERVER_KERNELS_CSR_H_
#define DISTARRAY_SERVER_KERNELS_CSR_H_

#include <cstdint>

#include "common/complex.h"

namespace distarray::csr {

// Row `row`'s entries [*begin, *end), clamped to [0, capacity] (and end >= begin).
DA_COMPLEX_HD void RowRange(const int64_t* indptr, int64_t row, int64_t capacity, int64_t* begin,
                            int64_t* end) {
  int64_t b = indptr[row];
  int64_t e = indptr[row + 1];
  b = b < 0 ? 0 : (b > capacity ? capacity : b);
  e = e < b ? b : (e > capacity ? capacity : e);
  *begin = b;
  *end = e;
}

// The entry's column, or -1 when it lies outside [0, cols).
template <typename I>
DA_COMPLEX_HD int64_t Column(I stored, int64_t cols) {
  const int64_t column = static_cast<int64_t>(stored);
  return column >= 0 && column < cols ? column : -1;
}

}  // namespace distarray::csr

#endif  // DISTARRAY_SERVER_KERNELS_CSR_H_
