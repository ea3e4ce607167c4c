// CreateArray's fills (v1::Fill: zeros, ones, full, arange, linspace, eye, tri and the
// counter-based random draws), shared by the CreateArray RPC and a program's create statement.
#ifndef DISTARRAY_SERVER_OPS_FILL_H_
#define DISTARRAY_SERVER_OPS_FILL_H_

#include "absl/status/status.h"
#include "distarray/v1/distarray.pb.h"
#include "server/backend/device_ops.h"
#include "server/ops/array.h"
#include "server/ops/chunk_index.h"

namespace distarray {

// INVALID_ARGUMENT naming the fill's field ("fill.arange: ...") where `fill` cannot fill an array
// of `dtype` and `shape`: values outside the dtype, non-finite parameters, a draw the dtype cannot
// hold.
absl::Status ValidateFill(const v1::Fill& fill, DType dtype, const Shape& shape);

// Enqueues `fill` into every chunk of `array` (allocated, REPLICA values): a generated fill from
// each element's global index, so any layout holds the same values. `stop` is checked per chunk.
absl::Status LaunchFill(DeviceOps& ops, const Array& array, const v1::Fill& fill,
                        const StopCheck& stop = {});

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_FILL_H_
