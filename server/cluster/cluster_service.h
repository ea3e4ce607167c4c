// distarray.internal.v1.ClusterService: what one daemon of a cluster answers the others. The
// leader answers Join and the rendezvous store; a member answers the heartbeats and the device
// work. Each refuses the other role's calls (FAILED_PRECONDITION). It runs on a port of its own
// (--cluster_listen), apart from the API port's credentials and tenants: no client token opens
// it, and docs/cluster.md says to admit it only between the cluster's nodes.
#ifndef DISTARRAY_SERVER_CLUSTER_CLUSTER_SERVICE_H_
#define DISTARRAY_SERVER_CLUSTER_CLUSTER_SERVICE_H_

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "distarray/internal/v1/cluster.grpc.pb.h"
#include "server/cluster/cluster_leader.h"
#include "server/cluster/cluster_member.h"

namespace distarray::cluster {

class ClusterServiceImpl final : public internal::v1::ClusterService::Service {
 public:
  explicit ClusterServiceImpl(ClusterLeader* leader) : leader_(leader) {}
  explicit ClusterServiceImpl(ClusterMember* member) : member_(member) {}

  grpc::Status Join(grpc::ServerContext* context, const wire::JoinRequest* request,
                    wire::JoinResponse* response) override;
  grpc::Status StoreSet(grpc::ServerContext* context, const wire::StoreSetRequest* request,
                        wire::StoreSetResponse* response) override;
  grpc::Status StoreGet(grpc::ServerContext* context, const wire::StoreGetRequest* request,
                        wire::StoreGetResponse* response) override;
  grpc::Status Heartbeat(grpc::ServerContext* context, const wire::HeartbeatRequest* request,
                         wire::HeartbeatResponse* response) override;
  grpc::Status Connect(grpc::ServerContext* context, const wire::ConnectRequest* request,
                       wire::ConnectResponse* response) override;
  grpc::Status Execute(grpc::ServerContext* context, const wire::DeviceWork* request,
                       wire::DeviceWorkResult* response) override;
  grpc::Status Free(grpc::ServerContext* context, const wire::FreeRequest* request,
                    wire::FreeResponse* response) override;
  grpc::Status Write(grpc::ServerContext* context, const wire::WriteRequest* request,
                     wire::WriteResponse* response) override;
  grpc::Status Read(grpc::ServerContext* context, const wire::ReadRequest* request,
                    wire::ReadResponse* response) override;
  grpc::Status Synchronize(grpc::ServerContext* context, const wire::SynchronizeRequest* request,
                           wire::SynchronizeResponse* response) override;

 private:
  ClusterLeader* const leader_ = nullptr;
  ClusterMember* const member_ = nullptr;
};

struct ClusterServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};
// Serves `service` on options.listen (host:port, port 0 picks one), over mutual TLS where
// options.tls is enabled. INVALID_ARGUMENT naming --cluster_listen when it cannot be bound.
absl::StatusOr<ClusterServer> StartClusterServer(const ClusterOptions& options,
                                                 ClusterServiceImpl& service);

}  // namespace distarray::cluster

#endif  // DISTARRAY_SERVER_CLUSTER_CLUSTER_SERVICE_H_
