// The host backend's graph recorder (server/backend/graph_recorder.h), so that RunGraph's
// recording path runs in CI without a GPU. While a thread records, the work closures the backend
// would enqueue for the recorded device are kept instead, in a tree of blocks (straight-line work,
// WHILE loops, IF/else branches). A replay is one closure on the device's stream that walks the
// tree, reading loop and branch flags from device memory as the CUDA backend's conditional nodes
// do, so both backends give the same results and statistics.
#ifndef DISTARRAY_SERVER_HOST_HOST_GRAPH_RECORDER_H_
#define DISTARRAY_SERVER_HOST_HOST_GRAPH_RECORDER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/backend/backend.h"
#include "server/backend/graph_recorder.h"

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

// One recording in progress, on the thread that began it (and only there: the backend finds it
// through a thread-local pointer, so other threads' work is never recorded).
class HostGraphRecording final : public GraphRecording {
 public:
  // FAILED_PRECONDITION when this thread already records (on any host backend); INVALID_ARGUMENT
  // for a device the backend does not have.
  static absl::StatusOr<std::unique_ptr<GraphRecording>> Start(HostBackend* backend, int device);
  // The recording the calling thread has open on `backend`, or nullptr.
  static HostGraphRecording* Current(const HostBackend* backend);

  ~HostGraphRecording() override;

  int device() const { return device_; }

  // FAILED_PRECONDITION naming `call` and why it cannot be recorded.
  absl::Status Refuse(absl::string_view call, absl::string_view why) const;
  // Whether work of `call` for `device` touching `buffers` can be recorded: it must be for the
  // recorded device and touch no other device's buffer. Checks only; Copy admits a whole batch
  // before recording any of it.
  absl::Status Admit(absl::string_view call, int device,
                     const std::vector<HostBuffer*>& buffers) const;
  // Admits, then appends `work` to the innermost open block, keeping `reads` and `writes` alive
  // with the graph: a replay touches them whoever else lets go of them meanwhile.
  absl::Status Record(absl::string_view call, int device, const std::vector<HostBuffer*>& reads,
                      const std::vector<HostBuffer*>& writes, std::function<void()> work);
  // Keeps a buffer (one allocated while recording) alive with the graph.
  void Keep(BufferPtr buffer);

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

 private:
  HostBackend* const backend_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_HOST_HOST_GRAPH_RECORDER_H_
