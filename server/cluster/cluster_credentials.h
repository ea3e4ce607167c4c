// The transport of the cluster service (docs/cluster.md, "Security"): plaintext, or mutual TLS
// where every daemon presents its cluster certificate and accepts only peers whose certificate the
// cluster's CA signed, as server (the cluster port) and as client (calls to the leader and to the
// members).
#ifndef DISTARRAY_SERVER_CLUSTER_CLUSTER_CREDENTIALS_H_
#define DISTARRAY_SERVER_CLUSTER_CLUSTER_CREDENTIALS_H_

#include <memory>
#include <string>

#include <grpcpp/channel.h>
#include <grpcpp/security/server_credentials.h>

#include "server/cluster/cluster_options.h"

namespace distarray::cluster {

// The cluster port's credentials: mutual TLS requiring a client certificate where options.tls is
// enabled, else insecure.
std::shared_ptr<grpc::ServerCredentials> ClusterServerCredentials(const ClusterOptions& options);

// A channel to another daemon's cluster service at `address` (host:port), carrying messages of up
// to 64 MiB (transfers' pieces), with this daemon's certificate where options.tls is enabled; the
// peer's certificate must then carry options.tls_server_name.
std::shared_ptr<grpc::Channel> ClusterChannel(const std::string& address,
                                              const ClusterOptions& options);

}  // namespace distarray::cluster

#endif  // DISTARRAY_SERVER_CLUSTER_CLUSTER_CREDENTIALS_H_
