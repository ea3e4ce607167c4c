// The host backend's graph recorder (server/backend/graph_recorder.h), so that RunGraph's
// recording path runs in CI without a GPU. A recording is a DeviceOps sink: the work closures the
// backend would queue (host_work.h) are kept instead, in a tree of blocks (straight-line work,
// WHILE loops, IF/else branches). A replay is one closure on the device's stream that walks the
// tree, reading loop and branch flags from device memory as the CUDA backend's conditional nodes
// do, so both backends give the same results and statistics.
#ifndef DISTARRAY_SERVER_HOST_HOST_GRAPH_RECORDER_H_
#define DISTARRAY_SERVER_HOST_HOST_GRAPH_RECORDER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/backend/backend.h"
#include "server/backend/graph_recorder.h"
#include "server/host/host_work.h"

namespace distarray {

class HostBackend;
class HostBuffer;

// One step of a recorded host graph. A block is a list of steps, run in order.
struct HostGraphNode {
  enum class Kind { kWork, kWhile, kIf };
  Kind kind = Kind::kWork;
  std::function<void()> work;             // kWork: what the backend would have enqueued
  std::shared_ptr<HostBuffer> flag;       // kWhile: read before the first body; kIf: the condition
  std::shared_ptr<HostBuffer> exit_flag;  // kWhile: read after each body
  int64_t max_iterations = 0;             // kWhile
  std::vector<HostGraphNode> body;        // kWhile: the body; kIf: the then branch
  std::vector<HostGraphNode> else_body;   // kIf
};

// What a recording produces and every replay of its graph walks. Shared by the graph and its
// replays in flight, so dropping the graph while one is queued is safe.
struct HostGraphProgram {
  std::vector<HostGraphNode> root;
  // Every buffer the recorded work touches or that was allocated while recording: the graph's
  // fixed slots, alive (and charged to their device) as long as the graph.
  std::vector<BufferPtr> kept;
  absl::flat_hash_set<const DeviceBuffer*> kept_set;  // dedupes `kept`
};

// One recording in progress, of one device.
class HostGraphRecording final : public GraphRecording {
 public:
  // INVALID_ARGUMENT for a device the backend does not have.
  static absl::StatusOr<std::unique_ptr<GraphRecording>> Start(HostBackend* backend, int device);

  ~HostGraphRecording() override;

  int device() const { return device_; }

  // DeviceOps: appended to the innermost open block.
  absl::StatusOr<BufferPtr> Allocate(int device, int64_t bytes) override;
  absl::Status FillConstant(DType dtype, const BufferBox& dst, const Scalar& value) override;
  absl::Status FillGenerated(DType dtype, const BufferPtr& dst, const Shape& global_shape,
                             const Box& chunk_box, const Generator& generator) override;
  absl::Status Copy(DType dtype, absl::Span<const BoxCopy> copies) override;
  using GraphRecording::Elementwise;
  absl::Status Elementwise(ElementwiseOpId op, DType compute, DType storage, const BufferPtr& out,
                           int64_t n, absl::Span<const ElementwiseArg> args) override;
  absl::Status Cast(DType from, DType to, const BufferPtr& src, const BufferPtr& dst,
                    int64_t n) override;
  using GraphRecording::Reduce;
  absl::Status Reduce(ReduceKind kind, DType in, DType storage, const BufferPtr& src,
                      const ReduceGeometry& geometry, const BufferPtr& dst, double scale,
                      const BufferPtr& extreme) override;
  using GraphRecording::Gemm;
  absl::Status Gemm(DType dtype, const BufferPtr& a, const BufferPtr& b, const BufferPtr& c,
                    const GemmShape& shape, bool allow_tf32) override;
  absl::Status Sort(DType dtype, const SortRuns& sort) override;
  absl::Status Scan(DType dtype, const ScanLines& scan) override;
  absl::Status Merge(DType dtype, const MergeRuns& merge) override;
  absl::Status SearchSorted(DType dtype, const SearchRuns& search) override;
  absl::Status CsrMatmul(DType dtype, const CsrProduct& product) override;
  absl::Status CsrToDense(DType dtype, const CsrProduct& block) override;
  void CountReshardBytes(int device, int64_t bytes) override;

  absl::Status BeginWhile(const ConditionFlags& flag, int64_t max_iterations) override;
  absl::Status EndWhile(const ConditionFlags& flag) override;
  absl::Status BeginIf(const ConditionFlags& flag) override;
  absl::Status Else() override;
  absl::Status EndIf() override;
  absl::StatusOr<std::unique_ptr<RecordedGraph>> Finish() override;

 private:
  // A WHILE or IF whose body is being recorded.
  struct OpenNode {
    HostGraphNode node;
    bool in_else = false;  // IF: recording the else branch
  };

  HostGraphRecording(HostBackend* backend, int device);

  // INTERNAL naming `call`: work the recording cannot hold, which the recorder's Unsupported
  // (asked before recording) should have kept from it.
  absl::Status NotHeld(absl::string_view call, absl::string_view why) const;
  // Whether work of `call` for `device` touching `buffers` can be recorded: it must be for the
  // recorded device and touch no other device's buffer. Checks only; Copy admits a whole batch
  // before recording any of it.
  absl::Status Admit(absl::string_view call, int device,
                     const std::vector<HostBuffer*>& buffers) const;
  // Admits, then appends `work` to the innermost open block, keeping its buffers alive with the
  // graph: a replay touches them whoever else lets go of them meanwhile.
  absl::Status Record(absl::string_view call, HostWork work);
  // Keeps a buffer alive with the graph.
  void Keep(BufferPtr buffer);

  // FAILED_PRECONDITION once Finish has run.
  absl::Status CheckOpen(absl::string_view call) const;
  // A loop or branch flag: a buffer of the recorded device, kept with the graph.
  // The host backend takes a condition in one buffer (FAILED_PRECONDITION otherwise).
  absl::StatusOr<std::shared_ptr<HostBuffer>> AdmitFlag(absl::string_view call,
                                                        const ConditionFlags& flags);
  // Where recorded work goes now: the innermost open body, or the top level.
  std::vector<HostGraphNode>& current_block();

  HostBackend* const backend_;
  const int device_;
  bool finished_ = false;
  std::shared_ptr<HostGraphProgram> program_ = std::make_shared<HostGraphProgram>();
  std::vector<OpenNode> open_;  // innermost last
};

class HostGraphRecorder final : public GraphRecorder {
 public:
  explicit HostGraphRecorder(HostBackend* backend) : backend_(backend) {}
  using GraphRecorder::Begin;
  // One device at a time: a program over several runs eagerly on the host backend.
  absl::StatusOr<std::unique_ptr<GraphRecording>> Begin(absl::Span<const int> devices) override {
    if (devices.size() != 1) {
      return absl::FailedPreconditionError(
          "GraphRecorder::Begin: the host backend records programs of one device only");
    }
    return HostGraphRecording::Start(backend_, devices.front());
  }
  // One device, and so no copies between devices; a condition is combined into one buffer
  // before the recording reads it.
  std::optional<std::string> Unsupported(const RecordingNeeds& needs) const override {
    if (needs.devices.size() != 1) return "the host backend records programs of one device only";
    if (needs.copies_between_devices) return "the host backend records no copies between devices";
    return std::nullopt;
  }

 private:
  HostBackend* const backend_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_HOST_HOST_GRAPH_RECORDER_H_
