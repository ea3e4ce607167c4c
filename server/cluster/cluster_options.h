// How this daemon takes part in a cluster (docs/cluster.md): the --cluster_* flags, or
// LeaderWorkerSet's environment. A size of 1 is a single daemon, as without a cluster.
#ifndef DISTARRAY_SERVER_CLUSTER_CLUSTER_OPTIONS_H_
#define DISTARRAY_SERVER_CLUSTER_CLUSTER_OPTIONS_H_

#include <string>

#include "absl/time/time.h"
#include "server/security/tls_credentials.h"

namespace distarray::cluster {

inline constexpr int kMaxClusterSize = 64;

struct ClusterOptions {
  int size = 1;
  int rank = 0;         // 0 leads: it serves the clients
  std::string leader;   // host:port of the leader's cluster service (members)
  std::string listen;   // this daemon's cluster service, host:port (port 0: any)
  std::string address;  // this node as its peers reach it (data plane, advertised)
  absl::Duration form_timeout = absl::Minutes(5);  // joins and the first connection
  absl::Duration heartbeat = absl::Seconds(1);     // the leader's probe period
  absl::Duration lost_after = absl::Seconds(5);    // silence after which a node is lost
  absl::Duration transfer_timeout = absl::Seconds(30);
  // Mutual TLS on the cluster service, both ways (--cluster_tls_*); not enabled: plaintext.
  MutualTls tls;
  // The name peers' certificates are checked against; empty: the host of the peer's address.
  std::string tls_server_name = "distarray-cluster";

  bool enabled() const { return size > 1; }
};

}  // namespace distarray::cluster

#endif  // DISTARRAY_SERVER_CLUSTER_CLUSTER_OPTIONS_H_
