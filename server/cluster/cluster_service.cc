#include "server/cluster/cluster_service.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "server/cluster/answer_details.h"
#include "server/cluster/cluster_credentials.h"

namespace distarray::cluster {
namespace {

// Every answer says it is one (answer_details.h): the leader tells a member's own UNAVAILABLE
// from an unreachable member by it.
grpc::Status ToGrpc(const absl::Status& status) { return AnswerToGrpc(status); }

grpc::Status NotLeader() {
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      "this daemon is a cluster member, not the leader (rank 0)");
}
grpc::Status NotMember() {
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      "this daemon is the cluster's leader; device work goes to members");
}

// How long a store read may wait: the caller's deadline, at most a minute.
absl::Duration WaitBudget(const grpc::ServerContext& context) {
  const auto left = context.deadline() - std::chrono::system_clock::now();
  const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(left).count();
  return absl::Milliseconds(std::clamp<int64_t>(ms, 0, 60'000));
}

}  // namespace

grpc::Status ClusterServiceImpl::Join(grpc::ServerContext*, const wire::JoinRequest* request,
                                      wire::JoinResponse* response) {
  if (leader_ == nullptr) return NotLeader();
  absl::StatusOr<wire::JoinResponse> joined = leader_->Join(*request);
  if (!joined.ok()) return ToGrpc(joined.status());
  *response = *std::move(joined);
  return grpc::Status::OK;
}

grpc::Status ClusterServiceImpl::StoreSet(grpc::ServerContext*,
                                          const wire::StoreSetRequest* request,
                                          wire::StoreSetResponse*) {
  if (leader_ == nullptr) return NotLeader();
  // Gloo's rendezvous keys are short and its values a few hundred bytes (a rank's addresses).
  constexpr size_t kMaxKeyBytes = 256, kMaxValueBytes = 64 << 10;
  if (request->key().size() > kMaxKeyBytes || request->value().size() > kMaxValueBytes) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("rendezvous key or value too large (at most ", kMaxKeyBytes,
                                     " and ", kMaxValueBytes, " bytes)"));
  }
  return ToGrpc(leader_->store().Set(request->key(), request->value()));
}

grpc::Status ClusterServiceImpl::StoreGet(grpc::ServerContext* context,
                                          const wire::StoreGetRequest* request,
                                          wire::StoreGetResponse* response) {
  if (leader_ == nullptr) return NotLeader();
  absl::StatusOr<std::string> value = leader_->store().Get(request->key(), WaitBudget(*context));
  if (!value.ok()) return ToGrpc(value.status());
  response->set_value(*std::move(value));
  return grpc::Status::OK;
}

grpc::Status ClusterServiceImpl::Heartbeat(grpc::ServerContext*,
                                           const wire::HeartbeatRequest* request,
                                           wire::HeartbeatResponse* response) {
  if (member_ == nullptr) return NotMember();
  *response = member_->Heartbeat(*request);
  return grpc::Status::OK;
}

grpc::Status ClusterServiceImpl::Connect(grpc::ServerContext*, const wire::ConnectRequest* request,
                                         wire::ConnectResponse*) {
  if (member_ == nullptr) return NotMember();
  return ToGrpc(member_->Connect(request->epoch()));
}

grpc::Status ClusterServiceImpl::Execute(grpc::ServerContext*, const wire::DeviceWork* request,
                                         wire::DeviceWorkResult* response) {
  if (member_ == nullptr) return NotMember();
  absl::StatusOr<uint64_t> done = member_->work().Execute(*request);
  if (!done.ok()) return ToGrpc(done.status());
  response->set_allocated(*done);
  return grpc::Status::OK;
}

grpc::Status ClusterServiceImpl::Free(grpc::ServerContext*, const wire::FreeRequest* request,
                                      wire::FreeResponse*) {
  if (member_ == nullptr) return NotMember();
  member_->work().Free(absl::MakeConstSpan(request->buffers().data(), request->buffers().size()));
  return grpc::Status::OK;
}

grpc::Status ClusterServiceImpl::Write(grpc::ServerContext*, const wire::WriteRequest* request,
                                       wire::WriteResponse*) {
  if (member_ == nullptr) return NotMember();
  return ToGrpc(member_->work().Write(request->buffer(), request->offset(), request->data()));
}

grpc::Status ClusterServiceImpl::Read(grpc::ServerContext*, const wire::ReadRequest* request,
                                      wire::ReadResponse* response) {
  if (member_ == nullptr) return NotMember();
  absl::StatusOr<std::string> bytes =
      member_->work().Read(request->buffer(), request->offset(), request->bytes());
  if (!bytes.ok()) return ToGrpc(bytes.status());
  response->set_data(*std::move(bytes));
  return grpc::Status::OK;
}

grpc::Status ClusterServiceImpl::Synchronize(grpc::ServerContext*, const wire::SynchronizeRequest*,
                                             wire::SynchronizeResponse*) {
  if (member_ == nullptr) return NotMember();
  return ToGrpc(member_->backend().Synchronize());
}

absl::StatusOr<ClusterServer> StartClusterServer(const ClusterOptions& options,
                                                 ClusterServiceImpl& service) {
  const std::string& listen = options.listen;
  ClusterServer out;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, ClusterServerCredentials(options), &out.port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(int{64} << 20);
  builder.SetMaxSendMessageSize(int{64} << 20);
  out.server = builder.BuildAndStart();
  if (out.server == nullptr || out.port == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--cluster_listen=", listen, ": cannot listen there"));
  }
  return out;
}

}  // namespace distarray::cluster
