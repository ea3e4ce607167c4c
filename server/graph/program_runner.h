// Runs a program: replays its cached graph, or checks it against its arguments (interpreter
// kCheck), then records a graph (over the devices the program touches, on a backend with a
// GraphRecorder that can record them together) or runs it eagerly. Recorded graphs are cached by
// (program, argument signature), and only after the check passed: a hit needs no second check, and
// copies the arguments into the graph's input slots, launches it, and copies the outputs out of
// its slots.
#ifndef DISTARRAY_SERVER_GRAPH_PROGRAM_RUNNER_H_
#define DISTARRAY_SERVER_GRAPH_PROGRAM_RUNNER_H_

#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "distarray/v1/distarray.pb.h"
#include "server/backend/graph_recorder.h"
#include "server/graph/program_limits.h"
#include "server/ops/op_executors.h"
#include "server/ops/tenant_memory.h"

namespace distarray {

struct ProgramRunResult {
  std::vector<std::pair<std::string, OpResult>> outputs;  // Program.outputs, in order
  std::map<std::string, v1::Value> values;                // Program.value_outputs
  GraphRunStats stats;
  bool cache_hit = false;
  int fused_loops = 0;  // loops the recorded graph runs as one fused kernel per iteration
  // Straight-line chains inside loop and branch bodies it runs as one kernel per device each,
  // and the statements they cover.
  int fused_chains_in_bodies = 0, fused_chain_statements_in_bodies = 0;
  v1::GraphExecution execution = v1::GRAPH_EXECUTION_EAGER;
};

struct GraphCacheCounters {
  int64_t entries = 0, hits = 0, misses = 0;
};

class ProgramRunner {
 public:
  // `use_graphs`: record programs where the backend can (the daemon's --graphs). A cached graph's
  // device memory (everything its recording allocated) is charged to the tenant that recorded it
  // in `tenant_memory` (may be null: charged to nobody) until the graph is dropped.
  ProgramRunner(Backend& backend, ProgramLimits limits, bool use_graphs,
                std::shared_ptr<TenantMemory> tenant_memory = nullptr);
  ~ProgramRunner();

  // `program_key` identifies the program for the cache (a registered id, or the tenant and the
  // inline program's ProgramDigest); the cache keys it with a digest of the arguments' signature.
  // `arguments` are in program.inputs order. `context` gives the map normalization and the call's
  // liveness; its resolver is not used.
  // `tenant` is the caller's: a graph recorded for it is charged to it, and cached only if the
  // charge fits its quota (after its other graphs are dropped); otherwise the program runs eagerly.
  absl::StatusOr<ProgramRunResult> Run(const v1::Program& program, const std::string& program_key,
                                       const std::vector<ArrayPtr>& arguments,
                                       const OpContext& context, const std::string& tenant = "");

  GraphCacheCounters counters() const;
  // Drops every cached graph (their memory returns once no replay uses them); returns how many.
  int ClearCache();
  // Drops `tenant`'s cached graphs; returns how many.
  int EvictTenant(const std::string& tenant);

 private:
  struct CachedGraph;
  // Why `program` cannot be recorded over `devices` with these arguments, or nullopt when it can:
  // found by walking it through a RecordingProbe (recording_probe.h) and asking the recorder,
  // before anything is recorded.
  absl::StatusOr<std::optional<std::string>> WhyNotRecordable(
      const v1::Program& program, const std::vector<ArrayPtr>& arguments,
      const std::vector<int>& devices, const OpContext& context);
  absl::StatusOr<std::shared_ptr<CachedGraph>> Record(const v1::Program& program,
                                                      const std::vector<ArrayPtr>& arguments,
                                                      const std::vector<int>& devices,
                                                      const OpContext& context);
  absl::StatusOr<ProgramRunResult> Replay(CachedGraph& graph, const v1::Program& program,
                                          const std::vector<ArrayPtr>& arguments,
                                          const OpContext& context);
  // Replays `graph` (cached under `key`) and drops it from the cache if the replay failed.
  absl::StatusOr<ProgramRunResult> ReplayCached(std::shared_ptr<CachedGraph> graph,
                                                const std::string& key, const v1::Program& program,
                                                const std::vector<ArrayPtr>& arguments,
                                                const OpContext& context, bool hit);
  absl::StatusOr<ProgramRunResult> RunEager(const v1::Program& program,
                                            const std::vector<ArrayPtr>& arguments,
                                            const OpContext& context);

  // Drops the cached graphs `drop` selects, destroying them after the lock (a graph's destruction
  // returns its memory and its tenant's charge); returns how many.
  int Evict(const std::function<bool(const CachedGraph&)>& drop);

  Backend& backend_;
  const ProgramLimits limits_;
  const bool use_graphs_;
  const std::shared_ptr<TenantMemory> tenant_memory_;

  mutable absl::Mutex mu_;
  // Least recently used at the back.
  std::list<std::pair<std::string, std::shared_ptr<CachedGraph>>> lru_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, decltype(lru_)::iterator> by_key_ ABSL_GUARDED_BY(mu_);
  int64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
  // Keys whose recording failed in a way that will not change (a cross-device copy inside a
  // loop, say): they run eagerly without trying again. Bounded: cleared when it grows past
  // kMaxUnrecordable.
  static constexpr size_t kMaxUnrecordable = 4096;
  absl::flat_hash_set<std::string> unrecordable_ ABSL_GUARDED_BY(mu_);
};

// The logical values of `array` as a response value (combined to one chunk first when needed).
absl::StatusOr<v1::Value> ReadValue(Backend& backend, const Array& array, const StopCheck& alive);

}  // namespace distarray

#endif  // DISTARRAY_SERVER_GRAPH_PROGRAM_RUNNER_H_
