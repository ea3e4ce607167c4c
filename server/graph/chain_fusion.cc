#include "server/graph/chain_fusion.h"

#include <algorithm>
#include <memory>
#include <set>
#include <utility>

#include "common/box.h"

namespace distarray {
namespace {

class ChainPlanner {
 public:
  ChainPlanner(const absl::flat_hash_map<std::string, ArrayPtr>& env, const OpContext& context)
      : env_(env), context_(context) {
    // Operands resolve to the chain's metadata for values it computed, else to the variables.
    context_.resolve = [this](const v1::Operand& operand,
                              const std::string&) -> absl::StatusOr<ArrayPtr> {
      if (auto it = computed_.find(operand.variable()); it != computed_.end()) {
        return it->second.array;
      }
      if (auto it = env_.find(operand.variable()); it != env_.end()) return it->second;
      return absl::NotFoundError(operand.variable());
    };
  }
  ChainPlanner(const ChainPlanner&) = delete;
  ChainPlanner& operator=(const ChainPlanner&) = delete;

  std::optional<FusedChainPlan> Plan(const google::protobuf::RepeatedPtrField<v1::Statement>& block,
                                     int start) {
    int end = start;
    while (end < block.size() && static_cast<int>(chain_.ops.size()) < kMaxFusedChainOps &&
           // Room for one more op's inputs (at most three) and its store.
           static_cast<int>(input_names_.size() + computed_.size()) + 4 <=
               FusedLoop::kMaxChainBuffers &&
           Add(block[end])) {
      ++end;
    }
    if (end - start < 2) return std::nullopt;
    FusedChainPlan plan;
    plan.statements = end - start;
    plan.inputs = input_names_;
    plan.layout = ArrayMeta{*shape_, DType::kUnspecified, Mode::kReplica, *map_};
    // Every name the run assigned, by name (one run always generates the same source).
    std::vector<std::string> names;
    for (const auto& [name, value] : computed_) names.push_back(name);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      chain_.stores.push_back(FusedLoop::Store{computed_.at(name).value, nullptr});
      plan.stores.push_back(name);
    }
    chain_.elements = 0;
    plan.chain = std::move(chain_);
    return plan;
  }

 private:
  struct Computed {
    FusedLoop::Value value;
    ArrayPtr array;  // metadata of the value
  };

  // Whether `shape` and `map` are the chain's (the first array met sets them): REPLICA values of
  // at most one chunk per device.
  bool InLayout(const Shape& shape, const IndexMap& map) {
    if (!shape_.has_value()) {
      std::set<int> devices;
      for (const ChunkSpec& chunk : map) {
        if (!devices.insert(chunk.device).second) return false;
      }
      if (map.empty()) return false;
      shape_ = shape;
      map_ = map;
    }
    return shape == *shape_ && map == *map_;
  }

  std::optional<FusedLoop::Value> ValueOf(const std::string& name) {
    if (auto it = computed_.find(name); it != computed_.end()) return it->second.value;
    if (auto it = inputs_.find(name); it != inputs_.end()) {
      return FusedLoop::Value{true, it->second};
    }
    auto it = env_.find(name);
    if (it == env_.end()) return std::nullopt;
    const Array& array = *it->second;
    if (array.mode != Mode::kReplica || IsComplex(array.dtype) ||
        !InLayout(array.shape, array.index_map())) {
      return std::nullopt;
    }
    const int index = static_cast<int>(chain_.inputs.size());
    chain_.inputs.push_back({nullptr, array.dtype});
    input_names_.push_back(name);
    inputs_[name] = index;
    return FusedLoop::Value{true, index};
  }

  bool Add(const v1::Statement& s) {
    if (s.has_copy() && !s.target().empty()) {
      // target = source: the same value under another name (a loop's carried values are copied
      // into their names at the end of the body: one kernel instead of a copy each).
      std::optional<FusedLoop::Value> value = ValueOf(s.copy());
      if (!value) return false;
      auto it = computed_.find(s.copy());
      computed_[s.target()] = {*value,
                               it != computed_.end() ? it->second.array : env_.at(s.copy())};
      return true;
    }
    if (!s.has_elementwise() || s.target().empty() || !s.elementwise().out().empty()) return false;
    absl::StatusOr<PlannedElementwise> planned = PlanElementwiseOp(context_, s.elementwise(), "");
    if (!planned.ok()) return false;
    const ElementwisePlan& plan = planned->plan;
    if (IsComplex(plan.compute) || IsComplex(plan.result_dtype) || IsHalf(plan.result_dtype) ||
        IsHalf(plan.compute)) {
      return false;  // the generated kernel's registers hold real numbers of full width
    }
    if (!InLayout(plan.result_shape, plan.result_map)) return false;
    FusedLoop::Op op{plan.op, plan.compute, plan.result_dtype, {}};
    for (size_t i = 0; i < plan.operands.size(); ++i) {
      const ElementwisePlan::Operand& operand = plan.operands[i];
      FusedLoop::Arg arg;
      arg.read = operand.read_dtype;
      if (operand.is_scalar) {
        arg.scalar = operand.scalar;
      } else {
        const std::string& name = s.elementwise().operands(static_cast<int>(i)).variable();
        const ArrayPtr& array = planned->arrays[i];
        if (array == nullptr || array->mode != Mode::kReplica || IsComplex(array->dtype) ||
            IsHalf(array->dtype) || array->shape != *shape_ || array->index_map() != *map_) {
          return false;  // broadcast, another layout, or a dtype the kernel does not load
        }
        std::optional<FusedLoop::Value> value = ValueOf(name);
        if (!value) return false;
        arg.value = value;
      }
      op.args.push_back(arg);
    }
    chain_.ops.push_back(std::move(op));
    ArrayMeta meta{plan.result_shape, plan.result_dtype, Mode::kReplica, plan.result_map};
    computed_[s.target()] = {FusedLoop::Value{false, static_cast<int>(chain_.ops.size()) - 1},
                             std::make_shared<const Array>(MetadataOnly(meta))};
    return true;
  }

  const absl::flat_hash_map<std::string, ArrayPtr>& env_;
  OpContext context_;
  std::optional<Shape> shape_;
  std::optional<IndexMap> map_;
  FusedLoop chain_;
  std::vector<std::string> input_names_;
  absl::flat_hash_map<std::string, int> inputs_;
  absl::flat_hash_map<std::string, Computed> computed_;
};

}  // namespace

std::optional<FusedChainPlan> PlanFusedChain(
    const google::protobuf::RepeatedPtrField<v1::Statement>& block, int start,
    const absl::flat_hash_map<std::string, ArrayPtr>& env, const OpContext& context) {
  ChainPlanner planner(env, context);
  return planner.Plan(block, start);
}

}  // namespace distarray
