#include "server/graph/program_runner.h"

#include <chrono>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/proto_convert.h"
#include "common/status_macros.h"
#include "server/backend/memory_ledger.h"
#include "server/graph/interpreter.h"
#include "server/graph/program_digest.h"
#include "server/graph/recording_probe.h"
#include "server/ops/layout.h"

namespace distarray {
namespace {

// What a recorded graph depends on besides the program: each argument's type and layout.
std::string Signature(const std::vector<ArrayPtr>& arguments) {
  std::string signature;
  for (const ArrayPtr& a : arguments) {
    v1::ArrayInfo info;
    info.set_dtype(static_cast<v1::DType>(a->dtype));
    *info.mutable_shape() = ToProto(a->shape);
    info.set_mode(static_cast<v1::Mode>(a->mode));
    *info.mutable_index_map() = ToProto(a->index_map());
    absl::StrAppend(&signature, info.ByteSizeLong(), ":", info.SerializeAsString());
  }
  return signature;
}

OpResult CopyOf(const Array& array, std::vector<Chunk> chunks) {
  return OpResult{array.shape, array.dtype, array.mode, std::move(chunks)};
}

}  // namespace

struct ProgramRunner::CachedGraph {
  ~CachedGraph() {
    // Members go after this body: the graph (and its device memory) is released just after its
    // charge; the gap is the same as an array's.
    if (tenant_memory != nullptr) tenant_memory->Release(tenant, charges);
  }
  absl::Mutex mu;  // one replay at a time: the slots are shared
  std::unique_ptr<RecordedGraph> graph;
  std::vector<ArrayPtr> input_slots;             // per program input
  std::map<std::string, ArrayPtr> result_slots;  // outputs and value_outputs, by variable
  int fused_loops = 0;
  int fused_chains_in_bodies = 0, fused_chain_statements_in_bodies = 0;
  // What its recording allocated, by device (as the device ledgers count it), and whom it is
  // charged to while the graph exists: set once the charge is made.
  DeviceCharges held;
  std::string tenant;
  DeviceCharges charges;
  std::shared_ptr<TenantMemory> tenant_memory;
};

absl::StatusOr<v1::Value> ReadValue(Backend& backend, const Array& array, const StopCheck& alive) {
  if (NumElements(array.shape) == 0) {
    // A zero-size value has no chunks to read: its shape and dtype, no bytes.
    v1::Value value;
    *value.mutable_shape() = ToProto(array.shape);
    value.set_dtype(static_cast<v1::DType>(array.dtype));
    return value;
  }
  const int device = array.chunks.front().spec.device;
  const IndexMap whole{ChunkSpec{device, FullBox(array.shape)}};
  std::vector<Chunk> chunks = array.chunks;
  if (array.mode != Mode::kReplica || array.index_map() != whole) {
    ASSIGN_OR_RETURN(chunks, Relayout(backend, array, whole, Mode::kReplica, alive));
  }
  v1::Value value;
  *value.mutable_shape() = ToProto(array.shape);
  value.set_dtype(static_cast<v1::DType>(array.dtype));
  const int64_t bytes = NumElements(array.shape) * DTypeSize(array.dtype);
  std::string data(static_cast<size_t>(bytes), '\0');
  if (bytes > 0) {
    ASSIGN_OR_RETURN(std::unique_ptr<PendingRead> read,
                     backend.ReadToHost(chunks.front().buffer, 0, bytes, data.data()));
    RETURN_IF_ERROR(read->Wait());
  }
  value.set_data(std::move(data));
  return value;
}

ProgramRunner::ProgramRunner(Backend& backend, ProgramLimits limits, bool use_graphs,
                             std::shared_ptr<TenantMemory> tenant_memory)
    : backend_(backend),
      limits_(limits),
      use_graphs_(use_graphs),
      tenant_memory_(std::move(tenant_memory)) {}

ProgramRunner::~ProgramRunner() = default;

GraphCacheCounters ProgramRunner::counters() const {
  absl::MutexLock lock(&mu_);
  return GraphCacheCounters{static_cast<int64_t>(lru_.size()), hits_, misses_};
}

int ProgramRunner::Evict(const std::function<bool(const CachedGraph&)>& drop) {
  std::vector<std::shared_ptr<CachedGraph>> dropped;  // destroyed after the lock
  {
    absl::MutexLock lock(&mu_);
    for (auto it = lru_.begin(); it != lru_.end();) {
      if (drop(*it->second)) {
        dropped.push_back(std::move(it->second));
        by_key_.erase(it->first);
        it = lru_.erase(it);
      } else {
        ++it;
      }
    }
  }
  return static_cast<int>(dropped.size());
}

int ProgramRunner::ClearCache() {
  {
    absl::MutexLock lock(&mu_);
    unrecordable_.clear();
  }
  // The callers say why in their own words (memory pressure, the drain).
  return Evict([](const CachedGraph&) { return true; });
}

int ProgramRunner::EvictTenant(const std::string& tenant) {
  const int dropped = Evict([&](const CachedGraph& graph) { return graph.tenant == tenant; });
  if (dropped > 0) {
    spdlog::info("RunGraph: dropped {} cached graph(s) of tenant '{}' for its memory quota",
                 dropped, tenant);
  }
  return dropped;
}

absl::StatusOr<ProgramRunResult> ProgramRunner::Run(const v1::Program& program,
                                                    const std::string& program_key,
                                                    const std::vector<ArrayPtr>& arguments,
                                                    const OpContext& context,
                                                    const std::string& tenant) {
  const auto entered = std::chrono::steady_clock::now();
  GraphRecorder* recorder = backend_.graph_recorder();
  const bool may_record = use_graphs_ && recorder != nullptr;
  // The signature by digest too: an argument's index map can have 65,536 chunks.
  const std::string key =
      may_record ? absl::StrCat(program_key, "/", Sha256Hex(Signature(arguments))) : "";
  // A cached graph was recorded only after this key's program passed the check below with
  // arguments of the same types and layouts, and the check depends on nothing else: a hit
  // replays at once (the check took 70-140 us of a 2 ms call; docs/performance.md).
  if (may_record) {
    std::shared_ptr<CachedGraph> cached;
    {
      absl::MutexLock lock(&mu_);
      if (auto it = by_key_.find(key); it != by_key_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        cached = it->second->second;
        ++hits_;
      }
    }
    if (cached != nullptr) {
      spdlog::debug(
          "RunGraph: found its graph in {:.0f} us",
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - entered)
              .count());
      return ReplayCached(std::move(cached), key, program, arguments, context, /*hit=*/true);
    }
  }

  // Types, shapes and layouts first, on metadata only: exact errors before anything runs.
  Interpreter check(RunMode::kCheck, context);
  for (int i = 0; i < program.inputs_size(); ++i)
    check.Bind(program.inputs(i),
               std::make_shared<const Array>(MetadataOnly(MetaOf(*arguments[i]))));
  RETURN_IF_ERROR(check.Run(program, "program"));
  int64_t value_bytes = 0;
  for (int i = 0; i < program.value_outputs_size(); ++i) {
    const ArrayPtr v = check.Value(program.value_outputs(i));
    value_bytes += NumElements(v->shape) * DTypeSize(v->dtype);  // each is below 2^62
    if (value_bytes > limits_.max_value_output_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "program.value_outputs[", i, "]: the values returned take more than ",
          limits_.max_value_output_bytes, " bytes; return large results in outputs (as arrays)"));
    }
  }

  const std::vector<int> devices(check.devices().begin(), check.devices().end());
  if (!may_record || devices.empty() || !recorder->CanRecord(devices)) {
    return RunEager(program, arguments, context);
  }
  std::shared_ptr<CachedGraph> graph;
  bool unrecordable = false;
  {
    absl::MutexLock lock(&mu_);
    unrecordable = unrecordable_.contains(key);
    auto it = unrecordable ? by_key_.end() : by_key_.find(key);
    if (it != by_key_.end()) {  // recorded by another call since the lookup above
      lru_.splice(lru_.begin(), lru_, it->second);
      graph = it->second->second;
      ++hits_;
    } else if (!unrecordable) {
      ++misses_;
    }
  }
  if (unrecordable) return RunEager(program, arguments, context);
  const bool hit = graph != nullptr;
  if (hit) {
    spdlog::debug(
        "RunGraph: checked and found its graph in {:.0f} us",
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - entered)
            .count());
  }
  if (!hit) {
    // Whether it can be recorded is decided before recording, on metadata; a program the lowering
    // cannot take still runs, eagerly (and so on later runs), and the log says why.
    absl::StatusOr<std::optional<std::string>> why_not =
        WhyNotRecordable(program, arguments, devices, context);
    if (!why_not.ok()) {
      if (absl::IsCancelled(why_not.status()) || absl::IsDeadlineExceeded(why_not.status())) {
        return why_not.status();
      }
      // The check passed, so the probe's walk should too: a failure here is a bug of ours, and
      // the program still gets its answer, eagerly (not remembered: a fix needs no restart).
      spdlog::error(
          "RunGraph: the recording probe failed after the check passed; running "
          "eagerly: {}",
          why_not.status().ToString());
      return RunEager(program, arguments, context);
    }
    if (*why_not) {
      spdlog::warn("RunGraph: running eagerly (and so on later runs): {}", **why_not);
      absl::MutexLock lock(&mu_);
      if (unrecordable_.size() >= kMaxUnrecordable) unrecordable_.clear();
      unrecordable_.insert(key);
      return RunEager(program, arguments, context);
    }
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::shared_ptr<CachedGraph>> recorded =
        Record(program, arguments, devices, context);
    if (recorded.status().code() == absl::StatusCode::kResourceExhausted &&
        counters().entries > 0) {
      // Cached graphs hold their slots' memory: give it back and try once more.
      spdlog::info("RunGraph: out of device memory while recording; dropping cached graphs");
      ClearCache();
      recorded = Record(program, arguments, devices, context);
    }
    if (absl::IsInternal(recorded.status())) {
      // The devices failed the recording (an NCCL clique revoked under it, a capture the driver
      // invalidated): this run goes eagerly, the next one records again.
      spdlog::warn("RunGraph: recording failed, running eagerly: {}", recorded.status().ToString());
      return RunEager(program, arguments, context);
    }
    RETURN_IF_ERROR(recorded.status());
    graph = *std::move(recorded);
    spdlog::info("RunGraph: recorded and instantiated a graph on device(s) {} in {:.1f} ms",
                 absl::StrJoin(devices, ", "),
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
    if (tenant_memory_ != nullptr) {
      // The graph keeps its memory while cached: the tenant's, against its quota (its other
      // graphs go first). A graph that does not fit is not kept: the program runs eagerly, and
      // only its results are charged, as for any request.
      if (absl::Status charged = tenant_memory_->Reserve(tenant, graph->held); !charged.ok()) {
        spdlog::info(
            "RunGraph: not caching a graph the tenant's quota cannot hold; running "
            "eagerly: {}",
            charged.ToString());
        graph.reset();
        return RunEager(program, arguments, context);
      }
      graph->tenant = tenant;
      graph->charges = graph->held;
      graph->tenant_memory = tenant_memory_;
    } else {
      graph->tenant = tenant;
    }
    std::shared_ptr<CachedGraph> evicted;  // destroyed after the lock
    absl::MutexLock lock(&mu_);
    if (!by_key_.contains(key)) {
      lru_.emplace_front(key, graph);
      by_key_[key] = lru_.begin();
      while (static_cast<int>(lru_.size()) > limits_.max_cached_graphs) {
        by_key_.erase(lru_.back().first);
        evicted = std::move(lru_.back().second);  // a replay in flight keeps its own reference
        lru_.pop_back();
      }
    }
  }
  return ReplayCached(std::move(graph), key, program, arguments, context, hit);
}

absl::StatusOr<ProgramRunResult> ProgramRunner::ReplayCached(std::shared_ptr<CachedGraph> graph,
                                                             const std::string& key,
                                                             const v1::Program& program,
                                                             const std::vector<ArrayPtr>& arguments,
                                                             const OpContext& context, bool hit) {
  absl::StatusOr<ProgramRunResult> result = Replay(*graph, program, arguments, context);
  if (!result.ok() && !absl::IsCancelled(result.status()) &&
      !absl::IsDeadlineExceeded(result.status())) {
    // A graph whose replay failed is not trusted again: the next run records anew.
    spdlog::warn("RunGraph: a replay failed; dropping its graph: {}", result.status().ToString());
    absl::MutexLock lock(&mu_);
    if (auto it = by_key_.find(key); it != by_key_.end() && it->second->second == graph) {
      lru_.erase(it->second);
      by_key_.erase(it);
    }
  }
  RETURN_IF_ERROR(result.status());
  result->cache_hit = hit;
  return *std::move(result);
}

absl::StatusOr<ProgramRunResult> ProgramRunner::RunEager(const v1::Program& program,
                                                         const std::vector<ArrayPtr>& arguments,
                                                         const OpContext& context) {
  Interpreter interpreter(RunMode::kEager, context, &backend_);
  for (int i = 0; i < program.inputs_size(); ++i) interpreter.Bind(program.inputs(i), arguments[i]);
  RETURN_IF_ERROR(interpreter.Run(program, "program"));
  ProgramRunResult result;
  result.stats = interpreter.stats();
  result.execution = v1::GRAPH_EXECUTION_EAGER;
  for (const std::string& name : program.outputs()) {
    const ArrayPtr value = interpreter.Value(name);
    // Shares the buffers: arrays are immutable snapshots, so an output equal to an input (or to
    // another output) may hold the same memory.
    result.outputs.emplace_back(name, CopyOf(*value, value->chunks));
  }
  for (const std::string& name : program.value_outputs()) {
    ASSIGN_OR_RETURN(result.values[name],
                     ReadValue(backend_, *interpreter.Value(name), context.alive));
  }
  return result;
}

namespace {

// One walk of a program into a recording (the real one, or a probe): its input slots allocated
// there and bound, its statements, then the values it returns.
struct RecordedWalk {
  std::vector<ArrayPtr> input_slots;             // per program input
  std::map<std::string, ArrayPtr> result_slots;  // outputs and value_outputs, by variable
  int fused_loops = 0;
  // Straight-line chains recorded as one kernel each, and the statements they cover (all, and
  // inside loop and branch bodies).
  int fused_chains = 0, fused_chain_statements = 0;
  int fused_chains_in_bodies = 0, fused_chain_statements_in_bodies = 0;
  // Why a graph cannot express the program (the interpreter's answer), or nullopt.
  std::optional<std::string> not_recordable;
};

absl::StatusOr<RecordedWalk> WalkInto(GraphRecording& recording, const v1::Program& program,
                                      const std::vector<ArrayPtr>& arguments,
                                      const std::vector<int>& devices, const OpContext& context) {
  Interpreter interpreter(RunMode::kRecord, context, nullptr, &recording);
  interpreter.RecordOn(devices);
  RecordedWalk walk;
  for (int i = 0; i < program.inputs_size(); ++i) {
    // Input slots: allocated on the recording, so they belong to the graph; each replay copies
    // its arguments in.
    Array slot = MetadataOnly(MetaOf(*arguments[i]));
    ASSIGN_OR_RETURN(slot.chunks, AllocateChunks(recording, slot.dtype, slot.index_map()));
    walk.input_slots.push_back(std::make_shared<const Array>(std::move(slot)));
    interpreter.Bind(program.inputs(i), walk.input_slots.back());
  }
  absl::Status walked = interpreter.Run(program, "program");
  for (const auto* list : {&program.outputs(), &program.value_outputs()}) {
    for (const std::string& name : *list) {
      if (!walked.ok()) break;
      absl::StatusOr<ArrayPtr> value = interpreter.RecordedValue(name);
      walked = value.status();
      if (value.ok()) walk.result_slots[name] = *std::move(value);
    }
  }
  walk.not_recordable = interpreter.not_recordable();
  if (walk.not_recordable) return walk;
  RETURN_IF_ERROR(walked);
  walk.fused_loops = interpreter.fused_loops();
  walk.fused_chains = interpreter.fused_chains();
  walk.fused_chain_statements = interpreter.fused_chain_statements();
  walk.fused_chains_in_bodies = interpreter.fused_chains_in_bodies();
  walk.fused_chain_statements_in_bodies = interpreter.fused_chain_statements_in_bodies();
  return walk;
}

}  // namespace

absl::StatusOr<std::optional<std::string>> ProgramRunner::WhyNotRecordable(
    const v1::Program& program, const std::vector<ArrayPtr>& arguments,
    const std::vector<int>& devices, const OpContext& context) {
  // The same walk as Record's, on buffers without memory.
  RecordingProbe probe(devices);
  ASSIGN_OR_RETURN(const RecordedWalk walk, WalkInto(probe, program, arguments, devices, context));
  if (walk.not_recordable) return walk.not_recordable;
  return backend_.graph_recorder()->Unsupported(probe.needs());
}

absl::StatusOr<std::shared_ptr<ProgramRunner::CachedGraph>> ProgramRunner::Record(
    const v1::Program& program, const std::vector<ArrayPtr>& arguments,
    const std::vector<int>& devices, const OpContext& context) {
  // Everything the recording allocates is the graph's (graph_recorder.h): the tally counts it.
  const ScopedReservationTally tally;
  absl::StatusOr<std::unique_ptr<GraphRecording>> begun = backend_.graph_recorder()->Begin(devices);
  if (!begun.ok()) {
    // The recorder could not start (no NCCL communicators for the devices to agree through):
    // INTERNAL, so this run goes eagerly and a later one tries again.
    return absl::InternalError(absl::StrCat("starting a recording: ", begun.status().message()));
  }
  std::unique_ptr<GraphRecording> recording = *std::move(begun);
  ASSIGN_OR_RETURN(RecordedWalk walk, WalkInto(*recording, program, arguments, devices, context));
  if (walk.not_recordable) {
    // The probe walked the same program and found it recordable.
    return absl::InternalError(
        absl::StrCat("recording a program the probe passed: ", *walk.not_recordable));
  }
  auto cached = std::make_shared<CachedGraph>();
  cached->input_slots = std::move(walk.input_slots);
  cached->result_slots = std::move(walk.result_slots);
  ASSIGN_OR_RETURN(cached->graph, recording->Finish());
  cached->fused_loops = walk.fused_loops;
  cached->fused_chains_in_bodies = walk.fused_chains_in_bodies;
  cached->fused_chain_statements_in_bodies = walk.fused_chain_statements_in_bodies;
  cached->held = tally.charges();
  if (walk.fused_chains > 0) {
    spdlog::info(
        "RunGraph: {} statements recorded as {} straight-line chain kernel(s) per device ({} "
        "statements as {} kernel(s) inside loop and branch bodies)",
        walk.fused_chain_statements, walk.fused_chains, walk.fused_chain_statements_in_bodies,
        walk.fused_chains_in_bodies);
  }
  return cached;
}

absl::StatusOr<ProgramRunResult> ProgramRunner::Replay(CachedGraph& cached,
                                                       const v1::Program& program,
                                                       const std::vector<ArrayPtr>& arguments,
                                                       const OpContext& context) {
  absl::MutexLock lock(&cached.mu);
  // Where a replay's time goes on the host, for the debug log (docs/performance.md).
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  auto us = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
  };
  std::vector<BufferPtr> reads, writes;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Array& slot = *cached.input_slots[i];
    std::vector<BoxCopy> copies;
    for (size_t c = 0; c < slot.chunks.size(); ++c) {
      const Shape shape = BoxShape(slot.chunks[c].spec.box);
      copies.push_back(BoxCopy{BufferBox{arguments[i]->chunks[c].buffer, shape, FullBox(shape)},
                               BufferBox{slot.chunks[c].buffer, shape, FullBox(shape)}});
      reads.push_back(slot.chunks[c].buffer);
    }
    if (!copies.empty()) RETURN_IF_ERROR(backend_.Copy(slot.dtype, copies));
  }
  for (const auto& [name, slot] : cached.result_slots) {
    for (const Chunk& c : slot->chunks) writes.push_back(c.buffer);
  }
  const Clock::time_point copied_in = Clock::now();
  RETURN_IF_ERROR(cached.graph->Launch(reads, writes));
  const Clock::time_point launched = Clock::now();

  ProgramRunResult result;
  result.execution = v1::GRAPH_EXECUTION_DEVICE_GRAPH;
  result.fused_loops = cached.fused_loops;
  result.fused_chains_in_bodies = cached.fused_chains_in_bodies;
  result.fused_chain_statements_in_bodies = cached.fused_chain_statements_in_bodies;
  // The outputs are copied out of the slots (the next replay overwrites them) into new buffers.
  // The copies are enqueued now, ordered after the replay on each device, so their host work
  // (allocation, launches: 20-50 us) overlaps the replay instead of following it; a replay that
  // fails or is cancelled drops them unregistered.
  for (const std::string& name : program.outputs()) {
    const Array& slot = *cached.result_slots.at(name);
    ASSIGN_OR_RETURN(std::vector<Chunk> chunks,
                     Relayout(backend_, slot, slot.index_map(), slot.mode, context.alive));
    result.outputs.emplace_back(name, CopyOf(slot, std::move(chunks)));
  }
  const Clock::time_point copies_out_enqueued = Clock::now();
  ASSIGN_OR_RETURN(result.stats, cached.graph->Wait(context.alive));
  const Clock::time_point waited = Clock::now();
  for (const std::string& name : program.value_outputs()) {
    ASSIGN_OR_RETURN(result.values[name],
                     ReadValue(backend_, *cached.result_slots.at(name), context.alive));
  }
  spdlog::debug(
      "RunGraph replay: copy in {:.0f} us, launch {:.0f} us, copy out enqueued {:.0f} us, wait "
      "{:.0f} us (device {:.0f} us), values {:.0f} us",
      us(start, copied_in), us(copied_in, launched), us(launched, copies_out_enqueued),
      us(copies_out_enqueued, waited), result.stats.device_seconds * 1e6, us(waited, Clock::now()));
  return result;
}

}  // namespace distarray
