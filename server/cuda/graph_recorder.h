// The CUDA backend's GraphRecorder (server/backend/graph_recorder.h): stream capture into CUDA
// graphs, one per device of the recording, with loops and branches as CUDA 13 conditional WHILE
// and IF nodes whose bodies are captured on streams of their own (cudaStreamBeginCaptureToGraph).
//
// Routing: while a thread records, CudaBackend looks up the thread's recording (a thread-local
// pointer) on every launch path. Work for one of the recording's devices goes to that device's
// capture stream of the innermost open body instead of the device's stream, without per-buffer
// events (each device's capture is one stream, in program order); every buffer it touches is kept
// alive by the recording and then by the recorded graph. Allocations are plain cudaMalloc made at
// once (a stream-ordered allocation would be captured as a memory node, which a conditional body
// may not hold). Other threads see none of this: their work still goes to the device streams,
// which never capture.
//
// Over several devices, every device's graph holds every loop and branch, and each evaluation of
// a condition is an exchange of votes between the devices through peer memory
// (loop_condition.cuh, Agreement), so the graphs take the same decisions without the host.
// Devices without peer access between them agree through an NCCL all-reduce captured before each
// evaluation instead (GraphAgreement); such recordings do not fuse loops (a fused body agrees
// inside its kernel, through peer memory), and without peer access cannot copy between devices
// either (the program then runs eagerly).
//
// A replay runs on each device's own stream, so it is ordered with every other user of the
// device's fixed scratch memory (reduction partials, the cuBLAS workspace) that recorded kernels
// also use.
#ifndef DISTARRAY_SERVER_CUDA_GRAPH_RECORDER_H_
#define DISTARRAY_SERVER_CUDA_GRAPH_RECORDER_H_

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/backend/graph_recorder.h"
#include "server/cuda/cuda_resources.h"
#include "server/cuda/fusion/rtc_compiler.h"
#include "server/cuda/loop_control.h"

namespace distarray {

// How the devices of a recording over several agree on its conditions.
enum class GraphAgreement {
  kAuto,  // through peer memory where every pair of the devices has peer access, else NCCL
  kPeer,  // through peer memory only: devices without peer access run programs eagerly
  kNccl,  // through an NCCL all-reduce, even where peer access would allow the exchange
};

class CudaBackend;
class CudaBuffer;

// What a recording creates on one device and its replays use there.
struct CudaDeviceGraph {
  int device = 0;
  // The fused loops' kernels. Declared first, so destroyed last: the graph's kernel nodes point
  // into their libraries.
  std::vector<std::shared_ptr<const cuda::RtcKernel>> kernels;
  std::optional<cuda::CudaGraph> graph;
  // Per-replay statistics on the device, and the host block holding the cancel word the loop
  // conditions read and the statistics the graph's last node copies back.
  std::optional<cuda::DeviceBlock> counters;
  std::optional<cuda::MappedHostBlock> control;
  // The device's cuda::AgreementBlock, where the graph spans several devices; reset before every
  // replay (CudaRecordedGraph::Launch).
  std::optional<cuda::DeviceBlock> agreement;
  // The device's cuda::NcclBallot, where the devices agree through NCCL instead.
  std::optional<cuda::DeviceBlock> ballot;
  // Each loop's iteration count (an int64 each), restarted before its WHILE node runs, and each
  // fused loop's state (fusion/fused_loop_device.cuh).
  std::vector<cuda::DeviceBlock> loop_counts;
};

// Everything a recording creates, moved into the recorded graph at Finish; freed with whichever
// owns it last, once no replay can be running.
struct CudaGraphResources {
  // Where the devices agree through NCCL: the clique whose communicators the graphs' captured
  // all-reduces use (it lives as long as any graph recorded over it). Null: peer memory. Declared
  // first, so destroyed last: destroying the communicators waits for every graph that captured
  // them to be gone.
  std::shared_ptr<cuda::NcclClique> clique;
  std::vector<CudaDeviceGraph> devices;  // in the recording's device order
  // Every buffer the recording allocated or touched: the graphs address them on every replay.
  std::vector<BufferPtr> buffers;
  absl::flat_hash_set<const DeviceBuffer*> kept;
};

// The host side of CudaDeviceGraph::control.
struct CudaGraphControl {
  unsigned int cancel_word;  // set by Wait to stop running loops; cleared by Launch
  unsigned int padding;
  cuda::GraphCounters counters;  // the last finished replay's statistics
};

class CudaRecordedGraph final : public RecordedGraph {
 public:
  CudaRecordedGraph(CudaBackend* backend, CudaGraphResources resources,
                    std::vector<cuda::CudaGraphExec> execs);
  // Waits for the last replay: the graphs' memory and buffers are freed after it.
  ~CudaRecordedGraph() override;

  const std::vector<int>& devices() const override { return devices_; }
  absl::Status Launch(absl::Span<const BufferPtr> reads,
                      absl::Span<const BufferPtr> writes) override;
  absl::StatusOr<GraphRunStats> Wait(const std::function<absl::Status()>& alive) override;
  // Tests only: the next Launch fails on the index-th device of the graph as if cudaGraphLaunch
  // had, after the devices before it started theirs.
  void FailNextLaunchOnForTesting(size_t index) { fail_launch_on_ = index; }

 private:
  // One device's part of the last replay.
  struct Replay {
    cuda::CudaEventPtr done;
    // Around the replay's cudaGraphLaunch, timed: its time on the device.
    cuda::CudaEventPtr start, end;
  };

  CudaGraphControl* control(size_t i) const {
    return static_cast<CudaGraphControl*>(resources_.devices[i].control->host());
  }
  // Sets (or clears) every device's cancel word.
  void SetCancel(unsigned int value) const;
  // When a replay was enqueued and never waited for (its Launch failed part way), cancels it and
  // waits for the graph's devices. The caller holds the backend's order lock.
  void DrainUnwaited();
  // Enqueues the replay on every device; the caller holds the backend's order lock.
  absl::Status LaunchLocked(const std::vector<std::vector<CudaBuffer*>>& reads,
                            const std::vector<std::vector<CudaBuffer*>>& writes);
  // Agreeing through NCCL, a device whose replay never started, or failed, leaves the others
  // waiting in an all-reduce that the cancel word cannot end: revokes the clique, which ends them
  // (the cancel word, set by the caller, then stops their loops). Later replays of every graph
  // over that clique fail (UNAVAILABLE) and are recorded anew over a new one.
  void RevokeAgreement(const char* why);
  // Waits for every device's stream to drain; agreeing through NCCL, for at most kDrainLimit,
  // after which the graph is marked stuck (its memory is never freed: work may still use it).
  void DrainStreams();

  CudaBackend* const backend_;
  std::vector<int> devices_;
  CudaGraphResources resources_;
  // Declared after resources_: destroyed before the graphs they came from.
  std::vector<cuda::CudaGraphExec> execs_;
  std::vector<Replay> replays_;
  // Some device's graph was enqueued and Wait has not seen the replay end. Guarded by the
  // backend's order lock.
  bool in_flight_ = false;
  // How many devices' graphs the last Launch enqueued. Guarded like in_flight_.
  size_t launched_ = 0;
  // A replay's devices did not drain in time after a failure (NCCL agreement): the destructor
  // leaves the graphs and their memory to the process rather than free them under running work.
  bool stuck_ = false;
  size_t fail_launch_on_ = SIZE_MAX;  // FailNextLaunchOnForTesting
  // How long the last complete replay ran on the device: Wait sleeps through most of a replay it
  // can predict and polls its end closely. Launch and Wait of one replay run on one thread, one
  // replay at a time (the program runner's per-graph lock), which guards this.
  std::chrono::nanoseconds last_device_time_{0};
};

class CudaGraphRecording final : public GraphRecording {
 public:
  // Opens a recording of the calling thread's work on `devices` and makes it the thread's
  // current one. Over several devices, they agree through `clique` (an NCCL communicator per
  // device, in the order of `devices`), or where it is null through peer memory, which needs peer
  // access between every pair.
  static absl::StatusOr<std::unique_ptr<CudaGraphRecording>> Start(
      CudaBackend* backend, absl::Span<const int> devices,
      std::shared_ptr<cuda::NcclClique> clique);
  // Abandoning: ends every capture, then frees what the recording allocated.
  ~CudaGraphRecording() override;

  absl::Status BeginWhile(const ConditionFlags& flag, int64_t max_iterations) override;
  absl::Status EndWhile(const ConditionFlags& flag) override;
  // graph_recorder_fused.cc: NVRTC compiles the chain into one kernel (fusion/), and each
  // device's WHILE body holds the backend's loop_unroll copies of it.
  absl::Status RecordFusedWhile(absl::Span<const FusedLoop> loops) override;
  absl::Status BeginIf(const ConditionFlags& flag) override;
  absl::Status Else() override;
  absl::Status EndIf() override;
  absl::StatusOr<std::unique_ptr<RecordedGraph>> Finish() override;

  // The calling thread's open recording on `backend`, or null.
  static CudaGraphRecording* Current(const CudaBackend* backend);

  // Whether `device` is one of the recording's.
  bool records(int device) const { return IndexOf(device) >= 0; }
  // The stream that `call`'s work for `device`, touching `buffers`, is captured on: the innermost
  // open body's of that device. Keeps the buffers alive with the recording. FAILED_PRECONDITION
  // naming `call` for work of another device, buffers of another device than the work's, or once
  // the recording is finished or broken.
  absl::StatusOr<cudaStream_t> Route(absl::string_view call, int device,
                                     const std::vector<CudaBuffer*>& reads,
                                     const std::vector<CudaBuffer*>& writes);
  // Records copies across devices of the recording: a barrier on every device (every device's
  // earlier work is done), then on each destination device a kernel reading the source through
  // its peer address, then a barrier again (no device overwrites a source still being read).
  // Conditional bodies cannot hold copy nodes between devices; a kernel reading peer memory is
  // one device's work. Every device takes part in both barriers, wherever the copies go.
  absl::Status RecordPeerCopies(DType dtype, absl::Span<const BoxCopy* const> copies);
  // Keeps a buffer allocated for the recording alive with it (and with the recorded graph).
  void Keep(BufferPtr buffer);
  // FAILED_PRECONDITION: `call` cannot be recorded.
  absl::Status Refuse(absl::string_view call, absl::string_view why) const;

 private:
  // An open WHILE loop or IF on one device: the conditional node's body graphs and the stream
  // capturing the open one.
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
  // One device's capture. Every device opens and closes the same blocks, in the same order.
  struct Capture {
    int device = 0;
    std::optional<cuda::CudaStream> stream;  // the top-level capture
    bool capturing = false;                  // `stream` is capturing
    std::vector<Block> open;                 // innermost last
    bool counters_reset = false;             // ResetCountersBeforeFirstBlock recorded its reset
    // The innermost open capture: the last open block's stream, else the top-level one.
    cudaStream_t current() const {
      return open.empty() ? stream->get() : open.back().stream->get();
    }
  };

  explicit CudaGraphRecording(CudaBackend* backend) : backend_(backend) {}

  // The index of `device` among the recording's, or -1.
  int IndexOf(int device) const;
  std::string DeviceList() const;
  CudaDeviceGraph& resources(size_t i) { return resources_.devices[i]; }
  // The device addresses the condition kernels use, on the i-th device.
  const unsigned int* cancel_word(size_t i) const;
  cuda::GraphCounters* counters(size_t i) const {
    return static_cast<cuda::GraphCounters*>(resources_.devices[i].counters->data());
  }
  cuda::Agreement agreement(size_t i) const;
  // OK while calls may still be recorded; otherwise why not, naming `call`.
  absl::Status CheckRecording(absl::string_view call) const;
  // Checks a condition (one flag at least, each a bool in element 0 of a buffer of a recorded
  // device, at most cuda::kMaxLocalFlags per device) and keeps its buffers.
  absl::Status AdmitFlags(absl::string_view call, const ConditionFlags& flags);
  // The flags of an admitted condition that lie on the i-th device.
  cuda::LocalFlags LocalFlagsOn(size_t i, const ConditionFlags& flags) const;
  // The graph the capture's innermost open capture records into (where a new conditional node
  // and its handle belong).
  absl::StatusOr<cudaGraph_t> CapturingGraph(const Capture& capture);
  // Adds a conditional node after the innermost capture's last work and makes it that capture's
  // last work; returns the node's body graphs.
  absl::StatusOr<std::array<cudaGraph_t, 2>> AddConditional(const Capture& capture,
                                                            cudaGraphConditionalNodeType type,
                                                            cudaGraphConditionalHandle handle,
                                                            unsigned int size);
  // Opens a WHILE block on the i-th device for BeginWhile and RecordFusedWhile: a conditional
  // handle, the entry evaluation of `flags` (while semantics; it also restarts `count`, and tells
  // a fused body's first copy to run through `running` when not null), the WHILE node, and the
  // capture of its body. Callers run it inside Broken().
  absl::Status OpenWhile(size_t i, const cuda::LocalFlags& flags, int64_t max_iterations,
                         int64_t* count, unsigned int* running);
  // Before device i's first conditional block, which is at the top level (an inner one needs an
  // outer one open): resets its counters there, so every replay counts from zero before any loop.
  absl::Status ResetCountersBeforeFirstBlock(size_t i);
  // The same on every device, before a block every device opens (the NCCL ballots that precede
  // its first evaluation read the counters).
  absl::Status ResetAllCountersBeforeFirstBlock();
  // Starts capturing the block's current branch on its stream / ends that capture.
  absl::Status BeginBody(int device, Block& block);
  absl::Status EndBody(Block& block);
  // A barrier kernel on every device's innermost capture (an exchange without a vote).
  absl::Status RecordBarrier();
  // Whether the devices agree through NCCL (the recording spans several).
  bool nccl_agreement() const { return resources_.clique != nullptr; }
  // The exchange through peer memory alone (no tally), for barriers: where the devices have peer
  // access, copies between them are recorded whichever way conditions agree.
  cuda::Agreement barrier_agreement(size_t i) const;
  // Agreeing through NCCL, before every device's condition kernel on its innermost capture: each
  // device casts its ballot on `flags` (with the cancel word when `read_cancel`), and one
  // all-reduce over the clique sums them into every device's tally. A no-op otherwise (the
  // condition kernels exchange their votes themselves).
  absl::Status CastBallots(const ConditionFlags& flags, bool read_cancel);
  // Ends every open capture (innermost first) and stops routing this thread's work here. The
  // first error, if a capture was invalidated.
  absl::Status EndAllCaptures();
  // Marks the recording unusable after a failure that may have left a capture half-built.
  absl::Status Broken(absl::Status status);

  CudaBackend* const backend_;
  std::vector<Capture> captures_;  // parallel to resources_.devices
  bool capturing_ = false;         // this is the thread's current recording
  // The recording thread's current-recording slot, cleared when the captures end (from whichever
  // thread destroys the recording).
  CudaGraphRecording** slot_ = nullptr;
  bool finished_ = false;
  absl::Status broken_;
  CudaGraphResources resources_;
  // Whether every pair of the devices has peer access: copies between them can be recorded.
  bool peer_access_ = true;
  // Whether the graph has a conditional block, and so counters to reset at its top level and to
  // copy back at its end. A graph without one skips both nodes (a few µs of every replay).
  bool has_conditionals_ = false;
};

class CudaGraphRecorder final : public GraphRecorder {
 public:
  CudaGraphRecorder(CudaBackend* backend, GraphAgreement agreement)
      : backend_(backend), agreement_(agreement) {}
  using GraphRecorder::Begin;
  absl::StatusOr<std::unique_ptr<GraphRecording>> Begin(absl::Span<const int> devices) override;
  // Up to cuda::kMaxGraphDevices distinct devices; over several, agreeing as `agreement` allows
  // (kPeer: peer access between every pair).
  bool CanRecord(absl::Span<const int> devices) const override;
  // A 2048^2 float32 reshard of 4096 pieces over 2 H200s: 68.7 ms launched piece by piece, 8.0 ms
  // replayed (docs/design.md, "Many-piece reshards replay a cached graph").
  bool ReplayBeatsLaunches() const override { return true; }

 private:
  // Whether every pair of `devices` has peer access.
  static bool PeerAccess(absl::Span<const int> devices);
  // Whether a recording over `devices` (several) agrees through NCCL.
  bool AgreesThroughNccl(absl::Span<const int> devices) const;
  // The clique recordings over `devices` agree through: made on first use (ncclCommInitAll over
  // them), made anew once revoked; a failure to make it is remembered.
  absl::StatusOr<std::shared_ptr<cuda::NcclClique>> CliqueFor(absl::Span<const int> devices);
  struct CliqueSlot {
    std::shared_ptr<cuda::NcclClique> clique;
    absl::Status failed;
  };

  CudaBackend* const backend_;
  const GraphAgreement agreement_;
  std::mutex cliques_mu_;
  absl::flat_hash_map<std::vector<int>, CliqueSlot> cliques_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_CUDA_GRAPH_RECORDER_H_
