// Conversions between distarray.v1 messages and the engine's types.
#ifndef DISTARRAY_COMMON_PROTO_CONVERT_H_
#define DISTARRAY_COMMON_PROTO_CONVERT_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/box.h"
#include "common/dtype.h"
#include "common/index_map.h"
#include "common/mode.h"
#include "common/scalar.h"
#include "distarray/v1/distarray.pb.h"

namespace distarray {

Shape FromProto(const v1::Shape& shape);
v1::Shape ToProto(const Shape& shape);

// INVALID_ARGUMENT for DTYPE_UNSPECIFIED or an unknown value, UNIMPLEMENTED for a declared dtype
// the engine cannot compute with yet; `field` names the request field.
absl::StatusOr<DType> DTypeFromProto(v1::DType dtype, absl::string_view field);
inline v1::DType ToProto(DType dtype) { return static_cast<v1::DType>(dtype); }

absl::StatusOr<Mode> ModeFromProto(v1::Mode mode, absl::string_view field);
inline v1::Mode ToProto(Mode mode) { return static_cast<v1::Mode>(mode); }

// INVALID_ARGUMENT when no value is set.
absl::StatusOr<Scalar> ScalarFromProto(const v1::Scalar& scalar, absl::string_view field);
v1::Scalar ToProto(const Scalar& scalar);

v1::Slice ToProtoSlice(const Range& range);
v1::IndexMap ToProto(const IndexMap& index_map);
v1::Region ToProtoRegion(const Box& box);

}  // namespace distarray

#endif  // DISTARRAY_COMMON_PROTO_CONVERT_H_
