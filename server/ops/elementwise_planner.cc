#include "server/ops/elementwise_planner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/promotion.h"
#include "common/status_macros.h"

namespace distarray {
namespace {

std::string OperandField(int i) { return absl::StrCat("spec.operands[", i, "]"); }

absl::Status NotBuilt(absl::string_view what, DType dtype, absl::string_view detail = "") {
  return absl::UnimplementedError(
      absl::StrCat("spec.op: ", what, " on ", DTypeName(dtype), detail, " is not implemented yet"));
}

// The compute dtype of an op from its operands' promoted dtype, by the op's rule (NumPy's loop
// selection).
DType ComputeDType(ufunc::TypeRule rule, DType promoted) {
  switch (rule) {
    case ufunc::TypeRule::kBoolAsInt8:
    case ufunc::TypeRule::kShift:
      return promoted == DType::kBool ? DType::kInt8 : promoted;
    case ufunc::TypeRule::kTrueDivide:
      return IsFloating(promoted) || IsComplex(promoted) ? promoted : DType::kFloat64;
    case ufunc::TypeRule::kFloatMath:
      return FloatFor(promoted);
    default:
      return promoted;
  }
}

// The result's layout when no operand has the result's shape: the first array operand's chunks
// stretched over the axes it broadcasts along (and the leading axes it lacks).
IndexMap ExpandedMap(const ArrayMeta& array, const Shape& result_shape) {
  const size_t offset = result_shape.size() - array.shape.size();
  IndexMap map;
  for (const ChunkSpec& chunk : array.map) {
    ChunkSpec expanded{chunk.device, {}};
    for (size_t d = 0; d < result_shape.size(); ++d) {
      if (d < offset || (array.shape[d - offset] == 1 && result_shape[d] != 1)) {
        expanded.box.push_back(Range{0, 1, result_shape[d]});
      } else {
        expanded.box.push_back(chunk.box[d - offset]);
      }
    }
    map.push_back(std::move(expanded));
  }
  return map;
}

// Fills the operand's aligned map and per-chunk views against the result's layout.
void AlignOperand(const ArrayMeta& array, const Shape& result_shape, const IndexMap& result_map,
                  ElementwisePlan::Operand& operand) {
  const int rank = static_cast<int>(result_shape.size());
  const int offset = rank - static_cast<int>(array.shape.size());
  for (const ChunkSpec& chunk : result_map) {
    ChunkSpec aligned{chunk.device, {}};
    for (int k = 0; k < static_cast<int>(array.shape.size()); ++k) {
      const bool broadcast = array.shape[k] == 1 && result_shape[k + offset] != 1;
      aligned.box.push_back(broadcast ? Range{0, 1, 1} : chunk.box[k + offset]);
    }
    const std::vector<int64_t> strides = DenseStrides(BoxShape(aligned.box));
    StridedBox view;
    view.rank = rank;
    for (int d = 0; d < rank; ++d) {
      view.count[d] = chunk.box[d].count;
      const int k = d - offset;
      const bool broadcast = k < 0 || (array.shape[k] == 1 && result_shape[d] != 1);
      view.stride[d] = broadcast ? 0 : strides[k];
    }
    operand.contiguous.push_back(NumElements(aligned.box) == NumElements(chunk.box));
    operand.views.push_back(view);
    operand.aligned_map.push_back(std::move(aligned));
  }
  operand.in_place = array.mode == Mode::kReplica && array.map == operand.aligned_map;
}

}  // namespace

absl::StatusOr<Shape> BroadcastShape(const std::vector<OperandMeta>& operands) {
  Shape result;
  int from = -1;  // the operand that set the result's shape so far, for messages
  for (int i = 0; i < static_cast<int>(operands.size()); ++i) {
    const ArrayMeta* a = operands[i].array;
    if (a == nullptr) continue;
    if (from < 0) {
      result = a->shape;
      from = i;
      continue;
    }
    const Shape& s = a->shape;
    Shape merged(std::max(result.size(), s.size()));
    for (size_t d = 0; d < merged.size(); ++d) {
      const int64_t x =
          d + result.size() >= merged.size() ? result[d + result.size() - merged.size()] : 1;
      const int64_t y = d + s.size() >= merged.size() ? s[d + s.size() - merged.size()] : 1;
      if (x != y && x != 1 && y != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat(OperandField(i), ": shape ", ShapeString(s), " does not broadcast with ",
                         ShapeString(result), " (of the operands before it)"));
      }
      merged[d] = x == 1 ? y : x;
    }
    result = std::move(merged);
  }
  if (static_cast<int>(result.size()) > kMaxRank) {
    return absl::InvalidArgumentError(absl::StrCat("spec.operands: the result would have ",
                                                   result.size(), " axes; at most ", kMaxRank,
                                                   " are supported"));
  }
  return result;
}

absl::StatusOr<ElementwisePlan> PlanElementwise(const ElementwiseInput& input) {
  ElementwisePlan plan;
  plan.op = input.op;
  const ElementwiseOpInfo* info = input.op ? &OpInfo(*input.op) : nullptr;
  const int arity = info ? info->arity : 1;
  const std::string name = info ? info->name : "astype";
  const int count = static_cast<int>(input.operands.size());
  if (count != arity) {
    return absl::InvalidArgumentError(absl::StrCat("spec.operands: ", name, " takes ", arity,
                                                   " operand", arity == 1 ? "" : "s", ", got ",
                                                   count));
  }
  int first_array = -1;
  for (int i = 0; i < count; ++i) {
    if (input.operands[i].array != nullptr && first_array < 0) first_array = i;
  }
  if (first_array < 0) {
    return absl::InvalidArgumentError("spec.operands: at least one operand must be an array");
  }
  for (int i = 0; i < count; ++i) {
    const ArrayMeta* a = input.operands[i].array;
    if (a != nullptr && !IsImplemented(a->dtype)) return NotBuilt(name, a->dtype);
  }

  // Dtypes: the promoted dtype of the operands that promote (where's condition does not), the
  // compute dtype by the op's rule, and the result's.
  DType loop_dtype = DType::kUnspecified;
  if (!info) {
    if (input.astype == DType::kUnspecified) {
      return absl::InvalidArgumentError("spec.dtype: astype needs the target dtype");
    }
    if (!IsImplemented(input.astype)) return NotBuilt("astype", input.astype, " (target)");
    plan.compute = input.operands[0].array->dtype;
    plan.result_dtype = input.astype;
    plan.storage = plan.compute;
  } else {
    if (input.astype != DType::kUnspecified) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.dtype: only astype takes a dtype, not ", name));
    }
    const int first_promoted = info->rule == ufunc::TypeRule::kWhere ? 1 : 0;
    std::optional<DType> promoted;
    for (int i = first_promoted; i < count; ++i) {
      const ArrayMeta* a = input.operands[i].array;
      if (a == nullptr) continue;
      if (!promoted) {
        promoted = a->dtype;
      } else {
        std::optional<DType> p = PromoteTypes(*promoted, a->dtype);
        if (!p) return NotBuilt(name, a->dtype);
        promoted = *p;
      }
    }
    // Weak scalars: a where with arrays only in the condition takes its dtype from them.
    if (!promoted) {
      const Scalar::Kind k = input.operands[first_promoted].scalar.kind;
      promoted = k == Scalar::Kind::kBool      ? DType::kBool
                 : k == Scalar::Kind::kFloat   ? DType::kFloat64
                 : k == Scalar::Kind::kComplex ? DType::kComplex128
                 : k == Scalar::Kind::kUInt && input.operands[first_promoted].scalar.u > INT64_MAX
                     ? DType::kUInt64
                     : DType::kInt64;
    }
    const DType arrays_only = *promoted;
    for (int i = first_promoted; i < count; ++i) {
      if (input.operands[i].array == nullptr) {
        promoted = PromoteWithScalar(*promoted, input.operands[i].scalar.kind);
      }
    }
    plan.compute = ComputeDType(info->rule, *promoted);
    if (info->rule == ufunc::TypeRule::kFloatMath && *promoted == arrays_only) {
      // NumPy picks the first float loop every input casts to safely: the promotion of each
      // array's own float (hypot(int8, uint8) is float16, not float32 via int16). A scalar that
      // lifted the dtype (a float with integer arrays) leaves float64.
      std::optional<DType> loop;
      for (int i = 0; i < count; ++i) {
        const ArrayMeta* a = input.operands[i].array;
        if (a == nullptr) continue;
        loop = loop ? PromoteTypes(*loop, FloatFor(a->dtype)) : FloatFor(a->dtype);
      }
      if (loop) plan.compute = *loop;
    }
    if (!IsImplemented(plan.compute)) {
      return NotBuilt(name, *promoted,
                      plan.compute == *promoted
                          ? ""
                          : absl::StrCat(" (NumPy computes it in ", DTypeName(plan.compute),
                                         "; astype to float32 first)"));
    }
    if (IsComplex(plan.compute) && info->complex == ufunc::ComplexSupport::kNumPyLacks) {
      return absl::InvalidArgumentError(absl::StrCat("spec.op: ", name, " is not defined for ",
                                                     DTypeName(plan.compute),
                                                     " (NumPy has no complex loop for it)"));
    }
    // The 16-bit float loops compute in float32, where the next float after a is a float32 that
    // rounds back to a: nextafter would be the identity.
    if (info->id == ElementwiseOpId::kNextafter &&
        (plan.compute == DType::kFloat16 || plan.compute == DType::kBFloat16)) {
      return NotBuilt(name, plan.compute, " (astype to float32 first)");
    }
    // NumPy's loop dtype; a 16-bit float loop computes in float32 on operands stored in 16 bits.
    loop_dtype = plan.compute;
    plan.compute = KernelDType(loop_dtype);
    std::optional<DType> result = ElementwiseResultDType(*input.op, plan.compute);
    if (!result) {
      const char* takes = info->rule == ufunc::TypeRule::kShift       ? "integers"
                          : info->rule == ufunc::TypeRule::kNoFloat   ? "integers and bool"
                          : info->rule == ufunc::TypeRule::kFloatMath ? "floats"
                                                                      : "numbers (not bool)";
      return absl::InvalidArgumentError(absl::StrCat("spec.op: ", name, " is not defined for ",
                                                     DTypeName(loop_dtype), "; it takes ", takes));
    }
    plan.storage = loop_dtype;
    plan.result_dtype = *result == plan.compute ? plan.storage : *result;
  }

  // Scalars are checked against the dtype they will be read in.
  plan.operands.resize(count);
  for (int i = 0; i < count; ++i) {
    const bool condition = info && info->rule == ufunc::TypeRule::kWhere && i == 0;
    ElementwisePlan::Operand& op = plan.operands[i];
    op.read_dtype = condition ? DType::kBool : plan.storage;
    if (input.operands[i].array == nullptr) {
      op.is_scalar = true;
      op.scalar = input.operands[i].scalar;
      if (!condition) {
        RETURN_IF_ERROR(
            ValidateWeakScalar(op.scalar, plan.compute, absl::StrCat(OperandField(i), ".scalar")));
        // A weak scalar takes the loop's dtype first, as in NumPy: float16 + 0.1 adds
        // float16(0.1), not the float32 nearest 0.1.
        if (IsHalf(loop_dtype)) {
          op.scalar = Scalar::Float(DispatchStorageDType(loop_dtype, [&](auto tag) {
            using H = decltype(tag);
            return static_cast<double>(static_cast<float>(op.scalar.As<H>()));
          }));
        }
      }
    }
  }

  // Shape and layout.
  ASSIGN_OR_RETURN(plan.result_shape, BroadcastShape(input.operands));
  if (input.out != nullptr) {
    if (input.result_map) {
      return absl::InvalidArgumentError(
          "spec.result_index_map: give either out or result_index_map, not both");
    }
    if (input.out->shape != plan.result_shape) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.out: shape ", ShapeString(input.out->shape), " is not the result's ",
                       ShapeString(plan.result_shape)));
    }
    if (input.out->dtype != plan.result_dtype) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.out: dtype ", DTypeName(input.out->dtype), " is not the result's ",
                       DTypeName(plan.result_dtype), " (cast the result with astype)"));
    }
    plan.result_map = input.out->map;
  } else if (input.result_map) {
    plan.result_map = *input.result_map;
  } else {
    const ArrayMeta* same_shape = nullptr;
    for (const OperandMeta& o : input.operands) {
      if (o.array != nullptr && o.array->shape == plan.result_shape) {
        same_shape = o.array;
        break;
      }
    }
    plan.result_map = same_shape != nullptr
                          ? same_shape->map
                          : ExpandedMap(*input.operands[first_array].array, plan.result_shape);
  }

  // A zero-size result has no chunks (docs/design.md), whatever an operand of another shape
  // would stretch to: with no result chunk, no operand is moved and no kernel runs.
  if (NumElements(plan.result_shape) == 0) plan.result_map.clear();

  for (int i = 0; i < count; ++i) {
    const ArrayMeta* a = input.operands[i].array;
    if (a == nullptr) continue;
    ElementwisePlan::Operand& op = plan.operands[i];
    AlignOperand(*a, plan.result_shape, plan.result_map, op);
    op.cast = a->dtype != op.read_dtype;
  }
  return plan;
}

}  // namespace distarray
