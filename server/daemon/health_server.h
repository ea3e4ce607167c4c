// grpc.health.v1 on a port of its own (--health_listen), serving nothing else and without
// credentials, so probes reach it whatever the API port requires. It starts before the devices,
// so probes see readiness NOT_SERVING during start-up rather than a refused connection, and it
// outlives the API listener during drain, so probes see NOT_SERVING while calls finish.
//
// Services:
//   "liveness"  SERVING unless a device is in a sticky error state (its context is unusable until
//               the process restarts, so the kubelet should restart the pod).
//   "readiness" SERVING once the devices are up, until the drain starts, while no device is in a
//               sticky error state.
//   ""          the overall status: SERVING when both are.
// Any other service name answers NOT_FOUND.
#ifndef DISTARRAY_SERVER_DAEMON_HEALTH_SERVER_H_
#define DISTARRAY_SERVER_DAEMON_HEALTH_SERVER_H_

#include <memory>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace distarray::daemon {

inline constexpr char kLivenessService[] = "liveness";
inline constexpr char kReadinessService[] = "readiness";

class HealthServer {
 public:
  // Binds `listen` (host:port; port 0 picks one). INVALID_ARGUMENT naming --health_listen when it
  // cannot be bound. Starts live and not ready.
  static absl::StatusOr<std::unique_ptr<HealthServer>> Start(const std::string& listen);
  ~HealthServer();

  int port() const { return port_; }

  // Start-up has finished: the devices (and NCCL) are up and the API port serves.
  void SetStarted();
  // The drain has begun; readiness stays NOT_SERVING from now on.
  void SetDraining();
  // OK, or the first sticky device error seen (health never comes back from one: the context is
  // lost until the process restarts).
  void SetDeviceError(const absl::Status& error);

  bool live() const;
  bool ready() const;

 private:
  HealthServer() = default;
  void Publish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DrainQueue();  // after queue_->Shutdown(), without a poller

  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::ServerCompletionQueue> queue_;
  std::thread queue_poller_;
  int port_ = 0;
  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status device_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distarray::daemon

#endif  // DISTARRAY_SERVER_DAEMON_HEALTH_SERVER_H_
