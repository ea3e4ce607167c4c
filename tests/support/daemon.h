// Starts the real distarrayd binary on a loopback port for a test, and stops it.
#ifndef DISTARRAY_TESTS_SUPPORT_DAEMON_H_
#define DISTARRAY_TESTS_SUPPORT_DAEMON_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace distarray::testing {

// The distarrayd binary the tests run: $DISTARRAYD when set (a bundle run on another machine),
// else the build tree's.
std::string DaemonBinary();

class Daemon {
 public:
  struct Options {
    std::string backend = "host";
    int host_devices = 4;
    std::string memory_limit;     // e.g. "64MiB"; empty: the daemon's default
    std::string transfer;         // cuda: "peer" or "nccl"; empty: the daemon's default
    std::string graph_agreement;  // cuda: "auto", "peer" or "nccl"; empty: the daemon's default
    // Tenant -> bearer token. When set, they are written to a tokens file in the daemon's
    // scratch directory (removed with it) and passed as --auth_tokens_file.
    std::map<std::string, std::string> tokens;
    // More flags, e.g. "--session_lease_seconds=2"; later flags override earlier ones.
    std::vector<std::string> extra_flags;
    // Above 1: a cluster of this many daemons on loopback (docs/cluster.md), each with
    // host_devices and the flags above. Start returns the leader, which owns the members.
    int cluster_size = 1;
  };
  // UNAVAILABLE, with the daemon's own message, when the backend cannot start here (no GPU).
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(const Options& options);
  ~Daemon();  // SIGTERM, then waits

  const std::string& address() const { return address_; }
  // The grpc.health.v1 port's address (--health_listen on a free loopback port).
  const std::string& health_address() const { return health_address_; }
  // The daemon's scratch directory (its log, port files), removed with the daemon.
  const std::string& dir() const { return dir_; }
  // A cluster's members (rank r at r - 1), started and stopped with the leader.
  std::vector<std::unique_ptr<Daemon>>& members() { return members_; }
  // Starts one daemon of `options` as cluster rank `rank` (a member joins the leader's cluster
  // port `leader_port`) without waiting for it, e.g. to restart a member.
  static absl::StatusOr<std::unique_ptr<Daemon>> Launch(const Options& options, int rank,
                                                        int leader_port);
  // Waits for the daemon to write the port file `file_name` ("port", "cluster_port") in its
  // directory: the port, or the daemon's exit with its log.
  absl::StatusOr<int> WaitForPort(const std::string& file_name, int timeout_ms);
  // Whether the process is still running (a crash is a test failure).
  bool alive();
  pid_t pid() const { return pid_; }
  // Sends SIGTERM and waits up to `timeout_ms` for the process to end. Returns its wait status,
  // or -1 when it was still running (it is then killed).
  int Terminate(int timeout_ms);
  // Waits up to `timeout_ms` for the process to end by itself. Returns its wait status, or -1
  // when it still runs.
  int WaitForExit(int timeout_ms);
  // The daemon's log so far (stdout and stderr).
  std::string log() const;

 private:
  // Prints how a daemon that died under the test ended, with its log, and forgets its pid.
  void ReportDeath(int wait_status);

  Daemon(pid_t pid, std::string address, std::string health_address, std::string dir)
      : pid_(pid),
        address_(std::move(address)),
        health_address_(std::move(health_address)),
        dir_(std::move(dir)) {}
  pid_t pid_;
  std::string address_;
  std::string health_address_;
  std::string dir_;
  std::vector<std::unique_ptr<Daemon>> members_;
};

}  // namespace distarray::testing

#endif  // DISTARRAY_TESTS_SUPPORT_DAEMON_H_
