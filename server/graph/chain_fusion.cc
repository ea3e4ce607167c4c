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
      if (auto it = state_.computed.find(operand.variable()); it != state_.computed.end()) {
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
    while (end < block.size() && static_cast<int>(state_.chain.ops.size()) < kMaxFusedChainOps &&
           // Room for one more op's inputs (at most three) and its store.
           static_cast<int>(state_.input_names.size() + state_.computed.size()) + 4 <=
               FusedLoop::kMaxChainBuffers &&
           Add(block[end])) {
      ++end;
    }
    FusedChainPlan plan;
    if (end < block.size() && end > start) {
      State saved = state_;
      if (!AddSum(block[end], plan)) state_ = std::move(saved);
    }
    plan.statements = end - start + (plan.sum.has_value() ? 1 : 0);
    if (plan.statements < 2) return std::nullopt;
    plan.inputs = state_.input_names;
    const bool vectors = state_.shape.has_value();
    plan.layout = ArrayMeta{vectors ? *state_.shape : Shape{}, DType::kUnspecified, Mode::kReplica,
                            vectors ? *state_.map : *state_.scalar_map};
    if (vectors && state_.scalar_map.has_value()) plan.scalar_map = *state_.scalar_map;
    FusedLoop& chain = state_.chain;
    for (size_t k = 0; k < chain.inputs.size(); ++k) {
      chain.inputs[k].broadcast = vectors && env_.at(plan.inputs[k])->shape.empty();
    }
    // Every name the run assigned, by name (one run always generates the same source).
    std::vector<std::string> names;
    for (const auto& [name, value] : state_.computed) names.push_back(name);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      const Computed& computed = state_.computed.at(name);
      chain.stores.push_back(
          FusedLoop::Store{computed.value, nullptr, vectors && computed.array->shape.empty()});
      plan.stores.push_back(name);
    }
    chain.elements = 0;
    plan.chain = std::move(chain);
    return plan;
  }

 private:
  struct Computed {
    FusedLoop::Value value;
    ArrayPtr array;  // metadata of the value
  };
  // Everything a statement adds, so one that does not fuse leaves the chain as it was.
  struct State {
    // The vectors' shape and map, and the 0-d values' map (the first array of each sets it).
    std::optional<Shape> shape;
    std::optional<IndexMap> map, scalar_map;
    FusedLoop chain;
    std::vector<std::string> input_names;
    absl::flat_hash_map<std::string, int> inputs;
    absl::flat_hash_map<std::string, Computed> computed;
  };

  static std::set<int> DevicesOf(const IndexMap& map) {
    std::set<int> devices;
    for (const ChunkSpec& chunk : map) devices.insert(chunk.device);
    return devices;
  }

  // Whether an array of `shape` and `map` is in the chain's layout: REPLICA, at most one chunk
  // per device, and either the vectors' shape and map or 0-d on the vectors' devices.
  bool InLayout(const Shape& shape, const IndexMap& map) {
    const bool scalar = shape.empty();
    std::optional<IndexMap>& known = scalar ? state_.scalar_map : state_.map;
    if (!known.has_value()) {
      if (map.empty() || DevicesOf(map).size() != map.size()) return false;
      const std::optional<IndexMap>& other = scalar ? state_.map : state_.scalar_map;
      if (other.has_value() && DevicesOf(*other) != DevicesOf(map)) return false;
      known = map;
      if (!scalar) state_.shape = shape;
    }
    return map == *known && (scalar || shape == *state_.shape);
  }

  std::optional<FusedLoop::Value> ValueOf(const std::string& name) {
    if (auto it = state_.computed.find(name); it != state_.computed.end()) return it->second.value;
    if (auto it = state_.inputs.find(name); it != state_.inputs.end()) {
      return FusedLoop::Value{true, it->second};
    }
    auto it = env_.find(name);
    if (it == env_.end()) return std::nullopt;
    const Array& array = *it->second;
    if (array.mode != Mode::kReplica || IsComplex(array.dtype) || IsHalf(array.dtype) ||
        !InLayout(array.shape, array.index_map())) {
      return std::nullopt;
    }
    const int index = static_cast<int>(state_.chain.inputs.size());
    state_.chain.inputs.push_back({nullptr, array.dtype});
    state_.input_names.push_back(name);
    state_.inputs[name] = index;
    return FusedLoop::Value{true, index};
  }

  bool Add(const v1::Statement& s) {
    State saved = state_;
    if (!AddStatement(s) || BroadcastReadIsStored()) {
      state_ = std::move(saved);
      return false;
    }
    return true;
  }

  // Whether a 0-d input the vectors read at element 0 is also stored (by element 0, racing the
  // other elements' reads): the statement that would do it starts the next chain instead.
  bool BroadcastReadIsStored() const {
    if (!state_.shape.has_value()) return false;
    for (const std::string& name : state_.input_names) {
      if (env_.at(name)->shape.empty() && state_.computed.contains(name)) return true;
    }
    return false;
  }

  // A sum of all of a vector's elements (sum_target = sum(value)) where each vector chunk is a
  // disjoint part and the Reduce statement's first pass would write one partial per chunk, on its
  // device, in the vector's dtype.
  bool AddSum(const v1::Statement& s, FusedChainPlan& plan) {
    if (!s.has_reduce() || s.target().empty() || !state_.shape.has_value() ||
        s.reduce().op() != v1::REDUCE_OP_SUM ||
        s.reduce().operand().kind_case() != v1::Operand::kVariable) {
      return false;
    }
    absl::StatusOr<PlannedReduce> planned = PlanReduceOp(context_, s.reduce(), "");
    if (!planned.ok()) return false;
    const ReducePlan& r = planned->plan;
    const Array& operand = *planned->array;
    // (`scale` is the mean's; a sum ignores it.)
    if (r.kind != ReduceKind::kSum || r.arg || r.prepare || r.fill || !r.result_shape.empty() ||
        r.kernel_dtype != r.in_dtype || r.result_dtype != r.in_dtype ||
        (r.in_dtype != DType::kFloat32 && r.in_dtype != DType::kFloat64) ||
        operand.mode != Mode::kReplica || operand.shape != *state_.shape ||
        operand.index_map() != *state_.map || r.result_map.size() != state_.map->size()) {
      return false;
    }
    for (size_t c = 0; c < r.result_map.size(); ++c) {
      if (r.result_map[c].device != (*state_.map)[c].device) return false;
    }
    // Disjoint chunks: each element counted once (an overlap would have asked for `prepare`, but
    // the planner's rule is its own; this one is the kernel's).
    const IndexMap& map = *state_.map;
    for (size_t a = 0; a < map.size(); ++a) {
      for (size_t b = a + 1; b < map.size(); ++b) {
        const std::optional<Box> both = IntersectBoxes(map[a].box, map[b].box);
        if (both.has_value() && NumElements(*both) > 0) return false;
      }
    }
    std::optional<FusedLoop::Value> value = ValueOf(s.reduce().operand().variable());
    if (!value) return false;
    state_.chain.sum = value;
    plan.sum_target = s.target();
    plan.sum = *std::move(planned);
    return true;
  }

  bool AddStatement(const v1::Statement& s) {
    if (s.has_copy() && !s.target().empty()) {
      // target = source: the same value under another name (a loop's carried values are copied
      // into their names at the end of the body: one kernel instead of a copy each).
      std::optional<FusedLoop::Value> value = ValueOf(s.copy());
      if (!value) return false;
      auto it = state_.computed.find(s.copy());
      state_.computed[s.target()] = {
          *value, it != state_.computed.end() ? it->second.array : env_.at(s.copy())};
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
        // The result's shape, or 0-d broadcast into it; any other broadcast ends the chain.
        if (array == nullptr || array->mode != Mode::kReplica || IsComplex(array->dtype) ||
            IsHalf(array->dtype) || (array->shape != plan.result_shape && !array->shape.empty()) ||
            !InLayout(array->shape, array->index_map())) {
          return false;
        }
        std::optional<FusedLoop::Value> value = ValueOf(name);
        if (!value) return false;
        arg.value = value;
      }
      op.args.push_back(arg);
    }
    state_.chain.ops.push_back(std::move(op));
    ArrayMeta meta{plan.result_shape, plan.result_dtype, Mode::kReplica, plan.result_map};
    state_.computed[s.target()] = {
        FusedLoop::Value{false, static_cast<int>(state_.chain.ops.size()) - 1},
        std::make_shared<const Array>(MetadataOnly(meta))};
    return true;
  }

  const absl::flat_hash_map<std::string, ArrayPtr>& env_;
  OpContext context_;
  State state_;
};

}  // namespace

std::optional<FusedChainPlan> PlanFusedChain(
    const google::protobuf::RepeatedPtrField<v1::Statement>& block, int start,
    const absl::flat_hash_map<std::string, ArrayPtr>& env, const OpContext& context) {
  ChainPlanner planner(env, context);
  return planner.Plan(block, start);
}

}  // namespace distarray
