#include "server/ops/reduce_planner.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/ops/reshard_planner.h"

namespace distarray {
namespace {

struct OpRule {
  ReduceKind kind;
  Mode mode;  // how partials combine, and the identity that masks non-owning copies
  const char* name;
  bool blind_to_zeros;  // uncovered elements (zeros) cannot change the result
};

absl::StatusOr<OpRule> RuleFor(v1::ReduceOp op) {
  switch (op) {
    case v1::REDUCE_OP_SUM:
      return OpRule{ReduceKind::kSum, Mode::kSum, "sum", true};
    case v1::REDUCE_OP_PROD:
      return OpRule{ReduceKind::kProd, Mode::kProd, "prod", false};
    case v1::REDUCE_OP_MAX:
      return OpRule{ReduceKind::kMax, Mode::kMax, "max", false};
    case v1::REDUCE_OP_MIN:
      return OpRule{ReduceKind::kMin, Mode::kMin, "min", false};
    case v1::REDUCE_OP_ALL:
      return OpRule{ReduceKind::kAll, Mode::kMin, "all", false};
    case v1::REDUCE_OP_ANY:
      return OpRule{ReduceKind::kAny, Mode::kMax, "any", true};
    case v1::REDUCE_OP_MEAN:
      return OpRule{ReduceKind::kMean, Mode::kSum, "mean", true};
    case v1::REDUCE_OP_ARGMAX:
      return OpRule{ReduceKind::kMax, Mode::kMax, "argmax", false};
    case v1::REDUCE_OP_ARGMIN:
      return OpRule{ReduceKind::kMin, Mode::kMin, "argmin", false};
    default:
      return absl::InvalidArgumentError(absl::StrCat("spec.op: unknown reduce op ", op));
  }
}

// Reducer<kind, T>::Out, as the kernels define it (server/kernels/reduce_ops.h).
DType ResultDType(ReduceKind kind, DType in) { return ReduceResultDType(kind, in); }

// Axis 0 split evenly over the devices the array uses: a layout with no gaps and no overlaps.
IndexMap CoveringMap(const ArrayMeta& array) {
  std::vector<int> devices;
  for (const ChunkSpec& c : array.map) {
    if (std::find(devices.begin(), devices.end(), c.device) == devices.end()) {
      devices.push_back(c.device);
    }
  }
  if (devices.empty()) devices.push_back(0);
  IndexMap map;
  const Box full = FullBox(array.shape);
  if (array.shape.empty()) return {ChunkSpec{devices[0], {}}};
  const int64_t n = array.shape[0];
  const int64_t parts = std::min<int64_t>(static_cast<int64_t>(devices.size()), n);
  for (int64_t p = 0; p < parts; ++p) {
    const int64_t begin = n * p / parts, end = n * (p + 1) / parts;
    if (begin == end) continue;
    ChunkSpec chunk{devices[p], full};
    chunk.box[0] = Range{begin, 1, end - begin};
    map.push_back(std::move(chunk));
  }
  return map;
}

}  // namespace

absl::StatusOr<ReducePlan> PlanReduce(const ReduceInput& input, const StopCheck& stop) {
  ASSIGN_OR_RETURN(const OpRule rule, RuleFor(input.op));
  if (input.array == nullptr) {
    return absl::InvalidArgumentError("spec.operand: a reduction takes an array, not a scalar");
  }
  const ArrayMeta& array = *input.array;
  const int rank = static_cast<int>(array.shape.size());
  std::vector<bool> reduced(rank, input.axes.empty());
  for (int i = 0; i < static_cast<int>(input.axes.size()); ++i) {
    const int32_t axis = input.axes[i];
    const std::string field = absl::StrCat("spec.axes[", i, "]");
    if (axis < -rank || axis >= rank) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": axis ", axis, " is out of range for an array of ", rank, " axes"));
    }
    const int a = axis < 0 ? axis + rank : axis;
    if (reduced[a]) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": axis ", a, " is repeated"));
    }
    reduced[a] = true;
  }
  const bool arg = input.op == v1::REDUCE_OP_ARGMAX || input.op == v1::REDUCE_OP_ARGMIN;
  if (arg && input.axes.size() > 1 && static_cast<int>(input.axes.size()) != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.axes: ", rule.name,
                     " takes one axis or none (the flattened array), got ", input.axes.size()));
  }
  int64_t reduced_count = 1;
  for (int d = 0; d < rank; ++d) {
    if (reduced[d]) reduced_count *= array.shape[d];
  }
  const bool has_identity = rule.kind != ReduceKind::kMax && rule.kind != ReduceKind::kMin;
  if (reduced_count == 0 && !has_identity) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.axes: ", rule.name, " of a zero-size reduction has no identity (as in NumPy)"));
  }

  ReducePlan plan;
  plan.kind = rule.kind;
  plan.arg = arg;
  plan.in_dtype = array.dtype;
  plan.kernel_dtype = KernelDType(array.dtype);
  const DType kernel_result = arg ? DType::kInt64 : ResultDType(rule.kind, plan.kernel_dtype);
  // NumPy reduces a 16-bit float into its own dtype (sum, mean, max, ...), computing in float32.
  plan.result_dtype = kernel_result == plan.kernel_dtype ? array.dtype : kernel_result;
  plan.extreme_mode = rule.mode;
  plan.scale = reduced_count == 0 ? std::numeric_limits<double>::quiet_NaN()
                                  : 1.0 / static_cast<double>(reduced_count);
  for (int d = 0; d < rank; ++d) {
    if (!reduced[d])
      plan.result_shape.push_back(array.shape[d]);
    else if (input.keepdims)
      plan.result_shape.push_back(1);
  }

  // Zero-size cases: nothing to read. A zero-size result has no chunks; a reduction over no
  // element is its identity everywhere (REPLICA, on device 0: the operand has no chunk to place
  // it by).
  const bool empty_result = NumElements(plan.result_shape) == 0;
  if (empty_result || reduced_count == 0) {
    plan.result_mode = Mode::kReplica;
    if (!empty_result) {
      plan.fill = true;
      switch (rule.kind) {
        case ReduceKind::kProd:
          plan.fill_value = Scalar::Int(1);
          break;
        case ReduceKind::kAll:
          plan.fill_value = Scalar::Bool(true);
          break;
        case ReduceKind::kAny:
          plan.fill_value = Scalar::Bool(false);
          break;
        case ReduceKind::kMean: {
          const double nan = std::numeric_limits<double>::quiet_NaN();
          plan.fill_value =
              IsComplex(plan.result_dtype) ? Scalar::ComplexValue(nan, nan) : Scalar::Float(nan);
          break;
        }
        default:  // sum (max, min, argmax and argmin were refused above)
          plan.fill_value = Scalar::Int(0);
      }
      plan.result_map = {ChunkSpec{0, FullBox(plan.result_shape)}};
    }
    plan.combine_map = plan.result_map;
    return plan;
  }

  // What the kernels read. Partials combine by `rule.mode`, so an operand already in that mode
  // is read as it is (its uncovered elements are the identity); all/any only for bool, where the
  // mode's min/max is the logical and/or.
  const bool mode_passes = array.mode == rule.mode &&
                           !(rule.kind == ReduceKind::kAll && array.dtype != DType::kBool) &&
                           !(rule.kind == ReduceKind::kAny && array.dtype != DType::kBool);
  // Coverage matters unless the operand is read as it is; argmax/argmin need every element in
  // some chunk (an output with no chunk would have no index).
  bool operand_covered = true;
  if (!mode_passes || arg) {
    PlanBudget budget(kDefaultPlanWorkLimit, stop);
    const ChunkIndex index(array.map);
    ASSIGN_OR_RETURN(const SourceSelection cover,
                     SelectSources(array.map, index, FullBox(array.shape), 0, budget, "reduce"));
    operand_covered = cover.covers_target;
  }
  if (!mode_passes || (arg && !operand_covered)) {
    const bool gaps_matter =
        !operand_covered && (arg || !(array.mode == Mode::kReplica && rule.blind_to_zeros));
    // all/any of a non-bool op-mode operand: whether each copy is nonzero says nothing of whether
    // the op over the copies is (MAX of 0 and -1 is 0, yet -1 is truthy), so the logical values
    // are gathered into a layout without overlaps first.
    const bool truth_of_copies = (rule.kind == ReduceKind::kAll || rule.kind == ReduceKind::kAny) &&
                                 array.dtype != DType::kBool && array.mode != Mode::kReplica;
    ASSIGN_OR_RETURN(const std::vector<PlannedFill> overlaps,
                     PlanOwnershipMask(array.map, kDefaultPlanWorkLimit, stop));
    if (gaps_matter || truth_of_copies) {
      plan.prepare = true;
      plan.prepare_map = CoveringMap(array);
      plan.prepare_mode = Mode::kReplica;
    } else if (array.mode != Mode::kReplica || !overlaps.empty()) {
      // Copies after the first of each element are masked with a value the kernel ignores: the
      // op's identity, or for any of non-bool values 0 (MAX's identity, -inf, is truthy).
      plan.prepare = true;
      plan.prepare_map = array.map;
      plan.prepare_mode =
          rule.kind == ReduceKind::kAny && array.dtype != DType::kBool ? Mode::kSum : rule.mode;
    }
  }
  const IndexMap& chunks = plan.prepare ? plan.prepare_map : array.map;

  // Global index weights of the reduced axes (argmax: the flat index over them).
  std::vector<int64_t> weight(rank, 0);
  int64_t w = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (!reduced[d]) continue;
    weight[d] = w;
    w *= array.shape[d];
  }
  for (const ChunkSpec& chunk : chunks) {
    const Shape dense = BoxShape(chunk.box);
    const std::vector<int64_t> strides = DenseStrides(dense);
    ReduceGeometry g;
    ChunkSpec result{chunk.device, {}};
    for (int d = 0; d < rank; ++d) {
      if (reduced[d]) {
        const int r = g.reduced.rank++;
        g.reduced.count[r] = dense[d];
        g.reduced.stride[r] = strides[d];
        g.index.count[r] = dense[d];
        g.index.stride[r] = chunk.box[d].step * weight[d];
        g.index.offset += chunk.box[d].start * weight[d];
        if (input.keepdims) result.box.push_back(Range{0, 1, 1});
      } else {
        const int k = g.kept.rank++;
        g.kept.count[k] = dense[d];
        g.kept.stride[k] = strides[d];
        result.box.push_back(chunk.box[d]);
      }
    }
    g.index.rank = g.reduced.rank;
    // Consecutive when the reduced axes (of more than one element) are the innermost, dense.
    int64_t expected = 1;
    g.reduced_contiguous = true;
    for (int r = g.reduced.rank - 1; r >= 0; --r) {
      if (g.reduced.count[r] == 1) continue;
      if (g.reduced.stride[r] != expected) g.reduced_contiguous = false;
      expected *= g.reduced.count[r];
    }
    plan.geometry.push_back(g);
    plan.result_map.push_back(std::move(result));
  }

  // Partials that never overlap are the values themselves: a REPLICA result, when it reads the
  // same.
  ASSIGN_OR_RETURN(const std::vector<PlannedFill> result_overlaps,
                   PlanOwnershipMask(plan.result_map, kDefaultPlanWorkLimit, stop));
  // REPLICA reads uncovered outputs as zero, the partial mode as its identity: the two agree
  // when the partials cover every output or the op's identity is zero (sum, mean, any). With no
  // chunks at all (a zero-size operand) the partial mode's identity is the answer.
  const Mode partial_mode = arg ? Mode::kMin : rule.mode;
  PlanBudget result_budget(kDefaultPlanWorkLimit, stop);
  const ChunkIndex result_index(plan.result_map);
  ASSIGN_OR_RETURN(const SourceSelection result_cover,
                   SelectSources(plan.result_map, result_index, FullBox(plan.result_shape), 0,
                                 result_budget, "reduce"));
  const bool covered = result_cover.covers_target && !plan.result_map.empty();
  const bool replica =
      result_overlaps.empty() && !plan.result_map.empty() && (covered || rule.blind_to_zeros);
  plan.result_mode = replica ? Mode::kReplica : partial_mode;
  // Combining in the partials' own layout would lose what uncovered outputs read as.
  ArrayMeta result_meta{plan.result_shape, plan.result_dtype, plan.result_mode, plan.result_map};
  plan.combine_map = covered ? plan.result_map : CoveringMap(result_meta);
  return plan;
}

}  // namespace distarray
