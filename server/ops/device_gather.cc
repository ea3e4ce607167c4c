#include "server/ops/device_gather.h"

namespace distarray {

DType BitCopyDType(DType dtype) {
  switch (DTypeSize(dtype)) {
    case 1:
      return DType::kUInt8;
    case 2:
      return DType::kUInt16;
    case 4:
      return DType::kUInt32;
    case 8:
      return DType::kUInt64;
    default:
      return DType::kComplex128;
  }
}

BufferBox FlatRun(const BufferPtr& buffer, int64_t buffer_elements, int64_t offset, int64_t count) {
  return BufferBox{buffer, Shape{buffer_elements}, Box{Range{offset, 1, count}}};
}

bool IsForwardRun(const StridedBox& view) {
  int64_t expected = 1;
  for (int d = view.rank - 1; d >= 0; --d) {
    if (view.count[d] == 1) continue;
    if (view.stride[d] != expected) return false;
    expected *= view.count[d];
  }
  return true;
}

absl::Status Gather(DeviceOps& ops, DType dtype, const BufferPtr& src, int64_t src_elements,
                    const StridedBox& view, const BufferPtr& dst, int64_t n) {
  if (IsForwardRun(view)) {
    return ops.Copy(dtype,
                    {BoxCopy{FlatRun(src, src_elements, view.offset, n), FlatRun(dst, n, 0, n)}});
  }
  const DType bits = BitCopyDType(dtype);
  const ElementwiseArg arg{src, view, /*contiguous=*/false, Scalar{}};
  return ops.Elementwise(ElementwiseOpId::kPositive, bits, bits, dst, n, {arg});
}

}  // namespace distarray
