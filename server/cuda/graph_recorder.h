// The CUDA backend's GraphRecorder (server/backend/graph_recorder.h): stream capture into a CUDA
// graph, with loops and branches as CUDA 13 conditional WHILE and IF nodes whose bodies are
// captured on streams of their own (cudaStreamBeginCaptureToGraph).
//
// Routing: while a thread records, CudaBackend looks up the thread's recording (a thread-local
// pointer) on every launch path. Work for the recording's device goes to the capture stream of
// the innermost open body instead of the device's stream, without per-buffer events (the capture
// is one stream, in program order); every buffer it touches is kept alive by the recording and
// then by the recorded graph. Allocations are plain cudaMalloc made at once (a stream-ordered
// allocation would be captured as a memory node, which a conditional body may not hold). Other
// threads see none of this: their work still goes to the device streams, which never capture.
//
// A replay runs on the device's own stream, so it is ordered with every other user of the
// device's fixed scratch memory (reduction partials, the cuBLAS workspace) that recorded kernels
// also use.
#ifndef DISTARRAY_SERVER_CUDA_GRAPH_RECORDER_H_
#define DISTARRAY_SERVER_CUDA_GRAPH_RECORDER_H_

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/backend/graph_recorder.h"
#include "server/cuda/cuda_resources.h"
#include "server/cuda/fusion/rtc_compiler.h"
#include "server/cuda/loop_control.h"

namespace distarray {

class CudaBackend;
class CudaBuffer;

// What a recording creates and its replays use. Built by the recording, moved into the recorded
// graph at Finish; freed with whichever owns it last, once no replay can be running.
struct CudaGraphResources {
  // The fused loops' kernels. Declared first, so destroyed last: the graph's kernel nodes point
  // into their libraries.
  std::vector<std::shared_ptr<const cuda::RtcKernel>> kernels;
  std::optional<cuda::CudaGraph> graph;
  // Per-replay statistics on the device, and the host block holding the cancel word the loop
  // conditions read and the statistics the graph's last node copies back.
  std::optional<cuda::DeviceBlock> counters;
  std::optional<cuda::MappedHostBlock> control;
  // Each loop's iteration count (an int64 each), restarted before its WHILE node runs, and each
  // fused loop's state (fusion/fused_loop_device.cuh).
  std::vector<cuda::DeviceBlock> loop_counts;
  // Every buffer the recording allocated or touched: the graph addresses them on every replay.
  std::vector<BufferPtr> buffers;
  absl::flat_hash_set<const DeviceBuffer*> kept;
};

// The host side of CudaGraphResources::control.
struct CudaGraphControl {
  unsigned int cancel_word;  // set by Wait to stop running loops; cleared by Launch
  unsigned int padding;
  cuda::GraphCounters counters;  // the last finished replay's statistics
};

class CudaRecordedGraph final : public RecordedGraph {
 public:
  CudaRecordedGraph(CudaBackend* backend, int device, CudaGraphResources resources,
                    cuda::CudaGraphExec exec)
      : backend_(backend),
        device_(device),
        resources_(std::move(resources)),
        exec_(std::move(exec)) {}
  // Waits for the last replay: the graph's memory and buffers are freed after it.
  ~CudaRecordedGraph() override;

  int device() const override { return device_; }
  absl::Status Launch(absl::Span<const BufferPtr> reads,
                      absl::Span<const BufferPtr> writes) override;
  absl::StatusOr<GraphRunStats> Wait(const std::function<absl::Status()>& alive) override;

 private:
  CudaGraphControl* control() const {
    return static_cast<CudaGraphControl*>(resources_.control->host());
  }

  CudaBackend* const backend_;
  const int device_;
  CudaGraphResources resources_;
  cuda::CudaGraphExec exec_;  // declared after resources_: destroyed before the graph it came from
  cuda::CudaEventPtr last_replay_;
  // Around the last replay's cudaGraphLaunch, timed: the replay's device time.
  cuda::CudaEventPtr replay_start_, replay_end_;
  bool replay_unknown_ = false;  // a replay was enqueued but its event could not be recorded
};

class CudaGraphRecording final : public GraphRecording {
 public:
  // Opens a recording of the calling thread's work on `device` and makes it the thread's
  // current one.
  static absl::StatusOr<std::unique_ptr<CudaGraphRecording>> Start(CudaBackend* backend,
                                                                   int device);
  // Abandoning: ends every capture, then frees what the recording allocated.
  ~CudaGraphRecording() override;

  absl::Status BeginWhile(const BufferPtr& flag, int64_t max_iterations) override;
  absl::Status EndWhile(const BufferPtr& flag) override;
  // graph_recorder_fused.cc: NVRTC compiles the chain into one kernel (fusion/), and the WHILE
  // body holds the backend's loop_unroll copies of it.
  absl::Status RecordFusedWhile(const FusedLoop& loop) override;
  absl::Status BeginIf(const BufferPtr& flag) override;
  absl::Status Else() override;
  absl::Status EndIf() override;
  absl::StatusOr<std::unique_ptr<RecordedGraph>> Finish() override;

  // The calling thread's open recording on `backend`, or null.
  static CudaGraphRecording* Current(const CudaBackend* backend);

  int device() const { return device_; }
  // The stream that `call`'s work for `device`, touching `buffers`, is captured on: the innermost
  // open body's. Keeps the buffers alive with the recording. FAILED_PRECONDITION naming `call`
  // for another device's work or buffers, or once the recording is finished or broken.
  absl::StatusOr<cudaStream_t> Route(absl::string_view call, int device,
                                     const std::vector<CudaBuffer*>& reads,
                                     const std::vector<CudaBuffer*>& writes);
  // Keeps a buffer allocated for the recording alive with it (and with the recorded graph).
  void Keep(BufferPtr buffer);
  // FAILED_PRECONDITION: `call` cannot be recorded.
  absl::Status Refuse(absl::string_view call, absl::string_view why) const;

 private:
  // An open WHILE loop or IF: the conditional node's body graphs and the stream capturing the
  // open one.
  struct Block {
    enum class Kind { kWhile, kIf };
    Kind kind;
    cudaGraphConditionalHandle handle = 0;
    std::array<cudaGraph_t, 2> bodies = {nullptr, nullptr};
    int branch = 0;  // the body being captured (IF: 1 after Else)
    std::optional<cuda::CudaStream> stream;
    bool capturing = false;    // `stream` is capturing bodies[branch]
    int64_t* count = nullptr;  // WHILE: the loop's iteration count
    int64_t max_iterations = 0;
  };

  CudaGraphRecording(CudaBackend* backend, int device, cuda::CudaStream stream)
      : backend_(backend), device_(device), stream_(std::move(stream)) {}

  // The innermost open capture: the last open block's stream, else the top-level one.
  cudaStream_t current() const;
  CudaGraphControl* control() const {
    return static_cast<CudaGraphControl*>(resources_.control->host());
  }
  // The device addresses the condition kernels use.
  const unsigned int* cancel_word() const {
    return reinterpret_cast<const unsigned int*>(
        static_cast<const char*>(resources_.control->device()) +
        offsetof(CudaGraphControl, cancel_word));
  }
  cuda::GraphCounters* counters() const {
    return static_cast<cuda::GraphCounters*>(resources_.counters->data());
  }
  // OK while calls may still be recorded; otherwise why not, naming `call`.
  absl::Status CheckRecording(absl::string_view call) const;
  // Checks a condition flag (a bool in element 0 of a buffer of this device) and keeps it.
  absl::Status AdmitFlag(absl::string_view call, const BufferPtr& flag);
  // The graph the innermost capture records into (where a new conditional node and its handle
  // belong).
  absl::StatusOr<cudaGraph_t> CapturingGraph();
  // Adds a conditional node after the innermost capture's last work and makes it that capture's
  // last work; returns the node's body graphs.
  absl::StatusOr<std::array<cudaGraph_t, 2>> AddConditional(cudaGraphConditionalNodeType type,
                                                            cudaGraphConditionalHandle handle,
                                                            unsigned int size);
  // Opens a WHILE block for BeginWhile and RecordFusedWhile: a conditional handle, the entry
  // evaluation of `flag` (while semantics; it also restarts `count`, and tells a fused body's
  // first copy to run through `running` when not null), the WHILE node, and the capture of its
  // body. Callers run it inside Broken().
  absl::Status OpenWhile(const BufferPtr& flag, int64_t max_iterations, int64_t* count,
                         unsigned int* running);
  // Starts capturing the block's current branch on its stream / ends that capture.
  absl::Status BeginBody(Block& block);
  absl::Status EndBody(Block& block);
  // Ends every open capture (innermost first) and stops routing this thread's work here. The
  // first error, if a capture was invalidated.
  absl::Status EndAllCaptures();
  // Marks the recording unusable after a failure that may have left a capture half-built.
  absl::Status Broken(absl::Status status);

  CudaBackend* const backend_;
  const int device_;
  cuda::CudaStream stream_;  // the top-level capture
  bool capturing_ = false;   // stream_ is capturing and this is the thread's current recording
  // The recording thread's current-recording slot, cleared when the captures end (from whichever
  // thread destroys the recording).
  CudaGraphRecording** slot_ = nullptr;
  bool finished_ = false;
  absl::Status broken_;
  std::vector<Block> open_;
  CudaGraphResources resources_;
};

class CudaGraphRecorder final : public GraphRecorder {
 public:
  explicit CudaGraphRecorder(CudaBackend* backend) : backend_(backend) {}
  absl::StatusOr<std::unique_ptr<GraphRecording>> Begin(int device) override;

 private:
  CudaBackend* const backend_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_CUDA_GRAPH_RECORDER_H_
