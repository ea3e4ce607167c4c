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

v1::Operand OperandOf(const std::string& variable) {
  v1::Operand operand;
  operand.set_variable(variable);
  return operand;
}

// Whether `array` is one REPLICA chunk holding all of `shape` on `device`.
bool IsOneDenseChunk(const Array& array, const Shape& shape, int device) {
  return array.mode == Mode::kReplica && array.shape == shape && array.chunks.size() == 1 &&
         array.chunks[0].spec.device == device && array.chunks[0].spec.box == FullBox(shape);
}

class FusionPlanner {
 public:
  FusionPlanner(const absl::flat_hash_map<std::string, ArrayPtr>& env, const OpContext& context,
                int device)
      : env_(env), context_(context), device_(device) {
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

  std::optional<FusedLoop> Plan(const v1::WhileLoop& loop, const BufferPtr& entry_flag) {
    const auto& body = loop.body();
    if (body.empty()) return Refuse("the body is empty");
    for (int i = 0; i + 1 < body.size(); ++i) {
      if (!AddStatement(body[i])) return std::nullopt;
    }
    if (loop_.ops.empty()) return Refuse("the body has no elementwise op to fuse");
    loop_.elements = NumElements(*shape_);
    const v1::Statement& last = body[body.size() - 1];
    if (!last.has_reduce() || last.target() != loop.condition()) {
      return Refuse("the body does not end by assigning the condition with all() or any()");
    }
    const v1::ReduceOpSpec& reduce = last.reduce();
    if ((reduce.op() != v1::REDUCE_OP_ALL && reduce.op() != v1::REDUCE_OP_ANY) ||
        !reduce.axes().empty() || reduce.keepdims() ||
        reduce.operand().kind_case() != v1::Operand::kVariable) {
      return Refuse("the condition is not all() or any() of a variable over every axis");
    }
    std::optional<FusedLoop::Value> predicate = ValueOf(reduce.operand().variable());
    if (!predicate || loop_.DTypeOf(*predicate) != DType::kBool) {
      return Refuse("the condition reduces something other than a bool array of the chain");
    }
    loop_.all = reduce.op() == v1::REDUCE_OP_ALL;
    loop_.predicate = *predicate;

    // Every variable the chain assigned that lives on after the loop (loop-carried) is stored
    // into its slot; the condition's slot receives the flag.
    std::vector<std::pair<std::string, FusedLoop::Store>> stores;
    for (const auto& [name, value] : computed_) {
      auto slot = env_.find(name);
      if (slot == env_.end()) continue;  // local to the body
      if (!IsOneDenseChunk(*slot->second, *shape_, device_)) {
        return Refuse("a loop-carried variable's slot is not one dense chunk");
      }
      stores.emplace_back(name, FusedLoop::Store{value.value, slot->second->chunks[0].buffer});
    }
    // By name, so one loop always generates the same source (the compile cache's key).
    std::sort(stores.begin(), stores.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [name, store] : stores) loop_.stores.push_back(std::move(store));
    // The interpreter takes the loop's device from the condition; its slot is one chunk there.
    auto condition = env_.find(loop.condition());
    if (condition == env_.end() || condition->second->mode != Mode::kReplica ||
        condition->second->chunks.size() != 1) {
      return Refuse("the condition variable is not one REPLICA chunk");
    }
    loop_.condition = condition->second->chunks[0].buffer;
    loop_.entry_flag = entry_flag;
    loop_.max_iterations = loop.max_iterations();
    if (static_cast<int>(loop_.inputs.size() + loop_.stores.size()) > FusedLoop::kMaxBuffers) {
      return Refuse(
          absl::StrCat("it reads and writes more than ", FusedLoop::kMaxBuffers, " arrays"));
    }
    return std::move(loop_);
  }

  const std::string& why_not() const { return why_not_; }

 private:
  struct Computed {
    FusedLoop::Value value;
    ArrayPtr array;  // what the planner sees: metadata of an op's result, or the copied input
  };

  std::nullopt_t Refuse(std::string why) {
    why_not_ = std::move(why);
    return std::nullopt;
  }
  bool RefuseStatement(std::string why) {
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
      return Refuse(absl::StrCat("variable ", QuoteClientString(name), " is not bound"));
    if (!shape_.has_value()) shape_ = it->second->shape;
    if (!IsOneDenseChunk(*it->second, *shape_, device_)) {
      return Refuse(absl::StrCat("variable ", QuoteClientString(name),
                                 " is not one dense chunk of the loop's shape"));
    }
    const int index = static_cast<int>(loop_.inputs.size());
    loop_.inputs.push_back({it->second->chunks[0].buffer, it->second->dtype});
    inputs_[name] = index;
    return FusedLoop::Value{true, index};
  }

  bool AddStatement(const v1::Statement& s) {
    if (s.has_copy() && !s.target().empty()) {
      // target = source: the same value under another name (the builder emits these).
      std::optional<FusedLoop::Value> value = ValueOf(s.copy());
      if (!value) return false;
      absl::StatusOr<ArrayPtr> array = context_.resolve(OperandOf(s.copy()), "");
      if (!array.ok()) return RefuseStatement(std::string(array.status().message()));
      computed_[s.target()] = {*value, *array};
      return true;
    }
    if (!s.has_elementwise() || s.target().empty()) {
      return RefuseStatement("the body holds a statement other than elementwise ops");
    }
    if (static_cast<int>(loop_.ops.size()) == kMaxFusedLoopOps) {
      return RefuseStatement(absl::StrCat("the chain is longer than ", kMaxFusedLoopOps, " ops"));
    }
    absl::StatusOr<PlannedElementwise> planned = PlanElementwiseOp(context_, s.elementwise(), "");
    if (!planned.ok()) return RefuseStatement(std::string(planned.status().message()));
    const ElementwisePlan& plan = planned->plan;
    if (!shape_.has_value()) shape_ = plan.result_shape;
    if (plan.result_shape != *shape_ || plan.result_map.size() != 1 ||
        plan.result_map[0].device != device_ || plan.result_map[0].box != FullBox(*shape_)) {
      return RefuseStatement("an op's result is not one dense chunk of the loop's shape");
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
          return RefuseStatement(
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
  const int device_;
  std::optional<Shape> shape_;
  FusedLoop loop_;
  absl::flat_hash_map<std::string, Computed> computed_;
  absl::flat_hash_map<std::string, int> inputs_;
  std::string why_not_;
};

}  // namespace

std::optional<FusedLoop> PlanFusedLoop(const v1::WhileLoop& loop,
                                       const absl::flat_hash_map<std::string, ArrayPtr>& env,
                                       const OpContext& context, int device,
                                       const BufferPtr& entry_flag, std::string* why_not) {
  FusionPlanner planner(env, context, device);
  std::optional<FusedLoop> fused = planner.Plan(loop, entry_flag);
  if (!fused && why_not != nullptr) *why_not = planner.why_not();
  return fused;
}

}  // namespace distarray
