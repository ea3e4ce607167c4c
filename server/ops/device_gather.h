// Moving elements within one device without arithmetic: a dense run as a box, and a strided
// gather (the positive ufunc on a bit-copy dtype, reading through a view that reverses, permutes
// or drops axes). What the indexing, shape and sort ops build their moves from.
#ifndef DISTARRAY_SERVER_OPS_DEVICE_GATHER_H_
#define DISTARRAY_SERVER_OPS_DEVICE_GATHER_H_

#include <cstdint>

#include "absl/status/status.h"
#include "server/backend/device_ops.h"

namespace distarray {

// The unsigned integer dtype (or complex128 for 16 bytes) of `dtype`'s size: a gather through
// positive() in it copies every bit pattern exactly, NaN payloads and bool bytes included.
DType BitCopyDType(DType dtype);

// Elements [offset, offset + count) of a dense buffer of `buffer_elements`, as a box.
BufferBox FlatRun(const BufferPtr& buffer, int64_t buffer_elements, int64_t offset, int64_t count);

// Whether `view` reads consecutive elements upwards from its offset.
bool IsForwardRun(const StridedBox& view);

// dst[i] = src[BoxOffset(view, i)] for the n elements of dst, on src's (and dst's) device. A view
// that is one forward run is a plain device copy.
absl::Status Gather(DeviceOps& ops, DType dtype, const BufferPtr& src, int64_t src_elements,
                    const StridedBox& view, const BufferPtr& dst, int64_t n);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_DEVICE_GATHER_H_
