#include "server/service/array_info.h"

#include "common/proto_convert.h"

namespace distarray {

v1::ArrayInfo ToArrayInfo(const Array& array) {
  v1::ArrayInfo info;
  info.set_handle(array.handle);
  info.set_name(array.name);
  *info.mutable_shape() = ToProto(array.shape);
  info.set_dtype(ToProto(array.dtype));
  *info.mutable_index_map() = ToProto(array.index_map());
  info.set_mode(ToProto(array.mode));
  for (const auto& [device, bytes] : array.bytes_per_device()) {
    (*info.mutable_bytes_per_device())[device] = bytes;
  }
  return info;
}

}  // namespace distarray
