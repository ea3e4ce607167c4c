#include "server/daemon/cluster_flags.h"

#include <cstdlib>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "server/security/tls_credentials.h"

ABSL_FLAG(int, cluster_size, 0,
          "Daemons (one per node) serving one device space; 0: LWS_GROUP_SIZE when set, else 1 "
          "(no cluster)");
ABSL_FLAG(int, cluster_rank, -1,
          "This daemon's rank in the cluster; 0 leads and serves clients; -1: LWS_WORKER_INDEX "
          "when set, else 0");
ABSL_FLAG(std::string, cluster_leader, "",
          "host:port of the leader's --cluster_listen (members); empty: LWS_LEADER_ADDRESS with "
          "this daemon's --cluster_listen port");
ABSL_FLAG(std::string, cluster_listen, "0.0.0.0:50061",
          "host:port of this daemon's cluster service, for the other daemons only");
ABSL_FLAG(std::string, cluster_address, "",
          "This node's address as the other nodes reach it (data plane); empty: the host of "
          "--cluster_listen, or $POD_IP for a wildcard host");
ABSL_FLAG(std::string, cluster_port_file, "",
          "Write the bound cluster service port to this file once listening");
ABSL_FLAG(int, cluster_form_timeout_seconds, 300,
          "How long the leader waits for every member to join, and a member for the leader");
ABSL_FLAG(int, cluster_lost_after_seconds, 5,
          "Silence after which the leader counts a member lost (and a member the leader)");
ABSL_FLAG(std::string, cluster_tls_cert_file, "",
          "PEM certificate chain this daemon presents to the other daemons of its cluster, as "
          "server and as client (mutual TLS on the cluster port); with --cluster_tls_key_file and "
          "--cluster_tls_ca_file, or none of the three (plaintext)");
ABSL_FLAG(std::string, cluster_tls_key_file, "", "PEM private key of --cluster_tls_cert_file");
ABSL_FLAG(std::string, cluster_tls_ca_file, "",
          "PEM CA certificates; the other daemons' certificates must be signed by one of them");
ABSL_FLAG(std::string, cluster_tls_server_name, "distarray-cluster",
          "The name every cluster certificate carries (a subjectAltName DNS entry), which each "
          "daemon checks its peers' certificates against; empty: the host of the peer's address");
ABSL_FLAG(int, cluster_transfer_timeout_seconds, 30,
          "Longest wait of one copy between nodes, and of the data plane's rendezvous");

namespace distarray::daemon {
namespace {

absl::Status BadFlag(absl::string_view flag, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", why));
}

// An integer environment variable, or `fallback` when unset. INVALID_ARGUMENT when malformed.
absl::StatusOr<int> IntFromEnv(const char* name, int fallback) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  int value = 0;
  if (!absl::SimpleAtoi(text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat(name, "=", text, ": not an integer"));
  }
  return value;
}

// host and port of "host:port" ("[v6]:port" too); false when there is no port.
bool SplitHostPort(const std::string& address, std::string* host, std::string* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size()) return false;
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  return true;
}

}  // namespace

std::string ClusterPortFile() { return absl::GetFlag(FLAGS_cluster_port_file); }

absl::StatusOr<cluster::ClusterOptions> ClusterOptionsFromFlags() {
  cluster::ClusterOptions o;
  o.size = absl::GetFlag(FLAGS_cluster_size);
  if (o.size == 0) {
    absl::StatusOr<int> size = IntFromEnv("LWS_GROUP_SIZE", 1);
    if (!size.ok()) return size.status();
    o.size = *size;
  }
  if (o.size < 1 || o.size > cluster::kMaxClusterSize) {
    return BadFlag("cluster_size",
                   absl::StrCat("must be in [1, ", cluster::kMaxClusterSize, "], got ", o.size));
  }
  o.rank = absl::GetFlag(FLAGS_cluster_rank);
  if (o.rank == -1) {
    absl::StatusOr<int> rank = IntFromEnv("LWS_WORKER_INDEX", 0);
    if (!rank.ok()) return rank.status();
    o.rank = *rank;
  }
  if (o.rank < 0 || o.rank >= o.size) {
    return BadFlag("cluster_rank", absl::StrCat("must be in [0, ", o.size - 1,
                                                "] for --cluster_size=", o.size, ", got ", o.rank));
  }
  // Checked with or without a cluster: a daemon given unusable files should say so at once.
  ASSIGN_OR_RETURN(o.tls,
                   LoadMutualTls(absl::GetFlag(FLAGS_cluster_tls_cert_file),
                                 absl::GetFlag(FLAGS_cluster_tls_key_file),
                                 absl::GetFlag(FLAGS_cluster_tls_ca_file), "--cluster_tls_"));
  o.tls_server_name = absl::GetFlag(FLAGS_cluster_tls_server_name);
  if (!o.enabled()) return o;

  o.listen = absl::GetFlag(FLAGS_cluster_listen);
  std::string listen_host, listen_port;
  if (!SplitHostPort(o.listen, &listen_host, &listen_port)) {
    return BadFlag("cluster_listen", absl::StrCat("expected host:port, got '", o.listen, "'"));
  }
  o.leader = absl::GetFlag(FLAGS_cluster_leader);
  if (o.leader.empty() && o.rank > 0) {
    const char* lws_leader = std::getenv("LWS_LEADER_ADDRESS");
    if (lws_leader == nullptr || *lws_leader == '\0') {
      return BadFlag("cluster_leader",
                     "a member (--cluster_rank > 0) needs the leader's host:port (or "
                     "LWS_LEADER_ADDRESS)");
    }
    o.leader = absl::StrCat(lws_leader, ":", listen_port);
  }
  o.address = absl::GetFlag(FLAGS_cluster_address);
  if (o.address.empty()) {
    const bool wildcard = listen_host.empty() || listen_host == "0.0.0.0" || listen_host == "::";
    const char* pod_ip = std::getenv("POD_IP");
    if (!wildcard) {
      o.address = listen_host;
    } else if (pod_ip != nullptr && *pod_ip != '\0') {
      o.address = pod_ip;
    } else {
      return BadFlag("cluster_address",
                     "needed when --cluster_listen's host is a wildcard and POD_IP is unset: "
                     "the address the other nodes reach this one at");
    }
  }
  const int form = absl::GetFlag(FLAGS_cluster_form_timeout_seconds);
  if (form < 1) return BadFlag("cluster_form_timeout_seconds", "must be at least 1");
  o.form_timeout = absl::Seconds(form);
  const int lost = absl::GetFlag(FLAGS_cluster_lost_after_seconds);
  if (lost < 2) return BadFlag("cluster_lost_after_seconds", "must be at least 2");
  o.lost_after = absl::Seconds(lost);
  const int transfer = absl::GetFlag(FLAGS_cluster_transfer_timeout_seconds);
  if (transfer < 1) return BadFlag("cluster_transfer_timeout_seconds", "must be at least 1");
  o.transfer_timeout = absl::Seconds(transfer);
  return o;
}

}  // namespace distarray::daemon
