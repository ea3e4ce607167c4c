#include "server/host/host_graph_recorder.h"

#include <atomic>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "server/host/host_backend.h"
#include "server/host/host_buffer.h"
#include "server/host/host_stream.h"

namespace distarray {
namespace {

// How often Wait asks its caller whether the replay is still wanted.
constexpr auto kAliveInterval = std::chrono::milliseconds(1);

// One replay: its cancel word and what it did. Shared by the replay closure and Wait, so a graph
// dropped with a replay still queued leaves nothing dangling.
struct HostGraphReplay {
  // Set by Wait from the caller's thread, read by the replay on the device's thread at every loop
  // condition.
  std::atomic<bool> cancel{false};
  // Written by the replay closure only; read by Wait after `done` fired (the event's mutex orders
  // the two).
  GraphRunStats stats;
  HostEventPtr done;
};

// A 0-d bool as the devices store it: one byte, nonzero for true.
bool ReadFlag(const HostBuffer& flag) { return flag.as<unsigned char>()[0] != 0; }

void RunBlock(const std::vector<HostGraphNode>& block, HostGraphReplay& replay);

// The same decisions, in the same order, as the CUDA backend's loop condition kernel: a true flag
// starts another body unless the cancel word is set or the cap is reached; a false flag ends the
// loop without a note. (The kernel reads its word, in host memory, at most every 50 µs; here the
// word is an atomic read every iteration.)
void RunWhile(const HostGraphNode& loop, HostGraphReplay& replay) {
  int64_t count = 0;
  bool go = ReadFlag(*loop.flag);
  while (go) {
    if (replay.cancel.load(std::memory_order_relaxed)) {
      replay.stats.cancelled = true;
      return;
    }
    if (count >= loop.max_iterations) {
      replay.stats.hit_iteration_cap = true;
      return;
    }
    ++count;
    ++replay.stats.iterations;
    RunBlock(loop.body, replay);
    go = ReadFlag(*loop.exit_flag);
  }
}

void RunBlock(const std::vector<HostGraphNode>& block, HostGraphReplay& replay) {
  // A cancelled replay still runs its straight-line work to the end, as a cancelled CUDA graph
  // drains: only loops stop early, so slots are left as some whole number of iterations made them.
  for (const HostGraphNode& node : block) {
    switch (node.kind) {
      case HostGraphNode::Kind::kWork:
        node.work();
        break;
      case HostGraphNode::Kind::kWhile:
        RunWhile(node, replay);
        break;
      case HostGraphNode::Kind::kIf:
        RunBlock(ReadFlag(*node.flag) ? node.body : node.else_body, replay);
        break;
    }
  }
}

const char* KindName(HostGraphNode::Kind kind) {
  return kind == HostGraphNode::Kind::kWhile ? "a WHILE" : "an IF";
}

}  // namespace

// A replay is one piece of work on the device's thread, ordered by the backend's hazards like any
// other.
class HostRecordedGraph final : public RecordedGraph {
 public:
  HostRecordedGraph(HostBackend* backend, int device, std::shared_ptr<HostGraphProgram> program)
      : backend_(backend), device_(device), program_(std::move(program)) {}

  const std::vector<int>& devices() const override { return devices_; }

  absl::Status Launch(absl::Span<const BufferPtr> reads,
                      absl::Span<const BufferPtr> writes) override {
    std::vector<HostBuffer*> read_buffers, write_buffers;
    for (auto [from, to] : {std::pair(reads, &read_buffers), std::pair(writes, &write_buffers)}) {
      for (const BufferPtr& buffer : from) {
        if (buffer == nullptr || buffer->device() != device_) {
          return absl::InvalidArgumentError(absl::StrCat(
              "RecordedGraph::Launch: a buffer that is not on the graph's device ", device_));
        }
        to->push_back(AsHost(buffer).get());
      }
    }
    // A fresh replay object: a new replay starts with the cancel word clear and zero counts.
    auto replay = std::make_shared<HostGraphReplay>();
    auto run = [program = program_, replay] { RunBlock(program->root, *replay); };
    ASSIGN_OR_RETURN(replay->done,
                     backend_->Submit(HostWork{device_, std::move(read_buffers),
                                               std::move(write_buffers), std::move(run)}));
    last_replay_ = std::move(replay);
    return absl::OkStatus();
  }

  absl::StatusOr<GraphRunStats> Wait(const std::function<absl::Status()>& alive) override {
    if (last_replay_ == nullptr) {
      return absl::FailedPreconditionError("RecordedGraph::Wait: no replay was launched");
    }
    HostGraphReplay& replay = *last_replay_;
    absl::Status stop;
    while (!replay.done->WaitFor(kAliveInterval)) {
      if (stop.ok() && alive) {
        stop = alive();
        // The running loop sees the word at its next condition and the rest of the replay
        // drains: the slots stay consistent and the device's stream moves on.
        if (!stop.ok()) replay.cancel.store(true, std::memory_order_relaxed);
      }
    }
    if (!stop.ok()) return stop;
    return replay.stats;
  }

 private:
  HostBackend* const backend_;
  const int device_;
  const std::vector<int> devices_{device_};
  const std::shared_ptr<HostGraphProgram> program_;
  std::shared_ptr<HostGraphReplay> last_replay_;
};

// ---- HostGraphRecording ----

absl::StatusOr<std::unique_ptr<GraphRecording>> HostGraphRecording::Start(HostBackend* backend,
                                                                          int device) {
  if (device < 0 || device >= backend->device_count()) {
    return absl::InvalidArgumentError(absl::StrCat("GraphRecorder::Begin: no device ", device,
                                                   " (the backend has ", backend->device_count(),
                                                   ")"));
  }
  return std::unique_ptr<GraphRecording>(new HostGraphRecording(backend, device));
}

HostGraphRecording::HostGraphRecording(HostBackend* backend, int device)
    : backend_(backend), device_(device) {}

// Abandoned: nothing was enqueued, so dropping the tree (its closures and kept buffers) frees
// everything the recording allocated.
HostGraphRecording::~HostGraphRecording() = default;

absl::Status HostGraphRecording::NotHeld(absl::string_view call, absl::string_view why) const {
  return absl::InternalError(absl::StrCat(call, " in a recording on device ", device_, ": ", why,
                                          " (the recorder should have said so before)"));
}

absl::Status HostGraphRecording::CheckOpen(absl::string_view call) const {
  if (finished_) {
    return absl::FailedPreconditionError(absl::StrCat(call, ": the recording is finished"));
  }
  return absl::OkStatus();
}

absl::Status HostGraphRecording::Admit(absl::string_view call, int device,
                                       const std::vector<HostBuffer*>& buffers) const {
  RETURN_IF_ERROR(CheckOpen(call));
  if (device != device_) return NotHeld(call, absl::StrCat("it is work for device ", device));
  for (const HostBuffer* buffer : buffers) {
    if (buffer->device() != device_) {
      return NotHeld(call, absl::StrCat("it touches a buffer of device ", buffer->device()));
    }
  }
  return absl::OkStatus();
}

absl::Status HostGraphRecording::Record(absl::string_view call, HostWork work) {
  RETURN_IF_ERROR(Admit(call, work.device, work.reads));
  RETURN_IF_ERROR(Admit(call, work.device, work.writes));
  // The closures hold their buffers already; keeping them here as well makes the graph's
  // lifetime rule independent of what a closure happens to capture.
  for (const std::vector<HostBuffer*>* buffers : {&work.reads, &work.writes}) {
    for (HostBuffer* buffer : *buffers) Keep(buffer->shared_from_this());
  }
  HostGraphNode node;
  node.work = std::move(work.run);
  current_block().push_back(std::move(node));
  return absl::OkStatus();
}

void HostGraphRecording::Keep(BufferPtr buffer) {
  if (program_->kept_set.insert(buffer.get()).second) program_->kept.push_back(std::move(buffer));
}

absl::StatusOr<std::shared_ptr<HostBuffer>> HostGraphRecording::AdmitFlag(
    absl::string_view call, const ConditionFlags& flags) {
  RETURN_IF_ERROR(CheckOpen(call));
  if (flags.buffers.size() > 1) {
    return NotHeld(call, "its condition is in several buffers (combine them into one first)");
  }
  const BufferPtr flag = flags.buffers.empty() ? nullptr : flags.buffers.front();
  if (flag == nullptr) return absl::InvalidArgumentError(absl::StrCat(call, ": no flag buffer"));
  if (flag->device() != device_) {
    return NotHeld(call, absl::StrCat("its flag is a buffer of device ", flag->device()));
  }
  Keep(flag);
  return AsHost(flag);
}

std::vector<HostGraphNode>& HostGraphRecording::current_block() {
  if (open_.empty()) return program_->root;
  OpenNode& open = open_.back();
  return open.in_else ? open.node.else_body : open.node.body;
}

absl::Status HostGraphRecording::BeginWhile(const ConditionFlags& flag, int64_t max_iterations) {
  ASSIGN_OR_RETURN(std::shared_ptr<HostBuffer> entry, AdmitFlag("BeginWhile", flag));
  if (max_iterations < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("BeginWhile: max_iterations must be at least 1, got ", max_iterations));
  }
  OpenNode open;
  open.node.kind = HostGraphNode::Kind::kWhile;
  open.node.flag = std::move(entry);
  open.node.max_iterations = max_iterations;
  open_.push_back(std::move(open));
  return absl::OkStatus();
}

absl::Status HostGraphRecording::EndWhile(const ConditionFlags& flag) {
  RETURN_IF_ERROR(CheckOpen("EndWhile"));
  if (open_.empty()) return absl::FailedPreconditionError("EndWhile: no WHILE is open");
  if (open_.back().node.kind != HostGraphNode::Kind::kWhile) {
    return absl::FailedPreconditionError(
        "EndWhile: the innermost open block is an IF (close it with EndIf first)");
  }
  ASSIGN_OR_RETURN(std::shared_ptr<HostBuffer> exit, AdmitFlag("EndWhile", flag));
  HostGraphNode node = std::move(open_.back().node);
  open_.pop_back();
  node.exit_flag = std::move(exit);
  current_block().push_back(std::move(node));
  return absl::OkStatus();
}

absl::Status HostGraphRecording::BeginIf(const ConditionFlags& flag) {
  ASSIGN_OR_RETURN(std::shared_ptr<HostBuffer> condition, AdmitFlag("BeginIf", flag));
  OpenNode open;
  open.node.kind = HostGraphNode::Kind::kIf;
  open.node.flag = std::move(condition);
  open_.push_back(std::move(open));
  return absl::OkStatus();
}

absl::Status HostGraphRecording::Else() {
  RETURN_IF_ERROR(CheckOpen("Else"));
  if (open_.empty() || open_.back().node.kind != HostGraphNode::Kind::kIf) {
    return absl::FailedPreconditionError(absl::StrCat(
        "Else: the innermost open block is ",
        open_.empty() ? "the top level" : KindName(open_.back().node.kind), ", not an IF"));
  }
  if (open_.back().in_else) {
    return absl::FailedPreconditionError("Else: the innermost IF is already in its else branch");
  }
  open_.back().in_else = true;
  return absl::OkStatus();
}

absl::Status HostGraphRecording::EndIf() {
  RETURN_IF_ERROR(CheckOpen("EndIf"));
  if (open_.empty() || open_.back().node.kind != HostGraphNode::Kind::kIf) {
    return absl::FailedPreconditionError(absl::StrCat(
        "EndIf: the innermost open block is ",
        open_.empty() ? "the top level" : KindName(open_.back().node.kind), ", not an IF"));
  }
  HostGraphNode node = std::move(open_.back().node);
  open_.pop_back();
  current_block().push_back(std::move(node));
  return absl::OkStatus();
}

absl::StatusOr<BufferPtr> HostGraphRecording::Allocate(int device, int64_t bytes) {
  RETURN_IF_ERROR(CheckOpen("Allocate"));
  // As on CUDA: a graph's buffers are its slots on its one device.
  if (device != device_) return NotHeld("Allocate", absl::StrCat("it is for device ", device));
  ASSIGN_OR_RETURN(BufferPtr buffer, backend_->Allocate(device, bytes));
  Keep(buffer);  // a slot of the graph, alive (and charged) as long as it is
  return buffer;
}

absl::Status HostGraphRecording::FillConstant(DType dtype, const BufferBox& dst,
                                              const Scalar& value) {
  return Record("FillConstant", host::FillConstantWork(dtype, dst, value));
}

absl::Status HostGraphRecording::FillGenerated(DType dtype, const BufferPtr& dst,
                                               const Shape& global_shape, const Box& chunk_box,
                                               const Generator& generator) {
  return Record("FillGenerated",
                host::FillGeneratedWork(dtype, dst, global_shape, chunk_box, generator));
}

absl::Status HostGraphRecording::Copy(DType dtype, absl::Span<const BoxCopy> copies) {
  // The whole batch is admitted before any of it is recorded: a refused batch leaves nothing
  // half-recorded.
  for (const BoxCopy& copy : copies) {
    RETURN_IF_ERROR(
        Admit("Copy", device_, {AsHost(copy.src.buffer).get(), AsHost(copy.dst.buffer).get()}));
  }
  for (const BoxCopy& copy : copies) RETURN_IF_ERROR(Record("Copy", host::CopyWork(dtype, copy)));
  return absl::OkStatus();
}

absl::Status HostGraphRecording::Elementwise(ElementwiseOpId op, DType compute, DType storage,
                                             const BufferPtr& out, int64_t n,
                                             absl::Span<const ElementwiseArg> args) {
  ASSIGN_OR_RETURN(HostWork work, host::ElementwiseWork(op, compute, storage, out, n, args));
  return Record("Elementwise", std::move(work));
}

absl::Status HostGraphRecording::Cast(DType from, DType to, const BufferPtr& src,
                                      const BufferPtr& dst, int64_t n) {
  return Record("Cast", host::CastWork(from, to, src, dst, n));
}

absl::Status HostGraphRecording::Reduce(ReduceKind kind, DType in, DType storage,
                                        const BufferPtr& src, const ReduceGeometry& geometry,
                                        const BufferPtr& dst, double scale,
                                        const BufferPtr& extreme) {
  ASSIGN_OR_RETURN(HostWork work,
                   host::ReduceWork(kind, in, storage, src, geometry, dst, scale, extreme));
  return Record("Reduce", std::move(work));
}

absl::Status HostGraphRecording::Gemm(DType dtype, const BufferPtr& a, const BufferPtr& b,
                                      const BufferPtr& c, const GemmShape& shape,
                                      bool /*allow_tf32*/) {
  ASSIGN_OR_RETURN(HostWork work, host::GemmWork(dtype, a, b, c, shape));
  return Record("Gemm", std::move(work));
}

absl::Status HostGraphRecording::Sort(DType dtype, const SortRuns& sort) {
  ASSIGN_OR_RETURN(HostWork work, host::SortWork(dtype, sort));
  return Record("Sort", std::move(work));
}

absl::Status HostGraphRecording::Scan(DType dtype, const ScanLines& scan) {
  ASSIGN_OR_RETURN(HostWork work, host::ScanWork(dtype, scan));
  return Record("Scan", std::move(work));
}

absl::Status HostGraphRecording::SearchSorted(DType dtype, const SearchRuns& search) {
  ASSIGN_OR_RETURN(HostWork work, host::SearchSortedWork(dtype, search));
  return Record("SearchSorted", std::move(work));
}

absl::Status HostGraphRecording::CsrMatmul(DType dtype, const CsrProduct& product) {
  ASSIGN_OR_RETURN(HostWork work, host::CsrMatmulWork(dtype, product));
  return Record("CsrMatmul", std::move(work));
}

absl::Status HostGraphRecording::CsrToDense(DType dtype, const CsrProduct& block) {
  ASSIGN_OR_RETURN(HostWork work, host::CsrToDenseWork(dtype, block));
  return Record("CsrToDense", std::move(work));
}

absl::Status HostGraphRecording::Merge(DType dtype, const MergeRuns& merge) {
  ASSIGN_OR_RETURN(HostWork work, host::MergeWork(dtype, merge));
  return Record("Merge", std::move(work));
}

void HostGraphRecording::CountReshardBytes(int device, int64_t bytes) {
  backend_->CountReshardBytes(device, bytes);
}

absl::StatusOr<std::unique_ptr<RecordedGraph>> HostGraphRecording::Finish() {
  RETURN_IF_ERROR(CheckOpen("Finish"));
  if (!open_.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("Finish: ", open_.size(), " loop(s) or IF(s) still open (the innermost is ",
                     KindName(open_.back().node.kind), ")"));
  }
  finished_ = true;
  return std::make_unique<HostRecordedGraph>(backend_, device_, std::move(program_));
}

}  // namespace distarray
