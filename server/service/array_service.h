// The gRPC edge: adapts distarray.v1.ArrayService calls to the engine, maps absl::Status to gRPC
// status codes one to one, and counts transferred bytes (the gRPC call metrics come from the
// metrics interceptor, server/metrics/grpc_server_metrics.h). No logic of its own beyond transport.
//
// It uses gRPC's synchronous API: handlers run on gRPC's thread pool and the engine's calls only
// enqueue device work, so a blocked handler is a download waiting for its bytes. See
// docs/design.md for why this over the callback API.
#ifndef DISTARRAY_SERVER_SERVICE_ARRAY_SERVICE_H_
#define DISTARRAY_SERVER_SERVICE_ARRAY_SERVICE_H_

#include "absl/strings/string_view.h"
#include "distarray/v1/distarray.grpc.pb.h"
#include "server/engine/engine.h"
#include "server/logging/transfer_log.h"
#include "server/metrics/metrics.h"
#include "server/security/authenticator.h"
#include "server/service/call_slots.h"
#include "server/service/drain_gate.h"
#include "server/service/shared_memory_transfer.h"
#include "server/service/upload_watchdog.h"

namespace distarray {

class ArrayServiceImpl final : public v1::ArrayService::Service {
 public:
  // Uploads idle for engine.options().upload_idle_timeout_ms are cancelled (0: never).
  // `shared_memory` is the --shared_memory setting (on unless given).
  // The service removes a session's shared-memory segments when the engine expires it.
  ArrayServiceImpl(Engine& engine, Metrics& metrics,
                   SharedMemoryOptions shared_memory = MakeSharedMemoryOptions(true));
  ~ArrayServiceImpl() override;

  // Every call is first mapped to its tenant by `authenticator` (not owned; it outlives the
  // service): a call it refuses gets UNAUTHENTICATED and reaches nothing else. Unset: every call
  // is the default tenant.
  void set_authenticator(const Authenticator* authenticator) { authenticator_ = authenticator; }
  // While `gate` drains, new calls and (once the drain time is spent) running ones answer
  // UNAVAILABLE. Not owned; unset: never drains.
  void set_drain_gate(DrainGate* gate) { drain_gate_ = gate; }
  // Each tenant may have at most `n` calls in flight (--max_concurrent_calls_per_tenant); a call
  // beyond it answers RESOURCE_EXHAUSTED at once. KeepAlive is not counted: it cannot hold a
  // thread for long, and refusing it would expire a busy client's session. <= 0: no bound (the
  // default). Call before the server starts.
  void set_max_calls_per_tenant(int n) { call_slots_ = std::make_unique<TenantCallSlots>(n); }
  // Where uploads and downloads are logged (not owned); unset: a default TransferLog.
  void set_transfer_log(TransferLog* log) { transfer_log_ = log; }
  // Removes every shared-memory segment from /dev/shm (the drain, once calls have ended: the
  // process then exits without destructors). Returns how many.
  int64_t ReleaseAllSharedMemory() { return segments_.ReleaseAll(); }
  // The bound port of the daemon's grpc.health.v1 server, reported by GetServerInfo (0: none).
  void set_health_port(int port) { health_port_ = port; }

  grpc::Status GetServerInfo(grpc::ServerContext* context, const v1::GetServerInfoRequest* request,
                             v1::GetServerInfoResponse* response) override;
  grpc::Status CreateArray(grpc::ServerContext* context, const v1::CreateArrayRequest* request,
                           v1::CreateArrayResponse* response) override;
  grpc::Status UploadArray(grpc::ServerContext* context,
                           grpc::ServerReader<v1::UploadArrayRequest>* reader,
                           v1::UploadArrayResponse* response) override;
  // DownloadArray is served as gRPC's "split streaming" (a server stream whose handler reads the
  // request itself; the generated WithSplitStreamingMethod_ does the same) with messages written
  // as raw bytes (download_message.h), so each byte is copied once on its way out. Clients see an
  // ordinary server stream of DownloadArrayResponse. (Named as the generated code names it.)
  using DownloadStream = grpc::ServerSplitStreamer<v1::DownloadArrayRequest, grpc::ByteBuffer>;
  grpc::Status StreamedDownloadArray(grpc::ServerContext* context, DownloadStream* stream);
  grpc::Status UploadFromSharedMemory(grpc::ServerContext* context,
                                      const v1::UploadFromSharedMemoryRequest* request,
                                      v1::UploadFromSharedMemoryResponse* response) override;
  grpc::Status DownloadToSharedMemory(grpc::ServerContext* context,
                                      const v1::DownloadToSharedMemoryRequest* request,
                                      v1::DownloadToSharedMemoryResponse* response) override;
  grpc::Status CreateSharedMemory(grpc::ServerContext* context,
                                  const v1::CreateSharedMemoryRequest* request,
                                  v1::CreateSharedMemoryResponse* response) override;
  grpc::Status ReleaseSharedMemory(grpc::ServerContext* context,
                                   const v1::ReleaseSharedMemoryRequest* request,
                                   v1::ReleaseSharedMemoryResponse* response) override;
  grpc::Status DescribeArray(grpc::ServerContext* context, const v1::DescribeArrayRequest* request,
                             v1::DescribeArrayResponse* response) override;
  grpc::Status ListArrays(grpc::ServerContext* context, const v1::ListArraysRequest* request,
                          v1::ListArraysResponse* response) override;
  grpc::Status DeleteArray(grpc::ServerContext* context, const v1::DeleteArrayRequest* request,
                           v1::DeleteArrayResponse* response) override;
  grpc::Status Reshard(grpc::ServerContext* context, const v1::ReshardRequest* request,
                       v1::ReshardResponse* response) override;
  grpc::Status ChangeMode(grpc::ServerContext* context, const v1::ChangeModeRequest* request,
                          v1::ChangeModeResponse* response) override;
  grpc::Status Elementwise(grpc::ServerContext* context, const v1::ElementwiseRequest* request,
                           v1::ElementwiseResponse* response) override;
  grpc::Status Reduce(grpc::ServerContext* context, const v1::ReduceRequest* request,
                      v1::ReduceResponse* response) override;
  grpc::Status Matmul(grpc::ServerContext* context, const v1::MatmulRequest* request,
                      v1::MatmulResponse* response) override;
  grpc::Status Linalg(grpc::ServerContext* context, const v1::LinalgRequest* request,
                      v1::LinalgResponse* response) override;
  grpc::Status Manipulate(grpc::ServerContext* context, const v1::ManipulateRequest* request,
                          v1::ManipulateResponse* response) override;
  grpc::Status Sparse(grpc::ServerContext* context, const v1::SparseRequest* request,
                      v1::SparseResponse* response) override;
  grpc::Status RunGraph(grpc::ServerContext* context, const v1::RunGraphRequest* request,
                        v1::RunGraphResponse* response) override;
  grpc::Status RegisterProgram(grpc::ServerContext* context,
                               const v1::RegisterProgramRequest* request,
                               v1::RegisterProgramResponse* response) override;
  grpc::Status DeleteProgram(grpc::ServerContext* context, const v1::DeleteProgramRequest* request,
                             v1::DeleteProgramResponse* response) override;
  grpc::Status Synchronize(grpc::ServerContext* context, const v1::SynchronizeRequest* request,
                           v1::SynchronizeResponse* response) override;
  grpc::Status KeepAlive(grpc::ServerContext* context, const v1::KeepAliveRequest* request,
                         v1::KeepAliveResponse* response) override;
  grpc::Status EndSession(grpc::ServerContext* context, const v1::EndSessionRequest* request,
                          v1::EndSessionResponse* response) override;

 private:
  // Whether a call renews its session (every call but the one that ends it).
  enum class SessionUse { kRenew, kEnd };
  // Authenticates the call, takes its tenant's call slot, reads the call's session from its
  // metadata and renews it (unless `use` ends it), runs `body(call)`, and logs failures other than
  // the client's own mistakes. With `response` (the message `body` fills), a call that registered
  // arrays or programs answers OK only while its client is still there and enough of its deadline
  // is left for the response to reach it; otherwise, or when `body` fails after registering, what
  // it registered is taken back.
  template <typename Body>
  grpc::Status Handle(absl::string_view method, grpc::ServerContext* context,
                      const google::protobuf::Message* response, Body&& body,
                      SessionUse use = SessionUse::kRenew);
  template <typename Body>
  grpc::Status Handle(absl::string_view method, grpc::ServerContext* context, Body&& body,
                      SessionUse use = SessionUse::kRenew);
  // Deletes what the call registered (CallResults).
  void TakeBack(const CallContext& call);

  Engine& engine_;
  Metrics& metrics_;
  UploadWatchdog upload_watchdog_;
  const Authenticator* authenticator_ = nullptr;
  std::unique_ptr<TenantCallSlots> call_slots_ = std::make_unique<TenantCallSlots>();
  DrainGate* drain_gate_ = nullptr;
  TransferLog default_transfer_log_;
  TransferLog* transfer_log_ = &default_transfer_log_;
  const SharedMemoryOptions shared_memory_;
  SharedMemoryTable segments_;  // the segments CreateSharedMemory made, by session
  int health_port_ = 0;
  DrainRefusalLog drain_refusals_;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_SERVICE_ARRAY_SERVICE_H_
