// Recording device work into a replayable graph with device-side control flow: how RunGraph puts a
// whole `while` loop on a GPU. The CUDA backend implements it with stream capture and CUDA 13
// conditional WHILE/IF nodes; the host backend records its device thread's work items into a tree
// it replays there, so CI runs the same recording path.
//
// A recording covers one device or several (a conditional node's body may only hold work of one
// device, so a recording over several devices is one graph per device, each with its own
// conditional nodes, which agree on every condition on the devices: docs/graphs.md). A recording
// is a DeviceOps sink (device_ops.h): the ops send it their work as they would send it to the
// backend, and it records instead of running:
//   - allocations are made at once and owned by the recorded graph for its whole life (they are
//     the graph's fixed slots, at the same address on every replay);
//   - nothing waits on or records per-buffer events: each device's recording is one stream, in
//     program order;
//   - a buffer the work touches is kept alive by the graph, not freed;
//   - host transfers and Synchronize do not exist on it (they are Backend's alone).
// What else a recorder can hold depends on the devices (copies between devices need peer access
// on CUDA, none are recorded on the host): the program runner asks before recording
// (GraphRecorder::Unsupported, with the RecordingNeeds a probe pass found), so a recording is
// never given work it cannot hold. A recording is an object of its own, not a mode of the backend:
// other work on the backend, on any thread, is never recorded.
#ifndef DISTARRAY_SERVER_BACKEND_GRAPH_RECORDER_H_
#define DISTARRAY_SERVER_BACKEND_GRAPH_RECORDER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/backend/backend.h"
#include "server/backend/device_ops.h"
#include "server/backend/fused_loop.h"

namespace distarray {

// A 0-d bool condition as it lies on the devices: element 0 of each buffer, the condition
// variable's chunks. REPLICA copies, and MIN or PROD partials, combine by AND; MAX or SUM
// partials (`any`) by OR. On a recording over several devices, each device reads the flags it
// holds and the devices agree on the combined value; a device holding none takes the others'.
struct ConditionFlags {
  ConditionFlags() = default;
  // One flag: the condition's value.
  ConditionFlags(BufferPtr flag) { buffers.push_back(std::move(flag)); }  // NOLINT: implicit
  std::vector<BufferPtr> buffers;
  bool any = false;
};

// What one replay did, read back after it finished.
struct GraphRunStats {
  int64_t iterations = 0;          // loop bodies run, summed over every loop (nested ones included)
  bool hit_iteration_cap = false;  // some loop stopped at its max_iterations with its flag true
  bool cancelled = false;          // the cancel word stopped a loop
  double device_seconds = 0;       // the replay's time on the device; 0 where not measured
};

// An instantiated recording, replayable any number of times (one replay at a time: callers
// serialize replays of one graph).
class RecordedGraph {
 public:
  virtual ~RecordedGraph() = default;
  // The devices it runs on, in the order the recording was begun with.
  virtual const std::vector<int>& devices() const = 0;
  // Enqueues one replay on each device's stream (all of them at once, so that no other work can
  // come between the devices' graphs, which wait for each other) after the last writers of `reads`
  // and the last writers and readers of `writes` (buffers outside the graph that it reads or
  // writes: its input and output slots), and records the replay as their newest reader/writer.
  // Returns at once.
  virtual absl::Status Launch(absl::Span<const BufferPtr> reads,
                              absl::Span<const BufferPtr> writes) = 0;
  // Waits for the replay started by the last Launch. Every ~millisecond it calls `alive`; once
  // that returns an error, it sets the cancel word the loops read (on the CUDA backend at most
  // every 50 µs of device time, loop_control.h), so a running loop stops within about an
  // iteration or 50 µs, whichever is longer, waits for the graph to drain, and returns that
  // error. Otherwise returns the replay's statistics (or the device's error).
  virtual absl::StatusOr<GraphRunStats> Wait(const std::function<absl::Status()>& alive) = 0;
};

// One recording in progress; used by one thread at a time. Destroying it without Finish abandons
// it (the capture ends, everything allocated for it is freed).
class GraphRecording : public DeviceOps {
 public:
  // Opens a WHILE loop. Its condition is evaluated on the device now (while semantics: a false
  // flag runs the body zero times) and again at EndWhile: the body runs while the 0-d bool in
  // `flag` (element 0 of a buffer of this device) is true, the loop has run fewer than
  // `max_iterations` (>= 1) times, and the cancel word is clear. Loops nest. Every device of the
  // recording runs the loop (and agrees on each evaluation), whether or not its body holds work
  // there.
  virtual absl::Status BeginWhile(const ConditionFlags& flag, int64_t max_iterations) = 0;
  // Closes the innermost loop; `flag` holds the condition as the body computed it (it may be
  // other buffers than BeginWhile's).
  virtual absl::Status EndWhile(const ConditionFlags& flag) = 0;
  // Records a whole WHILE loop whose iteration is one elementwise chain (fused_loop.h): its entry
  // condition, and a body that computes the chain and the next condition in one pass. Same
  // semantics as BeginWhile + the chain's ops + EndWhile. `loops` holds the chain once per device
  // of the recording, in its order, each over that device's chunk. UNIMPLEMENTED (with nothing
  // recorded) where the backend does not fuse, or cannot compile this chain: the caller records
  // the loop statement by statement instead.
  virtual absl::Status RecordFusedWhile(absl::Span<const FusedLoop> loops) {
    (void)loops;
    return absl::UnimplementedError("this backend records loops statement by statement");
  }
  // Records a straight-line elementwise chain (fused_loop.h) as one kernel per device: the same
  // values as its ops recorded one by one. `chains` holds it once per device of the recording, in
  // its order. UNIMPLEMENTED (nothing recorded) where the backend does not fuse or cannot compile
  // it: the caller records the statements one by one.
  // Whether RecordFusedChain may record chains here (asked before buffers are set aside for one).
  virtual bool fuses_chains() const { return false; }
  virtual absl::Status RecordFusedChain(absl::Span<const FusedLoop> chains) {
    (void)chains;
    return absl::UnimplementedError("this backend records statements one by one");
  }
  // Opens an IF on the 0-d bool in `flag`: work recorded until Else/EndIf runs only when it is
  // true; after Else, only when it is false.
  virtual absl::Status BeginIf(const ConditionFlags& flag) = 0;
  virtual absl::Status Else() = 0;
  virtual absl::Status EndIf() = 0;
  // Ends the recording and instantiates it. FAILED_PRECONDITION when a loop or IF is still open.
  virtual absl::StatusOr<std::unique_ptr<RecordedGraph>> Finish() = 0;
};

// What a program's recording would ask of a recorder, found by a pass over metadata before
// anything is recorded (graph/recording_probe.h).
struct RecordingNeeds {
  std::vector<int> devices;  // distinct, in the recording's order
  // Some copy goes from one device to another (a reshard across devices inside the program).
  bool copies_between_devices = false;
  // The most chunks a loop or branch condition has on one device (each is a flag the device
  // reads at every evaluation).
  int condition_flags_per_device = 0;
};

// The backend capability. Backends without it return nullptr from Backend::graph_recorder().
class GraphRecorder {
 public:
  // The most devices one recording spans.
  static constexpr int kMaxGraphDevices = 8;

  virtual ~GraphRecorder() = default;
  // Starts a recording on `devices` (distinct, at most kMaxGraphDevices). FAILED_PRECONDITION when
  // the backend cannot record over these devices together (the caller asks CanRecord first).
  virtual absl::StatusOr<std::unique_ptr<GraphRecording>> Begin(absl::Span<const int> devices) = 0;
  // Whether this backend records programs over `devices` together (the program runner runs the
  // others eagerly, without trying).
  virtual bool CanRecord(absl::Span<const int> devices) const { return devices.size() == 1; }
  // Why a recording with `needs` cannot be made here, or nullopt when it can. Asked once per
  // program and layout, before recording; the recording then meets nothing it cannot hold.
  virtual std::optional<std::string> Unsupported(const RecordingNeeds& needs) const = 0;
  // Whether replaying a recorded graph of a request's many small launches beats launching them
  // one by one (the engine then runs many-piece reshards as cached one-statement programs).
  virtual bool ReplayBeatsLaunches() const { return false; }
  absl::StatusOr<std::unique_ptr<GraphRecording>> Begin(int device) {
    return Begin(absl::MakeConstSpan(&device, 1));
  }
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_BACKEND_GRAPH_RECORDER_H_
