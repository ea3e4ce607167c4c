#include "common/proto_convert.h"
#include "absl/strings/string_view.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace distarray {

Shape FromProto(const v1::Shape& shape) { return Shape(shape.dims().begin(), shape.dims().end()); }

v1::Shape ToProto(const Shape& shape) {
  v1::Shape out;
  for (int64_t d : shape) out.add_dims(d);
  return out;
}

absl::StatusOr<DType> DTypeFromProto(v1::DType dtype, absl::string_view field) {
  const auto value = static_cast<DType>(dtype);
  if (dtype <= v1::DTYPE_UNSPECIFIED || static_cast<int>(dtype) > kMaxDType) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": a dtype is required"));
  }
  if (!IsImplemented(value)) {
    return absl::UnimplementedError(
        absl::StrCat(field, ": dtype ", DTypeName(value), " is not implemented yet"));
  }
  return value;
}

absl::StatusOr<Mode> ModeFromProto(v1::Mode mode, absl::string_view field) {
  if (mode < v1::MODE_REPLICA || mode > v1::MODE_MIN) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": unknown mode ", mode));
  }
  return static_cast<Mode>(mode);
}

absl::StatusOr<Scalar> ScalarFromProto(const v1::Scalar& scalar, absl::string_view field) {
  switch (scalar.value_case()) {
    case v1::Scalar::kBoolValue:
      return Scalar::Bool(scalar.bool_value());
    case v1::Scalar::kIntValue:
      return Scalar::Int(scalar.int_value());
    case v1::Scalar::kUintValue:
      return Scalar::UInt(scalar.uint_value());
    case v1::Scalar::kFloatValue:
      return Scalar::Float(scalar.float_value());
    case v1::Scalar::kComplexValue:
      return Scalar::ComplexValue(scalar.complex_value().real(), scalar.complex_value().imag());
    default:
      return absl::InvalidArgumentError(absl::StrCat(field, ": the scalar has no value"));
  }
}

v1::Scalar ToProto(const Scalar& scalar) {
  v1::Scalar out;
  switch (scalar.kind) {
    case Scalar::Kind::kBool:
      out.set_bool_value(scalar.b);
      break;
    case Scalar::Kind::kInt:
      out.set_int_value(scalar.i);
      break;
    case Scalar::Kind::kUInt:
      out.set_uint_value(scalar.u);
      break;
    case Scalar::Kind::kFloat:
      out.set_float_value(scalar.f);
      break;
    case Scalar::Kind::kComplex:
      out.mutable_complex_value()->set_real(scalar.f);
      out.mutable_complex_value()->set_imag(scalar.imag);
      break;
  }
  return out;
}

v1::Slice ToProtoSlice(const Range& range) {
  v1::Slice out;
  out.set_start(range.start);
  out.set_stop(range.last() + 1);
  out.set_step(range.step);
  return out;
}

v1::IndexMap ToProto(const IndexMap& index_map) {
  v1::IndexMap out;
  for (const ChunkSpec& chunk : index_map) {
    v1::Chunk* c = out.add_chunks();
    c->set_device(chunk.device);
    for (const Range& r : chunk.box) *c->add_slices() = ToProtoSlice(r);
  }
  return out;
}

v1::Region ToProtoRegion(const Box& box) {
  v1::Region out;
  for (const Range& r : box) *out.add_slices() = ToProtoSlice(r);
  return out;
}

}  // namespace distarray
