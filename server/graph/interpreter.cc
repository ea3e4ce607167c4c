#include "server/graph/interpreter.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/index_map.h"
#include "common/names.h"
#include "common/proto_convert.h"
#include "common/status_macros.h"
#include "server/graph/chain_fusion.h"
#include "server/graph/loop_fusion.h"
#include "server/graph/variable_mentions.h"
#include "server/ops/fill.h"
#include "server/ops/layout.h"
#include "server/ops/linalg.h"
#include "server/ops/manipulation.h"
#include "spdlog/spdlog.h"

namespace distarray {
namespace {

using Block = google::protobuf::RepeatedPtrField<v1::Statement>;

// Every variable a block assigns, nested bodies included.
void CollectTargets(const Block& block, absl::flat_hash_set<std::string>& targets) {
  for (const v1::Statement& s : block) {
    if (!s.target().empty()) targets.insert(s.target());
    if (s.has_linalg()) targets.insert(s.linalg().targets().begin(), s.linalg().targets().end());
    if (s.has_while_loop()) CollectTargets(s.while_loop().body(), targets);
    if (s.has_if_else()) {
      CollectTargets(s.if_else().then_body(), targets);
      CollectTargets(s.if_else().else_body(), targets);
    }
  }
}

std::string Describe(const Array& a) {
  return absl::StrCat(DTypeName(a.dtype), " ", ShapeString(a.shape), " ", ModeName(a.mode), " in ",
                      a.chunks.size(), " chunk(s)");
}

}  // namespace

Interpreter::Interpreter(RunMode mode, OpContext context, Backend* backend,
                         GraphRecording* recording)
    : mode_(mode), context_(std::move(context)), backend_(backend), recording_(recording) {
  // The sink every op of the program sends its work to: nothing in kCheck, which only plans.
  context_.ops = mode == RunMode::kRecord  ? static_cast<DeviceOps*>(recording)
                 : mode == RunMode::kEager ? static_cast<DeviceOps*>(backend)
                                           : nullptr;
  // A program never reads index values from the devices (its plans must not depend on data): the
  // structure check refuses such keys, and without this reader the planners would too.
  context_.read_positions = nullptr;
  context_.resolve = [this](const v1::Operand& operand,
                            const std::string& field) -> absl::StatusOr<ArrayPtr> {
    if (operand.kind_case() != v1::Operand::kVariable) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": a program's operands are variables or scalars"));
    }
    return LookupOperand(operand.variable(), field + ".variable");
  };
}

absl::StatusOr<ArrayPtr> Interpreter::LookupOperand(const std::string& name,
                                                    const std::string& field) const {
  if (uncombined_.contains(name)) {
    return NotRecordable(absl::StrCat(
        field, ": variable ", QuoteClientString(name),
        " holds a reduction over several devices, which a graph combines only where it is a "
        "loop or branch condition"));
  }
  return Lookup(name, field);
}

absl::StatusOr<ArrayPtr> Interpreter::RecordedValue(const std::string& name) const {
  RETURN_IF_ERROR(LookupOperand(name, "program").status());
  return Value(name);
}

ArrayPtr Interpreter::SlotFor(const std::string& name) const {
  if (mode_ != RunMode::kRecord) return nullptr;
  for (auto scope = slot_scopes_.rbegin(); scope != slot_scopes_.rend(); ++scope) {
    auto it = scope->find(name);
    if (it != scope->end()) return it->second;
  }
  return nullptr;
}

ArrayPtr Interpreter::Value(const std::string& name) const {
  auto it = env_.find(name);
  return it == env_.end() ? nullptr : it->second;
}

absl::StatusOr<ArrayPtr> Interpreter::Lookup(const std::string& name,
                                             const std::string& field) const {
  auto it = env_.find(name);
  if (it == env_.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": variable ", QuoteClientString(name),
        " is not assigned here (not an input, nor assigned earlier in this or an enclosing "
        "block)"));
  }
  return it->second;
}

absl::Status Interpreter::NotRecordable(std::string why) const {
  if (!not_recordable_) not_recordable_ = why;
  return absl::FailedPreconditionError(std::move(why));
}

void Interpreter::Assign(const std::string& name, Array value) {
  for (const Chunk& c : value.chunks) devices_.insert(c.spec.device);
  env_[name] = std::make_shared<const Array>(std::move(value));
  uncombined_.erase(name);
}

void Interpreter::AssignSlot(const std::string& name, const ArrayPtr& slot) {
  env_[name] = slot;
  uncombined_.erase(name);
}

absl::Status Interpreter::Run(const v1::Program& program, absl::string_view field) {
  const std::string prefix(field);
  for (const auto& [name, value] : env_) {
    for (const Chunk& c : value->chunks) devices_.insert(c.spec.device);
  }
  results_.insert(program.outputs().begin(), program.outputs().end());
  results_.insert(program.value_outputs().begin(), program.value_outputs().end());
  RETURN_IF_ERROR(RunBlock(program.statements(), prefix + ".statements"));
  if (mode_ == RunMode::kCheck) {
    for (const auto& [list, name] : {std::pair{&program.outputs(), "outputs"},
                                     std::pair{&program.value_outputs(), "value_outputs"}}) {
      for (int i = 0; i < list->size(); ++i) {
        RETURN_IF_ERROR(Lookup((*list)[i], absl::StrCat(prefix, ".", name, "[", i, "]")).status());
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Interpreter::RunBlock(const Block& block, const std::string& field) {
  const bool chains =
      mode_ == RunMode::kRecord && recording_ != nullptr && recording_->fuses_chains();
  // The variables that existed when the block began (they outlive it), and where the block last
  // mentions each name: what a chain must store.
  absl::flat_hash_set<std::string> entry;
  absl::flat_hash_map<std::string, int> last_mentions;
  if (chains) {
    for (const auto& [name, value] : env_) entry.insert(name);
    last_mentions = LastMentions(block);
  }
  for (int i = 0; i < block.size();) {
    if (mode_ == RunMode::kEager) RETURN_IF_ERROR(context_.CheckAlive());
    if (chains && (block[i].has_elementwise() || block[i].has_copy())) {
      ASSIGN_OR_RETURN(const int fused, RecordChain(block, i, entry, last_mentions));
      if (fused > 0) {
        i += fused;
        continue;
      }
    }
    RETURN_IF_ERROR(RunStatement(block[i], absl::StrCat(field, "[", i, "]")));
    ++i;
  }
  return absl::OkStatus();
}

absl::StatusOr<int> Interpreter::RecordChain(
    const Block& block, int start, const absl::flat_hash_set<std::string>& entry,
    const absl::flat_hash_map<std::string, int>& last_mentions) {
  std::optional<FusedChainPlan> plan = PlanFusedChain(block, start, env_, context_);
  if (!plan) return 0;
  // Only the results read again are stored (a solver's temporaries, `alpha * p`, never leave the
  // kernel: each would cost a pass over the vector).
  const int end = start + plan->statements;
  for (size_t k = plan->stores.size(); k-- > 0;) {
    const std::string& name = plan->stores[k];
    const auto last = last_mentions.find(name);
    const bool mentioned_later = last != last_mentions.end() && last->second >= end;
    if (entry.contains(name) || mentioned_later || results_.contains(name) ||
        SlotFor(name) != nullptr) {
      continue;
    }
    plan->stores.erase(plan->stores.begin() + static_cast<std::ptrdiff_t>(k));
    plan->chain.stores.erase(plan->chain.stores.begin() + static_cast<std::ptrdiff_t>(k));
  }
  const IndexMap& map = plan->layout.map;
  // Each store's buffers: a loop-carried variable's slot where it has the store's layout, else
  // new chunks. A broadcast store is 0-d in the plan's scalar map.
  std::vector<ArrayPtr> slots;
  std::vector<std::vector<Chunk>> stored;
  for (size_t k = 0; k < plan->stores.size(); ++k) {
    const FusedLoop::Store& store = plan->chain.stores[k];
    const DType dtype = plan->chain.DTypeOf(store.value);
    const Shape shape = store.broadcast ? Shape{} : plan->layout.shape;
    const IndexMap& store_map = store.broadcast ? plan->scalar_map : map;
    ArrayPtr slot = SlotFor(plan->stores[k]);
    if (slot != nullptr && (slot->mode != Mode::kReplica || slot->dtype != dtype ||
                            slot->shape != shape || slot->index_map() != store_map)) {
      slot = nullptr;
    }
    if (slot != nullptr) {
      stored.push_back(slot->chunks);
    } else {
      ASSIGN_OR_RETURN(std::vector<Chunk> chunks, AllocateChunks(*context_.ops, dtype, store_map));
      stored.push_back(std::move(chunks));
    }
    slots.push_back(std::move(slot));
  }
  // A run that ends in a sum: each chunk's partial, where the Reduce statement's pass puts it.
  std::vector<Chunk> partials;
  if (plan->sum.has_value()) {
    ASSIGN_OR_RETURN(partials, AllocateChunks(*context_.ops, plan->sum->plan.result_dtype,
                                              plan->sum->plan.result_map));
  }
  // The chunk of `chunks` on `device` (a broadcast value has one on each of the vectors' devices).
  auto on_device = [](const std::vector<Chunk>& chunks, int device) -> BufferPtr {
    for (const Chunk& chunk : chunks) {
      if (chunk.spec.device == device) return chunk.buffer;
    }
    return nullptr;
  };
  // The chain once per chunk (one per device), over that chunk's buffers.
  std::vector<FusedLoop> chains;
  for (size_t c = 0; c < map.size(); ++c) {
    FusedLoop chain = plan->chain;
    chain.elements = NumElements(map[c].box);
    const int device = map[c].device;
    for (size_t k = 0; k < plan->inputs.size(); ++k) {
      const std::vector<Chunk>& chunks = env_.at(plan->inputs[k])->chunks;
      chain.inputs[k].buffer =
          chain.inputs[k].broadcast ? on_device(chunks, device) : chunks[c].buffer;
    }
    for (size_t k = 0; k < plan->stores.size(); ++k) {
      chain.stores[k].buffer =
          chain.stores[k].broadcast ? on_device(stored[k], device) : stored[k][c].buffer;
    }
    if (plan->sum.has_value()) chain.sum_buffer = partials[c].buffer;
    // Element 0's broadcast stores must not write a buffer other elements read at element 0 (a
    // slot shared by two names): such a chain runs op by op. (A missing buffer is refused by
    // RecordFusedChain, which then leaves the run op by op too.)
    for (const FusedLoop::Input& input : chain.inputs) {
      for (const FusedLoop::Store& store : chain.stores) {
        if (input.broadcast && input.buffer != nullptr && input.buffer == store.buffer) return 0;
      }
    }
    chains.push_back(std::move(chain));
  }
  const absl::Status recorded = recording_->RecordFusedChain(chains);
  if (absl::IsUnimplemented(recorded)) return 0;
  RETURN_IF_ERROR(recorded);
  for (size_t k = 0; k < plan->stores.size(); ++k) {
    if (slots[k] != nullptr) {
      AssignSlot(plan->stores[k], slots[k]);
    } else {
      const FusedLoop::Store& store = plan->chain.stores[k];
      Assign(plan->stores[k], Array{{},
                                    {},
                                    {},
                                    store.broadcast ? Shape{} : plan->layout.shape,
                                    plan->chain.DTypeOf(store.value),
                                    Mode::kReplica,
                                    std::move(stored[k])});
    }
  }
  if (plan->sum.has_value()) {
    // The Reduce statement's result, as ExecuteReduce gives it from these partials.
    const ReducePlan& reduce = plan->sum->plan;
    Array sum{{},
              {},
              {},
              reduce.result_shape,
              reduce.result_dtype,
              reduce.result_mode,
              std::move(partials)};
    if (plan->sum->combine && sum.mode != Mode::kReplica) {
      ASSIGN_OR_RETURN(sum.chunks, Relayout(*context_.ops, sum, reduce.combine_map, Mode::kReplica,
                                            context_.alive));
      sum.mode = Mode::kReplica;
    }
    Assign(plan->sum_target, std::move(sum));
  }
  ++fused_chains_;
  fused_chain_statements_ += plan->statements;
  if (!slot_scopes_.empty()) {  // inside a loop or branch body
    ++fused_chains_in_bodies_;
    fused_chain_statements_in_bodies_ += plan->statements;
  }
  return plan->statements;
}

absl::Status Interpreter::RunStatement(const v1::Statement& s, const std::string& field) {
  const bool check = mode_ == RunMode::kCheck;
  switch (s.op_case()) {
    case v1::Statement::kElementwise: {
      ASSIGN_OR_RETURN(const PlannedElementwise planned,
                       PlanElementwiseOp(context_, s.elementwise(), field + ".elementwise"));
      if (check) {
        const ElementwisePlan& p = planned.plan;
        Assign(s.target(),
               MetadataOnly({p.result_shape, p.result_dtype, Mode::kReplica, p.result_map}));
        return absl::OkStatus();
      }
      // A loop-carried result goes straight into its slot where that is safe, which saves the
      // copy back at the end of the body.
      const ArrayPtr slot = SlotFor(s.target());
      const bool into_slot = slot != nullptr && CanWriteElementwiseInto(planned, *slot);
      ASSIGN_OR_RETURN(OpResult r,
                       ExecuteElementwise(context_, planned, into_slot ? &slot->chunks : nullptr));
      if (into_slot) {
        AssignSlot(s.target(), slot);
        return absl::OkStatus();
      }
      Assign(s.target(), Array{{}, {}, {}, r.shape, r.dtype, r.mode, std::move(r.chunks)});
      return absl::OkStatus();
    }
    case v1::Statement::kReduce: {
      ASSIGN_OR_RETURN(PlannedReduce planned,
                       PlanReduceOp(context_, s.reduce(), field + ".reduce"));
      if (check) {
        Assign(s.target(), MetadataOnly(ReduceResultMeta(planned)));
        return absl::OkStatus();
      }
      // Over several devices, combining a 0-d bool's partials would copy across devices, which
      // a graph cannot hold; the partials are kept instead, and a condition reading them has the
      // devices combine them while the graph runs (FlagsOf). Any other use is refused.
      // A loop-carried target keeps its slot's layout: partials only into a slot of partials (a
      // condition that entered the loop combined is combined in the body too, across devices by
      // peer copies).
      const ArrayPtr slot = SlotFor(s.target());
      std::set<int> partial_devices;
      for (const ChunkSpec& chunk : planned.plan.result_map) partial_devices.insert(chunk.device);
      const bool uncombined = mode_ == RunMode::kRecord && partial_devices.size() > 1 &&
                              planned.combine && planned.plan.result_mode != Mode::kReplica &&
                              planned.plan.result_shape.empty() &&
                              planned.plan.result_dtype == DType::kBool &&
                              (slot == nullptr || (slot->mode == planned.plan.result_mode &&
                                                   slot->index_map() == planned.plan.result_map));
      if (uncombined) planned.combine = false;
      const bool into_slot = slot != nullptr && CanWriteReduceInto(planned, *slot);
      ASSIGN_OR_RETURN(OpResult r,
                       ExecuteReduce(context_, planned, into_slot ? &slot->chunks : nullptr));
      if (into_slot) {
        AssignSlot(s.target(), slot);
      } else {
        Assign(s.target(), Array{{}, {}, {}, r.shape, r.dtype, r.mode, std::move(r.chunks)});
      }
      if (uncombined) uncombined_.insert(s.target());
      return absl::OkStatus();
    }
    case v1::Statement::kMatmul: {
      ASSIGN_OR_RETURN(const PlannedMatmul planned,
                       PlanMatmulOp(context_, s.matmul(), field + ".matmul"));
      if (check) {
        Assign(s.target(), MetadataOnly(MatmulResultMeta(planned)));
        return absl::OkStatus();
      }
      ASSIGN_OR_RETURN(OpResult r, ExecuteMatmul(context_, planned));
      Assign(s.target(), Array{{}, {}, {}, r.shape, r.dtype, r.mode, std::move(r.chunks)});
      return absl::OkStatus();
    }
    case v1::Statement::kReshard:
    case v1::Statement::kChangeMode:
    case v1::Statement::kCopy: {
      // All three are a relayout of one variable: to a new map and/or mode, or to its own.
      std::string source_name, source_field = field;
      if (s.has_reshard()) {
        source_name = s.reshard().source();
        source_field += ".reshard.source";
      } else if (s.has_change_mode()) {
        source_name = s.change_mode().source();
        source_field += ".change_mode.source";
      } else {
        source_name = s.copy();
        source_field += ".copy";
      }
      ASSIGN_OR_RETURN(const ArrayPtr source, LookupOperand(source_name, source_field));
      IndexMap map = source->index_map();
      Mode mode = source->mode;
      if (s.has_reshard() && s.reshard().has_index_map()) {
        ASSIGN_OR_RETURN(map, context_.normalize_map(s.reshard().index_map(), source->shape,
                                                     field + ".reshard.index_map"));
      }
      if (s.has_reshard() && s.reshard().has_mode()) {
        ASSIGN_OR_RETURN(mode, ModeFromProto(s.reshard().mode(), field + ".reshard.mode"));
      }
      if (s.has_change_mode()) {
        ASSIGN_OR_RETURN(mode, ModeFromProto(s.change_mode().mode(), field + ".change_mode.mode"));
      }
      const std::string gap_field =
          field + (s.has_reshard()
                       ? (s.reshard().has_index_map() ? ".reshard.index_map" : ".reshard.mode")
                       : ".change_mode.mode");
      RETURN_IF_ERROR(CheckUncoveredValuesKept(source->shape, source->dtype, source->index_map(),
                                               source->mode, map, mode, gap_field, context_.alive));
      if (check) {
        Assign(s.target(), MetadataOnly({source->shape, source->dtype, mode, map}));
        return absl::OkStatus();
      }
      Array out{{}, {}, {}, source->shape, source->dtype, mode, {}};
      ASSIGN_OR_RETURN(out.chunks, Relayout(*context_.ops, *source, map, mode, context_.alive));
      Assign(s.target(), std::move(out));
      return absl::OkStatus();
    }
    case v1::Statement::kManipulate: {
      ASSIGN_OR_RETURN(const PlannedManipulation planned,
                       PlanManipulation(context_, s.manipulate(), field + ".manipulate"));
      if (check) {
        Assign(s.target(), MetadataOnly(planned.result));
        return absl::OkStatus();
      }
      // `u = set_item(u, key, v)` rebinds u, so its old value is unreachable: the write goes
      // straight into u's buffers (a loop's slot, or a temporary of the program), not into a copy
      // of them. Never into an input (the caller's array).
      if (planned.op == v1::ManipulationSpec::kSetItem &&
          s.manipulate().set_item().target().variable() == s.target() &&
          !inputs_.contains(planned.sources[0].get()) && WritesIntoTargetSafely(planned)) {
        ASSIGN_OR_RETURN(OpResult r, ExecuteSetItemInPlace(context_, planned));
        const ArrayPtr slot = SlotFor(s.target());
        if (slot != nullptr && slot == planned.sources[0]) {
          AssignSlot(s.target(), slot);
        } else {
          Assign(s.target(), Array{{}, {}, {}, r.shape, r.dtype, r.mode, std::move(r.chunks)});
        }
        return absl::OkStatus();
      }
      // Program values may be written in place later (loop slots), so results never hold their
      // sources' buffers.
      ASSIGN_OR_RETURN(OpResult r, ExecuteManipulation(context_, planned, SourceBuffers::kCopy));
      Assign(s.target(), Array{{}, {}, {}, r.shape, r.dtype, r.mode, std::move(r.chunks)});
      return absl::OkStatus();
    }
    case v1::Statement::kLinalg: {
      const v1::LinalgStatement& linalg = s.linalg();
      ASSIGN_OR_RETURN(const PlannedLinalg planned,
                       PlanLinalgOp(context_, linalg.spec(), field + ".linalg.spec"));
      if (check) {
        const std::vector<ArrayMeta> metas = LinalgResultMetas(planned);
        if (static_cast<int>(metas.size()) != linalg.targets_size()) {  // program_check's count
          return absl::InternalError(absl::StrCat(field, ".linalg.targets: ", metas.size(),
                                                  " results planned, ", linalg.targets_size(),
                                                  " targets"));
        }
        for (size_t r = 0; r < metas.size(); ++r) Assign(linalg.targets(r), MetadataOnly(metas[r]));
        return absl::OkStatus();
      }
      if (mode_ == RunMode::kRecord) {  // the recording probe's walk stops here
        return NotRecordable(absl::StrCat(
            field,
            ".linalg: a factorization reads its status back to the host (a singular matrix is "
            "an error), which a recorded graph cannot"));
      }
      if (backend_ == nullptr) return absl::InternalError(field + ".linalg: no backend");
      absl::StatusOr<std::vector<OpResult>> results = ExecuteLinalg(context_, *backend_, planned);
      if (!results.ok()) {
        // Say which statement of the program it is (the message names spec.a, or a device).
        const absl::string_view message = results.status().message();
        absl::Status located(results.status().code(),
                             absl::StartsWith(message, "spec.")
                                 ? absl::StrCat(field, ".linalg.", message)
                                 : absl::StrCat(field, ".linalg: ", message));
        // The payloads (an unreachable cluster node's rank) travel on.
        results.status().ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
          located.SetPayload(url, payload);
        });
        return located;
      }
      for (size_t r = 0; r < results->size(); ++r) {
        OpResult& result = (*results)[r];
        Assign(linalg.targets(r), Array{{},
                                        {},
                                        {},
                                        std::move(result.shape),
                                        result.dtype,
                                        result.mode,
                                        std::move(result.chunks)});
      }
      return absl::OkStatus();
    }
    case v1::Statement::kCreate: {
      const v1::CreateStatement& create = s.create();
      const std::string prefix = field + ".create";
      ASSIGN_OR_RETURN(const DType dtype, DTypeFromProto(create.dtype(), prefix + ".dtype"));
      const Shape shape = FromProto(create.shape());
      RETURN_IF_ERROR(ValidateShape(shape, dtype, prefix + ".shape"));
      ASSIGN_OR_RETURN(const IndexMap map,
                       context_.normalize_map(create.index_map(), shape, prefix + ".index_map"));
      if (absl::Status valid = ValidateFill(create.fill(), dtype, shape); !valid.ok()) {
        // The fill's own messages name "fill.<kind>"; say which statement's.
        return absl::Status(valid.code(), absl::StrCat(prefix, ".", valid.message()));
      }
      if (check) {
        Assign(s.target(), MetadataOnly({shape, dtype, Mode::kReplica, map}));
        return absl::OkStatus();
      }
      Array out{{}, {}, {}, shape, dtype, Mode::kReplica, {}};
      ASSIGN_OR_RETURN(out.chunks, AllocateChunks(*context_.ops, dtype, map));
      RETURN_IF_ERROR(LaunchFill(*context_.ops, out, create.fill(), context_.alive));
      Assign(s.target(), std::move(out));
      return absl::OkStatus();
    }
    case v1::Statement::kWhileLoop:
      return RunWhile(s.while_loop(), field + ".while_loop");
    case v1::Statement::kIfElse:
      return RunIf(s.if_else(), field + ".if_else");
    case v1::Statement::OP_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError(absl::StrCat(field, ": a statement needs an op"));
}

absl::StatusOr<ArrayPtr> Interpreter::CheckCondition(const std::string& name,
                                                     const std::string& field) {
  ASSIGN_OR_RETURN(ArrayPtr condition, Lookup(name, field));
  if (condition->dtype != DType::kBool || !condition->shape.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": the condition must be a 0-d bool; ",
                                                   QuoteClientString(name), " is ",
                                                   Describe(*condition)));
  }
  return condition;
}

absl::Status Interpreter::CheckKeptType(const std::string& name, const ArrayPtr& before,
                                        const ArrayPtr& after, const std::string& field) const {
  if (before->shape == after->shape && before->dtype == after->dtype &&
      before->mode == after->mode && before->index_map() == after->index_map()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      field, ": variable ", QuoteClientString(name), " is ", Describe(*before),
      " before the body and ", Describe(*after),
      " after it; a variable assigned in a loop or branch keeps its shape, dtype, mode and index "
      "map (reshard or astype into a new variable instead)"));
}

absl::StatusOr<BufferPtr> Interpreter::FlagBuffer(const ArrayPtr& condition) {
  if (condition->mode == Mode::kReplica) return condition->chunks.front().buffer;
  // Op-mode partials (all() leaves MIN partials): combine onto the first chunk's device.
  const int device = condition->chunks.front().spec.device;
  ASSIGN_OR_RETURN(std::vector<Chunk> combined,
                   Relayout(*context_.ops, *condition, {ChunkSpec{device, FullBox({})}},
                            Mode::kReplica, context_.alive));
  return combined.front().buffer;
}

absl::StatusOr<ConditionFlags> Interpreter::FlagsOf(const ArrayPtr& condition) {
  if (record_devices_.size() <= 1) {
    ASSIGN_OR_RETURN(BufferPtr buffer, FlagBuffer(condition));
    return ConditionFlags(std::move(buffer));
  }
  // Combining the partials here would copy across devices, which a graph cannot hold: the
  // devices combine them instead, on every evaluation.
  ConditionFlags flags;
  for (const Chunk& chunk : condition->chunks) flags.buffers.push_back(chunk.buffer);
  flags.any = condition->mode == Mode::kMax || condition->mode == Mode::kSum;
  return flags;
}

absl::StatusOr<bool> Interpreter::ReadFlag(const ArrayPtr& condition) {
  ASSIGN_OR_RETURN(const BufferPtr buffer, FlagBuffer(condition));
  bool value = false;
  ASSIGN_OR_RETURN(std::unique_ptr<PendingRead> read, backend_->ReadToHost(buffer, 0, 1, &value));
  RETURN_IF_ERROR(read->Wait());
  return value;
}

absl::StatusOr<ArrayPtr> Interpreter::NewSlot(const ArrayPtr& value) {
  Array slot = *value;
  ASSIGN_OR_RETURN(slot.chunks, AllocateChunks(*context_.ops, value->dtype, value->index_map()));
  auto shared = std::make_shared<const Array>(std::move(slot));
  RETURN_IF_ERROR(CopyInto(value, shared));
  return shared;
}

absl::Status Interpreter::CopyInto(const ArrayPtr& value, const ArrayPtr& slot) {
  if (value->mode != slot->mode || value->index_map() != slot->index_map()) {
    // A value kept uncombined on one path and not on another (see kReduce).
    return NotRecordable(
        absl::StrCat("a recorded loop or branch gives a variable values of different layouts (",
                     Describe(*value), " and ", Describe(*slot), ")"));
  }
  std::vector<BoxCopy> copies;
  for (size_t c = 0; c < slot->chunks.size(); ++c) {
    const Chunk& from = value->chunks[c];
    const Chunk& to = slot->chunks[c];
    if (from.buffer == to.buffer) continue;  // unchanged on this path
    const Shape shape = BoxShape(to.spec.box);
    copies.push_back(BoxCopy{BufferBox{from.buffer, shape, FullBox(shape)},
                             BufferBox{to.buffer, shape, FullBox(shape)}});
  }
  if (copies.empty()) return absl::OkStatus();
  return context_.ops->Copy(slot->dtype, copies);
}

absl::StatusOr<bool> Interpreter::RecordFused(const v1::WhileLoop& loop,
                                              const ConditionFlags& entry,
                                              const std::string& field) {
  std::vector<int> devices = record_devices_;
  if (devices.empty()) devices = {env_.at(loop.condition())->chunks.front().spec.device};
  std::string why_not;
  std::optional<std::vector<FusedLoop>> fused =
      PlanFusedLoop(loop, env_, context_, devices, entry.buffers.front(), &why_not);
  if (fused) {
    absl::Status recorded = recording_->RecordFusedWhile(*fused);
    if (recorded.ok()) {
      ++fused_loops_;
      return true;
    }
    if (!absl::IsUnimplemented(recorded)) return recorded;
    why_not = std::string(recorded.message());
  }
  spdlog::debug("RunGraph: {} records statement by statement: {}", field, why_not);
  return false;
}

absl::Status Interpreter::RunWhile(const v1::WhileLoop& loop, const std::string& field) {
  ASSIGN_OR_RETURN(const ArrayPtr initial_condition,
                   CheckCondition(loop.condition(), field + ".condition"));
  absl::flat_hash_set<std::string> assigned;
  CollectTargets(loop.body(), assigned);
  const absl::flat_hash_map<std::string, ArrayPtr> before = env_;
  // Loop-carried: assigned in the body, alive before it. The rest is local to the body.
  std::vector<std::string> carried;
  for (const std::string& name : assigned) {
    if (before.contains(name)) carried.push_back(name);
  }
  auto drop_locals = [&] {
    absl::erase_if(env_, [&](const auto& entry) { return !before.contains(entry.first); });
  };
  const std::string body_field = field + ".body";

  switch (mode_) {
    case RunMode::kCheck: {
      RETURN_IF_ERROR(RunBlock(loop.body(), body_field));
      for (const std::string& name : carried) {
        RETURN_IF_ERROR(CheckKeptType(name, before.at(name), env_.at(name), body_field));
      }
      RETURN_IF_ERROR(CheckCondition(loop.condition(), field + ".condition").status());
      env_ = before;
      return absl::OkStatus();
    }
    case RunMode::kEager: {
      int64_t count = 0;
      while (true) {
        RETURN_IF_ERROR(context_.CheckAlive());
        ASSIGN_OR_RETURN(const bool go, ReadFlag(env_.at(loop.condition())));
        if (!go) break;
        if (count == loop.max_iterations()) {
          stats_.hit_iteration_cap = true;
          break;
        }
        RETURN_IF_ERROR(RunBlock(loop.body(), body_field));
        drop_locals();
        ++count;
        ++stats_.iterations;
      }
      return absl::OkStatus();
    }
    case RunMode::kRecord: {
      // Fixed slots: the body reads the carried values from them and copies its new values back,
      // so every iteration of the recorded body sees the previous one's results.
      absl::flat_hash_map<std::string, ArrayPtr> slots;
      for (const std::string& name : carried) {
        ASSIGN_OR_RETURN(slots[name], NewSlot(env_.at(name)));
        env_[name] = slots[name];
      }
      ASSIGN_OR_RETURN(const ConditionFlags entry_flag, FlagsOf(env_.at(loop.condition())));
      ASSIGN_OR_RETURN(const bool fused, RecordFused(loop, entry_flag, field));
      if (fused) return absl::OkStatus();  // the carried variables are their slots already
      RETURN_IF_ERROR(recording_->BeginWhile(entry_flag, loop.max_iterations()));
      slot_scopes_.push_back(slots);
      absl::Status body = RunBlock(loop.body(), body_field);
      slot_scopes_.pop_back();
      RETURN_IF_ERROR(body);
      for (const std::string& name : carried) {
        RETURN_IF_ERROR(CopyInto(env_.at(name), slots[name]));
        env_[name] = slots[name];
      }
      drop_locals();
      ASSIGN_OR_RETURN(const ConditionFlags body_flag, FlagsOf(env_.at(loop.condition())));
      return recording_->EndWhile(body_flag);
    }
  }
  return absl::OkStatus();
}

absl::Status Interpreter::RunIf(const v1::IfElse& branch, const std::string& field) {
  ASSIGN_OR_RETURN(const ArrayPtr condition,
                   CheckCondition(branch.condition(), field + ".condition"));
  absl::flat_hash_set<std::string> assigned;
  CollectTargets(branch.then_body(), assigned);
  CollectTargets(branch.else_body(), assigned);
  const absl::flat_hash_map<std::string, ArrayPtr> before = env_;
  std::vector<std::string> kept;
  for (const std::string& name : assigned) {
    if (before.contains(name)) kept.push_back(name);
  }
  auto drop_locals = [&] {
    absl::erase_if(env_, [&](const auto& entry) { return !before.contains(entry.first); });
  };

  switch (mode_) {
    case RunMode::kCheck: {
      for (const auto& [body, name] : {std::pair{&branch.then_body(), ".then_body"},
                                       std::pair{&branch.else_body(), ".else_body"}}) {
        env_ = before;
        RETURN_IF_ERROR(RunBlock(*body, field + name));
        for (const std::string& var : kept) {
          RETURN_IF_ERROR(CheckKeptType(var, before.at(var), env_.at(var), field + name));
        }
      }
      env_ = before;
      return absl::OkStatus();
    }
    case RunMode::kEager: {
      ASSIGN_OR_RETURN(const bool take_then, ReadFlag(condition));
      RETURN_IF_ERROR(RunBlock(take_then ? branch.then_body() : branch.else_body(),
                               field + (take_then ? ".then_body" : ".else_body")));
      drop_locals();
      return absl::OkStatus();
    }
    case RunMode::kRecord: {
      // Both branches write the variables they change into the same slots, so whichever ran,
      // the code after the IF reads its values there.
      absl::flat_hash_map<std::string, ArrayPtr> slots;
      for (const std::string& name : kept) {
        ASSIGN_OR_RETURN(slots[name], NewSlot(env_.at(name)));
      }
      ASSIGN_OR_RETURN(const ConditionFlags flag, FlagsOf(condition));
      RETURN_IF_ERROR(recording_->BeginIf(flag));
      for (const auto& [body, name] : {std::pair{&branch.then_body(), ".then_body"},
                                       std::pair{&branch.else_body(), ".else_body"}}) {
        for (const std::string& var : kept) env_[var] = slots[var];
        slot_scopes_.push_back(slots);
        absl::Status status = RunBlock(*body, field + name);
        slot_scopes_.pop_back();
        RETURN_IF_ERROR(status);
        for (const std::string& var : kept) {
          RETURN_IF_ERROR(CopyInto(env_.at(var), slots[var]));
        }
        drop_locals();
        if (body == &branch.then_body()) RETURN_IF_ERROR(recording_->Else());
      }
      for (const std::string& var : kept) env_[var] = slots[var];
      return recording_->EndIf();
    }
  }
  return absl::OkStatus();
}

}  // namespace distarray
