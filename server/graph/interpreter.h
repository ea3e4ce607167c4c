// Walks a program's statements through the engine's op executors, in one of three modes:
//   kCheck:  types, shapes and layouts inferred statically: every op is planned on metadata-only
//            arrays and nothing touches a device. Exact errors before anything runs.
//   kEager:  runs the program step by step; the host reads each loop condition (the host
//            backend, and programs the CUDA lowering does not take).
//   kRecord: records the program into a GraphRecording (one device or several): loops and
//            branches become conditional nodes, loop-carried variables live in fixed slots the
//            body copies its new values into, and every temporary is allocated while recording.
// One walker for all three keeps what is checked and what runs the same program.
#ifndef DISTARRAY_SERVER_GRAPH_INTERPRETER_H_
#define DISTARRAY_SERVER_GRAPH_INTERPRETER_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distarray/v1/distarray.pb.h"
#include "server/backend/backend.h"
#include "server/backend/graph_recorder.h"
#include "server/ops/op_executors.h"

namespace distarray {

enum class RunMode { kCheck, kEager, kRecord };

class Interpreter {
 public:
  // `context.resolve` is replaced by variable lookup, and `context.ops` by the sink of `mode`:
  // kEager sends its work to `backend` (and reads conditions through it), kRecord to
  // `recording`; kCheck needs neither. Its normalize_map and alive are used.
  Interpreter(RunMode mode, OpContext context, Backend* backend = nullptr,
              GraphRecording* recording = nullptr);

  // kRecord: the recording's devices (default: one device).
  void RecordOn(std::vector<int> devices) { record_devices_ = std::move(devices); }

  // Binds an input variable (a metadata-only array in kCheck).
  void Bind(const std::string& name, ArrayPtr value) {
    inputs_.insert(value.get());
    env_[name] = std::move(value);
  }

  // Runs (or checks, or records) the program's statements; `field` names the program in errors.
  // kCheck also verifies that every output is assigned at the top level.
  absl::Status Run(const v1::Program& program, absl::string_view field);

  // A variable's value after Run (nullptr when unassigned).
  ArrayPtr Value(const std::string& name) const;
  // kRecord: the same for a value the program returns; FAILED_PRECONDITION for one the recording
  // left uncombined (a condition's partials over several devices).
  absl::StatusOr<ArrayPtr> RecordedValue(const std::string& name) const;
  // Eager runs: what ran. (Recorded runs report theirs from the replay.)
  const GraphRunStats& stats() const { return stats_; }
  // kRecord: the loops recorded as one fused kernel per iteration.
  int fused_loops() const { return fused_loops_; }
  // kRecord: the straight-line chains recorded as one kernel per device, and the statements they
  // cover; the same for those inside loop and branch bodies.
  int fused_chains() const { return fused_chains_; }
  int fused_chain_statements() const { return fused_chain_statements_; }
  int fused_chains_in_bodies() const { return fused_chains_in_bodies_; }
  int fused_chain_statements_in_bodies() const { return fused_chain_statements_in_bodies_; }
  // kCheck: every device any value of the program lives on.
  const std::set<int>& devices() const { return devices_; }
  // kRecord: why the program cannot be recorded as a graph (it then runs eagerly), once Run
  // stopped for that reason; nullopt otherwise. A graph combines a reduction over several devices
  // only where it is a condition, and gives a variable one layout on every path.
  const std::optional<std::string>& not_recordable() const { return not_recordable_; }

 private:
  using Block = google::protobuf::RepeatedPtrField<v1::Statement>;
  absl::Status RunBlock(const Block& block, const std::string& field);
  absl::Status RunStatement(const v1::Statement& statement, const std::string& field);
  absl::Status RunWhile(const v1::WhileLoop& loop, const std::string& field);
  absl::Status RunIf(const v1::IfElse& branch, const std::string& field);
  // kRecord: records `loop` as a fused loop (loop_fusion.h) when it fuses and the recording can
  // compile it; false (nothing recorded) otherwise. Its carried variables are bound to their slots.
  absl::StatusOr<bool> RecordFused(const v1::WhileLoop& loop, const ConditionFlags& entry,
                                   const std::string& field);
  // kRecord: records the run of elementwise statements at block[start] as one kernel per device
  // (chain_fusion.h) where it fuses and the recording can compile it; returns the statements it
  // covered (0: none, nothing recorded). Loop-carried results go straight into their slots.
  // Results that nothing reads again are not stored: a variable local to the block (not in
  // `entry`, the variables that existed when it began), that no later statement of the block
  // mentions (`last_mentions`, LastMentions of the block) and the program does not return.
  absl::StatusOr<int> RecordChain(const Block& block, int start,
                                  const absl::flat_hash_set<std::string>& entry,
                                  const absl::flat_hash_map<std::string, int>& last_mentions);

  absl::StatusOr<ArrayPtr> Lookup(const std::string& name, const std::string& field) const;
  // Lookup for a value an op reads: FAILED_PRECONDITION for one left uncombined.
  absl::StatusOr<ArrayPtr> LookupOperand(const std::string& name, const std::string& field) const;
  // Stores an op's result (kCheck: a metadata-only array of `meta`), or binds a slot it was
  // written into.
  void Assign(const std::string& name, Array value);
  void AssignSlot(const std::string& name, const ArrayPtr& slot);
  absl::StatusOr<ArrayPtr> CheckCondition(const std::string& name, const std::string& field);
  // The buffer holding a 0-d bool's value (op-mode partials are combined first).
  absl::StatusOr<BufferPtr> FlagBuffer(const ArrayPtr& condition);
  // kRecord: the condition as the recording reads it. On one device, one buffer (FlagBuffer);
  // over several, every chunk, which the devices combine and agree on while the graph runs.
  absl::StatusOr<ConditionFlags> FlagsOf(const ArrayPtr& condition);
  absl::StatusOr<bool> ReadFlag(const ArrayPtr& condition);
  // kRecord: a fresh slot holding `value`'s current contents; and copying a new value into one.
  absl::StatusOr<ArrayPtr> NewSlot(const ArrayPtr& value);
  absl::Status CopyInto(const ArrayPtr& value, const ArrayPtr& slot);
  // kCheck: a variable assigned in a body that existed before keeps its type.
  absl::Status CheckKeptType(const std::string& name, const ArrayPtr& before, const ArrayPtr& after,
                             const std::string& field) const;

  // kRecord: notes why the program cannot be recorded, and returns that as the error that stops
  // the walk.
  absl::Status NotRecordable(std::string why) const;

  const RunMode mode_;
  OpContext context_;
  Backend* const backend_;
  GraphRecording* const recording_;
  mutable std::optional<std::string> not_recordable_;
  // kRecord: a slot the statement assigning `name` may write straight into (the innermost open
  // loop's or branch's), or nullptr.
  ArrayPtr SlotFor(const std::string& name) const;

  absl::flat_hash_map<std::string, ArrayPtr> env_;
  // The program's outputs and value outputs (read after the last statement).
  absl::flat_hash_set<std::string> results_;
  // The arrays bound to inputs (the caller's): never written in place.
  absl::flat_hash_set<const Array*> inputs_;
  // kRecord: per open loop or branch, its variables' fixed slots.
  std::vector<absl::flat_hash_map<std::string, ArrayPtr>> slot_scopes_;
  GraphRunStats stats_;
  std::set<int> devices_;
  std::vector<int> record_devices_;
  // kRecord over several devices: variables holding the uncombined partials of a 0-d bool
  // reduction that the program asked combined; only conditions may read them.
  absl::flat_hash_set<std::string> uncombined_;
  int fused_loops_ = 0;
  int fused_chains_ = 0;
  int fused_chain_statements_ = 0;
  int fused_chains_in_bodies_ = 0;
  int fused_chain_statements_in_bodies_ = 0;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_GRAPH_INTERPRETER_H_
