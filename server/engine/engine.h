// The engine: validates requests against live arrays, plans and launches device work through the
// backend, and keeps the registry. It takes distarray.v1 request messages (it is the use-case
// layer; the gRPC service above it only adapts transport and status codes) and never knows
// which backend runs it.
#ifndef DISTARRAY_SERVER_ENGINE_ENGINE_H_
#define DISTARRAY_SERVER_ENGINE_ENGINE_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "distarray/v1/distarray.pb.h"
#include "server/backend/backend.h"
#include "server/engine/registry.h"
#include "server/engine/sessions.h"
#include "server/graph/checked_programs.h"
#include "server/graph/program_check.h"
#include "server/graph/program_limits.h"
#include "server/graph/program_runner.h"
#include "server/graph/program_store.h"
#include "server/ops/array.h"
#include "server/security/tenant.h"

namespace distarray {

class UploadSession;

// What a download message holds besides its values (the shape, the dtype and the fields' tags
// and lengths), with room to spare: a shape of the most dimensions takes under 400 bytes.
inline constexpr int64_t kDownloadMessageHeadroom = 4096;

// The bounds the daemon enforces (its flags); GetServerInfo reports them.
struct EngineOptions {
  int64_t max_chunks = kDefaultMaxChunks;  // per index map
  absl::Duration session_lease = absl::Seconds(60);
  // Live sessions one tenant may hold (--max_sessions_per_tenant), below the daemon's
  // SessionLimits::kDefaultMaxSessions.
  int64_t max_sessions_per_tenant = SessionLimits::kDefaultMaxPerTenant;
  int default_list_page_size = 100;
  int max_list_page_size = 1000;
  int64_t upload_idle_timeout_ms = 30000;
  // An upload must deliver at least this many bytes per second, measured over windows of the
  // idle timeout, or it is cancelled like an idle one (--upload_min_bytes_per_second; 0: none).
  int64_t upload_min_bytes_per_second = 1024;
  // The most bytes of values one download message carries, whatever the request asks: the
  // server's largest message (--max_message_size) less room for the message's other fields, so
  // a message gRPC would refuse to send is never made.
  int64_t max_download_piece_bytes = (int64_t{64} << 20) - kDownloadMessageHeadroom;
  ProgramLimits programs;
  // Run programs as recorded graphs where the backend can record them; off: eagerly.
  bool use_graphs = true;
  // How long one RunGraph may run: `run_graph_default_time` when the client set no deadline,
  // at most `run_graph_max_time` whatever it set. Past it the call stops as at a deadline (on the
  // GPUs through the cancel word), so a loop without a deadline cannot hold a device for hours.
  absl::Duration run_graph_default_time = absl::Minutes(10);
  absl::Duration run_graph_max_time = absl::Hours(1);
  // Per-tenant device memory quotas (--tenant_memory_quota and its overrides).
  TenantQuotaOptions tenant_quotas;
};

// What RunGraph produced: registered output arrays, returned values, and how it ran.
struct GraphRunOutcome {
  std::vector<std::pair<std::string, ArrayPtr>> outputs;  // by variable, in Program.outputs order
  std::map<std::string, v1::Value> values;
  GraphRunStats stats;
  bool cache_hit = false;
  int fused_loops = 0;
  int fused_chains_in_bodies = 0, fused_chain_statements_in_bodies = 0;
  v1::GraphExecution execution = v1::GRAPH_EXECUTION_EAGER;
};

// RunGraph counts since start (metrics).
struct GraphRunCounters {
  int64_t launches = 0;    // runs replayed as a recorded device graph
  int64_t iterations = 0;  // loop bodies run, over every finished RunGraph
  int64_t cancels = 0;     // runs ended by the client's cancel or deadline
};

// What a call registered (new arrays' handles, program ids), so the service can take it back when
// the call fails after registering: its deadline can pass while the response is built and sent,
// and nothing a client was told failed may remain. An in-place result replaces an array the
// client already had and is not listed.
struct CallResults {
  absl::Mutex mu;
  std::vector<std::string> arrays ABSL_GUARDED_BY(mu);
  std::vector<std::string> programs ABSL_GUARDED_BY(mu);
};

// What the engine knows of the call it serves.
struct CallContext {
  std::string session;  // the client's session ("distarray-session" metadata); empty: none
  // OK while the call is wanted; CANCELLED or DEADLINE_EXCEEDED once the client cancelled or the
  // deadline passed. Checked between steps of long work and right before a result is registered,
  // so an abandoned call leaves no orphan array.
  std::function<absl::Status()> alive;
  absl::Status CheckAlive() const { return alive ? alive() : absl::OkStatus(); }
  // Who is calling (the bearer token's tenant; kDefaultTenant without authentication). Arrays,
  // sessions and programs of other tenants are invisible to the call.
  std::string tenant = kDefaultTenant;
  // The session as the engine keys it: sessions of different tenants never meet, even under the
  // same client-chosen id. Empty without a session.
  std::string session_key() const {
    return session.empty() ? std::string() : absl::StrCat(tenant, "/", session);
  }
  // Where the engine lists what it registered for the call; null: nowhere (in-process callers).
  std::shared_ptr<CallResults> results;
};

class Engine {
 public:
  explicit Engine(std::unique_ptr<Backend> backend, EngineOptions options = {});
  ~Engine();

  Backend& backend() { return *backend_; }
  const Registry& registry() const { return registry_; }
  const EngineOptions& options() const { return options_; }

  v1::GetServerInfoResponse ServerInfo() const;

  // `status`, and where it is UNAVAILABLE, the arrays of `tenant` whose chunks are gone or out
  // of reach (Backend::BufferStatus: a lost cluster node, a GPU in a sticky error), named in its
  // message (at most 8, then how many more), so the caller knows which to delete and rebuild.
  absl::Status NameLostArrays(const absl::Status& status, absl::string_view tenant) const;

  // Renews the call's session (no-op without one). Every call does this on arrival.
  // RESOURCE_EXHAUSTED when the session is new and its tenant holds --max_sessions_per_tenant
  // sessions, or the daemon as many as it holds.
  absl::Status TouchSession(const CallContext& call);
  v1::KeepAliveResponse KeepAlive(const CallContext& call);
  // Ends the call's session now, as its lease running out would: deletes its unnamed arrays.
  v1::EndSessionResponse EndSession(const CallContext& call);
  // Expires the sessions whose lease ran out and deletes their unnamed arrays; returns how many
  // arrays went. The daemon calls it periodically.
  int64_t SweepExpiredSessions();
  // Called with the key (CallContext::session_key) of each session the sweep expires, after its
  // arrays went: the service removes the session's shared-memory segments. Null: none.
  void SetSessionEndListener(std::function<void(const std::string& session_key)> listener) {
    absl::MutexLock lock(&session_end_mu_);
    session_end_listener_ = std::move(listener);
  }

  // Every call below validates fully before allocating, and allocates everything before
  // launching, so a failed request leaves no trace. Compute is asynchronous: the returned array's
  // buffers may still be being written.
  // An unnamed result belongs to `call.session`.
  absl::StatusOr<ArrayPtr> Create(const v1::CreateArrayRequest& request,
                                  const CallContext& call = {});
  absl::StatusOr<ArrayPtr> Describe(absl::string_view handle, const CallContext& call = {}) const;
  std::vector<ArrayPtr> List() const;
  // One page of ListArrays: up to `page_size` arrays (0: the default; clamped to the maximum)
  // after the handle `page_token`, and whether more follow. INVALID_ARGUMENT for a negative size
  // or a token this server never gave.
  struct Page {
    std::vector<ArrayPtr> arrays;
    bool more = false;
  };
  absl::StatusOr<Page> ListPage(int page_size, absl::string_view page_token,
                                const CallContext& call = {}) const;
  absl::Status Delete(absl::string_view handle, const CallContext& call = {});
  absl::StatusOr<ArrayPtr> Reshard(const v1::ReshardRequest& request, const CallContext& call = {});
  absl::StatusOr<ArrayPtr> ChangeMode(const v1::ChangeModeRequest& request,
                                      const CallContext& call = {});
  absl::StatusOr<ArrayPtr> Elementwise(const v1::ElementwiseRequest& request,
                                       const CallContext& call = {});
  absl::StatusOr<ArrayPtr> Reduce(const v1::ReduceRequest& request, const CallContext& call = {});
  absl::StatusOr<ArrayPtr> Matmul(const v1::MatmulRequest& request, const CallContext& call = {});
  // Ops on CSR matrices other than products (SparseOpSpec): to_dense's one result, or
  // transpose's three (indptr, indices, data), registered in that order.
  absl::StatusOr<std::vector<ArrayPtr>> Sparse(const v1::SparseRequest& request,
                                               const CallContext& call = {});
  // Dense linear algebra (solve, inv, cholesky, qr, eigh, svd, det, slogdet): every result, in
  // LinalgOp's order, registered together (none when any fails). Waits for the factorization.
  absl::StatusOr<std::vector<ArrayPtr>> Linalg(const v1::LinalgRequest& request,
                                               const CallContext& call = {});
  // Indexing and shape ops (get_item, set_item, permute_dims, reshape, concat); set_item replaces
  // its target in place.
  absl::StatusOr<ArrayPtr> Manipulate(const v1::ManipulateRequest& request,
                                      const CallContext& call = {});
  // Runs a program (inline or registered) on arrays bound to its inputs. docs/graphs.md.
  absl::StatusOr<GraphRunOutcome> RunGraph(const v1::RunGraphRequest& request,
                                           const CallContext& call = {});
  absl::StatusOr<std::string> RegisterProgram(const v1::RegisterProgramRequest& request,
                                              const CallContext& call = {});
  absl::Status DeleteProgram(const v1::DeleteProgramRequest& request, const CallContext& call = {});
  // Frees the executable graphs RunGraph cached (and the device memory of their slots).
  void ClearGraphCache() { runner_->ClearCache(); }
  GraphRunCounters graph_run_counters() const {
    return {graph_launches_.load(std::memory_order_relaxed),
            graph_iterations_.load(std::memory_order_relaxed),
            graph_cancels_.load(std::memory_order_relaxed)};
  }

  // Waits for all enqueued work on every device; the handles are only validated (NOT_FOUND for
  // unknown ones). Waiting for everything is a superset of waiting for the named arrays.
  absl::Status Synchronize(const v1::SynchronizeRequest& request, const CallContext& call = {});

  // Starts an upload; the session takes the data pieces. Validation and allocation happen here,
  // so a bad header or an array over the memory limit fails before any byte is sent.
  absl::StatusOr<std::unique_ptr<UploadSession>> BeginUpload(const v1::UploadHeader& header,
                                                             const CallContext& call = {});

  // Streams the logical values of a region: `emit(shape, dtype, bytes)` is called with
  // consecutive pieces of at most max_message_bytes; it returns false to stop (client gone).
  // Reading the next piece from the devices overlaps emitting the current one.
  using EmitFn = std::function<bool(const Shape& shape, DType dtype, absl::string_view bytes)>;
  absl::Status Download(const v1::DownloadArrayRequest& request, const EmitFn& emit,
                        const CallContext& call = {});
  // As Download, but the region's bytes land in `destination` (which holds exactly
  // `destination_bytes`, the region's size; FAILED_PRECONDITION when the array changed to
  // another size) with no host copy in between: shared-memory downloads.
  absl::Status DownloadInto(const v1::DownloadArrayRequest& request, char* destination,
                            int64_t destination_bytes, const CallContext& call = {});

  // Device memory held by each tenant's arrays, against its quota (metrics).
  std::vector<TenantDeviceMemory> TenantMemoryUsage() const {
    return registry_.tenant_memory().Snapshot(backend_->device_count());
  }

 private:
  friend class UploadSession;
  // Download and DownloadInto: exactly one of `emit` and `destination` is set.
  absl::Status DownloadSlabs(const v1::DownloadArrayRequest& request, const EmitFn* emit,
                             char* destination, int64_t destination_bytes, const CallContext& call);
  // DownloadSlabs of an array already found (the region and message size from `request`).
  absl::Status ReadSlabs(const ArrayPtr& array, const v1::DownloadArrayRequest& request,
                         const EmitFn* emit, char* destination, int64_t destination_bytes,
                         const CallContext& call) const;
  // The values of an integer index array (IndexItem.array), read whole to the host as a download
  // reads them (any layout and mode; the call's deadline and cancellation honoured between
  // slabs), as int64. A uint64 value past int64's range is OUT_OF_RANGE naming `field`.
  absl::StatusOr<std::vector<int64_t>> ReadPositions(const ArrayPtr& array,
                                                     const std::string& field,
                                                     const CallContext& call) const;
  // Registers a result unless the call was abandoned meanwhile (CANCELLED/DEADLINE_EXCEEDED).
  absl::StatusOr<ArrayPtr> Register(Array array, bool in_place, const CallContext& call = {});
  // Index map normalization with this daemon's chunk limit and the ArrayInfo size bound.
  absl::StatusOr<IndexMap> NormalizeMap(const v1::IndexMap& map, const Shape& shape,
                                        absl::string_view field) const;
  // What a program's shape-independent check needs of this daemon: --max_chunks, the devices.
  ProgramCheckBounds ProgramBounds() const {
    return ProgramCheckBounds{options_.max_chunks, backend_->device_count()};
  }
  // A new result's metadata: unnamed results belong to the calling session.
  absl::StatusOr<Array> NewResult(const std::string& result_name, const CallContext& call) const;
  // The op executors' context for a request: operands come from the registry.
  OpContext RequestContext(const CallContext& call) const;
  absl::StatusOr<Array> ArrayFromSpec(const v1::ArraySpec& spec, absl::string_view field,
                                      const CallContext& call) const;
  // A reshard of many small pieces as a cached one-statement program replayed as a graph, where
  // the backend says replays beat launching the pieces one by one; nullopt where it does not
  // apply (the caller reshards eagerly). reshard_replay.cc.
  absl::StatusOr<std::optional<std::vector<Chunk>>> ReshardByReplay(
      const ArrayPtr& array, const IndexMap& map, const v1::ReshardRequest& request,
      const CallContext& call);

  std::unique_ptr<Backend> backend_;
  const EngineOptions options_;
  Registry registry_;
  SessionTable sessions_;
  ProgramStore programs_;
  CheckedPrograms checked_programs_{4096};
  std::unique_ptr<ProgramRunner> runner_;
  std::atomic<int64_t> graph_launches_{0};
  std::atomic<int64_t> graph_iterations_{0};
  std::atomic<int64_t> graph_cancels_{0};
  absl::Mutex session_end_mu_;
  std::function<void(const std::string&)> session_end_listener_ ABSL_GUARDED_BY(session_end_mu_);
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_ENGINE_ENGINE_H_
