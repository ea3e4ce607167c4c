// What the planners know of an array operand: its metadata, never its buffers, so planning is a
// pure function that unit tests call without devices.
#ifndef DISTARRAY_SERVER_OPS_OPERAND_H_
#define DISTARRAY_SERVER_OPS_OPERAND_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/box.h"
#include "common/dtype.h"
#include "common/index_map.h"
#include "common/mode.h"
#include "common/scalar.h"

namespace distarray {

struct ArrayMeta {
  Shape shape;
  DType dtype = DType::kFloat32;
  Mode mode = Mode::kReplica;
  IndexMap map;
};

// An operand of an op: an array, or a (weak) scalar.
struct OperandMeta {
  const ArrayMeta* array = nullptr;  // null: `scalar`
  Scalar scalar;
};

inline std::string ShapeString(const Shape& shape) {
  return absl::StrCat("(", absl::StrJoin(shape, ", "), shape.size() == 1 ? ",)" : ")");
}

}  // namespace distarray

#endif  // DISTARRAY_SERVER_OPS_OPERAND_H_
