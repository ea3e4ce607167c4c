#include "server/graph/loop_fusion.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/box.h"
#include "common/names.h"
#include "server/graph/interpreter.h"

namespace distarray {
namespace {

// Whether float32 holds every value of `dtype` exactly.
bool FloatHoldsExactly(DType dtype) {
  switch (dtype) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat32:
      return true;
    default:
      return false;
  }
}

v1::Operand OperandOf(const std::string& variable) {
  v1::Operand operand;
  operand.set_variable(variable);
  return operand;
}

// Whether `map` has one chunk on each of `devices` and none elsewhere.
bool IsOnePerDevice(const IndexMap& map, absl::Span<const int> devices) {
  if (map.size() != devices.size()) return false;
  for (size_t i = 0; i < map.size(); ++i) {
    if (std::find(devices.begin(), devices.end(), map[i].device) == devices.end()) return false;
    for (size_t j = 0; j < i; ++j) {
      if (map[j].device == map[i].device) return false;
    }
  }
  return true;
}

// Whether `map` splits `shape` into disjoint chunks that cover it, one on each of `devices`:
// what a fused loop runs over, each device its chunk.
bool IsOneChunkPerDevice(const IndexMap& map, const Shape& shape, absl::Span<const int> devices) {
  if (!IsOnePerDevice(map, devices)) return false;
  int64_t covered = 0;
  for (size_t i = 0; i < map.size(); ++i) {
    covered += NumElements(map[i].box);
    for (size_t j = 0; j < i; ++j) {
      if (const std::optional<Box> overlap = IntersectBoxes(map[i].box, map[j].box);
          overlap.has_value() && NumElements(*overlap) > 0) {
        return false;
      }
    }
  }
  return covered == NumElements(shape);
}

// The index of `device`'s chunk in `array` (which has one per device).
size_t ChunkOn(const Array& array, int device) {
  for (size_t c = 0; c < array.chunks.size(); ++c) {
    if (array.chunks[c].spec.device == device) return c;
  }
  return 0;  // not reached: the planner checked the layout
}

class FusionPlanner {
 public:
  FusionPlanner(const absl::flat_hash_map<std::string, ArrayPtr>& env, const OpContext& context,
                absl::Span<const int> devices)
      : env_(env), context_(context), devices_(devices.begin(), devices.end()) {
    // context_.resolve captures `this`: a copy would read another planner's state.
    // Operands resolve to the chain's metadata for values it computed, else to the variables
    // alive before the loop.
    context_.resolve = [this](const v1::Operand& operand,
                              const std::string&) -> absl::StatusOr<ArrayPtr> {
      if (auto it = computed_.find(operand.variable()); it != computed_.end()) {
        return it->second.array;
      }
      if (auto it = env_.find(operand.variable()); it != env_.end()) return it->second;
      return absl::NotFoundError(operand.variable());
    };
  }

  FusionPlanner(const FusionPlanner&) = delete;
  FusionPlanner& operator=(const FusionPlanner&) = delete;

  std::optional<std::vector<FusedLoop>> Plan(const v1::WhileLoop& loop,
                                             const BufferPtr& entry_flag) {
    const auto& body = loop.body();
    if (body.empty()) return CannotFuse("the body is empty");
    for (int i = 0; i + 1 < body.size(); ++i) {
      if (!AddStatement(body[i])) return std::nullopt;
    }
    if (loop_.ops.empty()) return CannotFuse("the body has no elementwise op to fuse");
    const v1::Statement& last = body[body.size() - 1];
    if (!last.has_reduce() || last.target() != loop.condition()) {
      return CannotFuse("the body does not end by assigning the condition with all() or any()");
    }
    const v1::ReduceOpSpec& reduce = last.reduce();
    if ((reduce.op() != v1::REDUCE_OP_ALL && reduce.op() != v1::REDUCE_OP_ANY) ||
        !reduce.axes().empty() || reduce.keepdims() ||
        reduce.operand().kind_case() != v1::Operand::kVariable) {
      return CannotFuse("the condition is not all() or any() of a variable over every axis");
    }
    std::optional<FusedLoop::Value> predicate = ValueOf(reduce.operand().variable());
    if (!predicate || loop_.DTypeOf(*predicate) != DType::kBool) {
      return CannotFuse("the condition reduces something other than a bool array of the chain");
    }
    loop_.all = reduce.op() == v1::REDUCE_OP_ALL;
    loop_.predicate = *predicate;

    // Every variable the chain assigned that lives on after the loop (loop-carried) is stored
    // into its slot; the condition's slot receives the flag.
    std::vector<std::pair<std::string, FusedLoop::Store>> stores;
    for (const auto& [name, value] : computed_) {
      auto slot = env_.find(name);
      if (slot == env_.end()) continue;  // local to the body
      if (!IsLoopLayout(*slot->second)) {
        return CannotFuse("a loop-carried variable's slot is not in the loop's layout");
      }
      stores.emplace_back(name, FusedLoop::Store{value.value, nullptr});
    }
    // By name, so one loop always generates the same source (the compile cache's key).
    std::sort(stores.begin(), stores.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [name, store] : stores) {
      loop_.stores.push_back(std::move(store));
      store_names_.push_back(name);
    }
    // The condition's slot: on one device, one chunk; over several, one partial per device, of
    // the mode all()/any() leaves (each device writes its own).
    auto condition = env_.find(loop.condition());
    if (condition == env_.end()) return CannotFuse("the condition variable is not bound");
    const Array& flag = *condition->second;
    if (devices_.size() == 1) {
      if (flag.mode != Mode::kReplica || flag.chunks.size() != 1) {
        return CannotFuse("the condition variable is not one REPLICA chunk");
      }
    } else if (flag.mode != (loop_.all ? Mode::kMin : Mode::kMax) ||
               !IsOnePerDevice(flag.index_map(), devices_)) {
      return CannotFuse("the condition variable is not one partial per device");
    }
    loop_.max_iterations = loop.max_iterations();
    if (static_cast<int>(loop_.inputs.size() + loop_.stores.size()) > FusedLoop::kMaxBuffers) {
      return CannotFuse(
          absl::StrCat("it reads and writes more than ", FusedLoop::kMaxBuffers, " arrays"));
    }
    // The same chain once per device, over that device's chunk of every array.
    std::vector<FusedLoop> loops;
    for (const int device : devices_) {
      FusedLoop on_device = loop_;
      // Every array of the loop has map_'s chunks, in its order.
      size_t c = 0;
      while ((*map_)[c].device != device) ++c;
      on_device.elements = NumElements((*map_)[c].box);
      for (size_t k = 0; k < input_names_.size(); ++k) {
        on_device.inputs[k].buffer = env_.at(input_names_[k])->chunks[c].buffer;
      }
      for (size_t k = 0; k < store_names_.size(); ++k) {
        on_device.stores[k].buffer = env_.at(store_names_[k])->chunks[c].buffer;
      }
      on_device.condition = flag.chunks[ChunkOn(flag, device)].buffer;
      on_device.entry_flag = devices_.size() == 1 ? entry_flag : on_device.condition;
      loops.push_back(std::move(on_device));
    }
    return loops;
  }

  const std::string& why_not() const { return why_not_; }

 private:
  struct Computed {
    FusedLoop::Value value;
    ArrayPtr array;  // what the planner sees: metadata of an op's result, or the copied input
  };

  // The loop's shape and layout, taken from the first array it meets: false (with why_not_) when
  // that layout is not one chunk per device of the recording.
  bool SetLayout(const Shape& shape, const IndexMap& map) {
    if (shape_.has_value()) return true;
    shape_ = shape;
    map_ = map;
    if (!IsOneChunkPerDevice(map, shape, devices_)) {
      return CannotFuseStatement(devices_.size() == 1
                                     ? "the loop's arrays are not one chunk holding all of them"
                                     : "the loop's arrays are not split into one chunk per device");
    }
    return true;
  }
  bool IsLoopLayout(const Array& array) const {
    return array.mode == Mode::kReplica && array.shape == *shape_ && array.index_map() == *map_;
  }

  std::nullopt_t CannotFuse(std::string why) {
    why_not_ = std::move(why);
    return std::nullopt;
  }
  bool CannotFuseStatement(std::string why) {
    why_not_ = std::move(why);
    return false;
  }

  // The value a variable holds at this point of the chain: the op that last assigned it, or an
  // input read from its buffer. nullopt (with why_not_) for arrays the kernel cannot read.
  std::optional<FusedLoop::Value> ValueOf(const std::string& name) {
    if (auto it = computed_.find(name); it != computed_.end()) return it->second.value;
    if (auto it = inputs_.find(name); it != inputs_.end())
      return FusedLoop::Value{true, it->second};
    auto it = env_.find(name);
    if (it == env_.end())
      return CannotFuse(absl::StrCat("variable ", QuoteClientString(name), " is not bound"));
    if (!SetLayout(it->second->shape, it->second->index_map())) return std::nullopt;
    if (!IsLoopLayout(*it->second)) {
      return CannotFuse(absl::StrCat("variable ", QuoteClientString(name),
                                     " is not REPLICA in the loop's shape and index map"));
    }
    const int index = static_cast<int>(loop_.inputs.size());
    loop_.inputs.push_back({nullptr, it->second->dtype});
    input_names_.push_back(name);
    inputs_[name] = index;
    return FusedLoop::Value{true, index};
  }

  bool AddStatement(const v1::Statement& s) {
    if (s.has_copy() && !s.target().empty()) {
      // target = source: the same value under another name (the builder emits these).
      std::optional<FusedLoop::Value> value = ValueOf(s.copy());
      if (!value) return false;
      absl::StatusOr<ArrayPtr> array = context_.resolve(OperandOf(s.copy()), "");
      if (!array.ok()) return CannotFuseStatement(std::string(array.status().message()));
      computed_[s.target()] = {*value, *array};
      return true;
    }
    if (!s.has_elementwise() || s.target().empty()) {
      return CannotFuseStatement("the body holds a statement other than elementwise ops");
    }
    if (static_cast<int>(loop_.ops.size()) == kMaxFusedLoopOps) {
      return CannotFuseStatement(
          absl::StrCat("the chain is longer than ", kMaxFusedLoopOps, " ops"));
    }
    absl::StatusOr<PlannedElementwise> planned = PlanElementwiseOp(context_, s.elementwise(), "");
    if (!planned.ok()) return CannotFuseStatement(std::string(planned.status().message()));
    const ElementwisePlan& plan = planned->plan;
    // A 16-bit float result is a float rounded once in the generated kernel; an astype to one
    // from a dtype that float does not hold exactly would round twice (through float), so it
    // stays a one-op kernel, which rounds from the source value.
    if (!plan.op && IsHalf(plan.result_dtype) && !FloatHoldsExactly(plan.compute)) {
      return CannotFuseStatement(absl::StrCat("it casts ", DTypeName(plan.compute), " to ",
                                              DTypeName(plan.result_dtype),
                                              ", which is not fused"));
    }
    // The generated kernel's registers hold real numbers only; complex loops run op by op.
    bool complex = IsComplex(plan.compute) || IsComplex(plan.result_dtype);
    for (const ArrayPtr& array : planned->arrays) {
      complex = complex || (array != nullptr && IsComplex(array->dtype));
    }
    if (complex)
      return CannotFuseStatement("it reads or writes complex values, which are not fused");
    if (!SetLayout(plan.result_shape, plan.result_map)) return false;
    if (plan.result_shape != *shape_ || plan.result_map != *map_) {
      return CannotFuseStatement("an op's result is not in the loop's shape and index map");
    }
    FusedLoop::Op op{plan.op, plan.compute, plan.result_dtype, {}};
    for (size_t i = 0; i < plan.operands.size(); ++i) {
      const ElementwisePlan::Operand& operand = plan.operands[i];
      FusedLoop::Arg arg;
      arg.read = operand.read_dtype;
      if (operand.is_scalar) {
        arg.scalar = operand.scalar;
      } else {
        const std::string& name = s.elementwise().operands(static_cast<int>(i)).variable();
        std::optional<FusedLoop::Value> value = ValueOf(name);
        if (!value) return false;
        if (planned->arrays[i]->shape != *shape_) {
          return CannotFuseStatement(
              absl::StrCat("operand ", QuoteClientString(name), " is broadcast"));
        }
        arg.value = value;
      }
      op.args.push_back(arg);
    }
    loop_.ops.push_back(std::move(op));
    ArrayMeta meta{plan.result_shape, plan.result_dtype, Mode::kReplica, plan.result_map};
    computed_[s.target()] = {FusedLoop::Value{false, static_cast<int>(loop_.ops.size()) - 1},
                             std::make_shared<const Array>(MetadataOnly(meta))};
    return true;
  }

  const absl::flat_hash_map<std::string, ArrayPtr>& env_;
  OpContext context_;
  const std::vector<int> devices_;
  std::optional<Shape> shape_;
  std::optional<IndexMap> map_;
  FusedLoop loop_;
  // The variables the chain reads (by input index) and stores (by store index): their buffers
  // differ per device.
  std::vector<std::string> input_names_, store_names_;
  absl::flat_hash_map<std::string, Computed> computed_;
  absl::flat_hash_map<std::string, int> inputs_;
  std::string why_not_;
};

}  // namespace

std::optional<std::vector<FusedLoop>> PlanFusedLoop(
    const v1::WhileLoop& loop, const absl::flat_hash_map<std::string, ArrayPtr>& env,
    const OpContext& context, absl::Span<const int> devices, const BufferPtr& entry_flag,
    std::string* why_not) {
  FusionPlanner planner(env, context, devices);
  std::optional<std::vector<FusedLoop>> fused = planner.Plan(loop, entry_flag);
  if (!fused && why_not != nullptr) *why_not = planner.why_not();
  return fused;
}

}  // namespace distarray
