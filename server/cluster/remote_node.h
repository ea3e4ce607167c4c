// The leader's link to one member daemon: the device work it forwards there over ClusterService,
// the buffers it holds there, and whether the member still answers. A member that restarts is a
// new RemoteNode (a new incarnation); buffers of the old one then fail UNAVAILABLE, since their
// memory died with the process.
#ifndef DISTARRAY_SERVER_CLUSTER_REMOTE_NODE_H_
#define DISTARRAY_SERVER_CLUSTER_REMOTE_NODE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/channel.h>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "distarray/internal/v1/cluster.grpc.pb.h"
#include "server/backend/backend.h"
#include "server/cluster/wire.h"

namespace distarray::cluster {

class RemoteNode : public std::enable_shared_from_this<RemoteNode> {
 public:
  struct Description {
    int rank = 0;
    int first_device = 0;  // its devices' global ids start here
    std::string address;   // its ClusterService
    uint64_t incarnation = 0;
    std::vector<wire::DeviceDescription> devices;
  };
  // `channel`: to the member's cluster service (ClusterChannel).
  RemoteNode(Description description, uint64_t leader_incarnation,
             std::shared_ptr<grpc::Channel> channel);
  ~RemoteNode();  // sends the frees still queued

  int rank() const { return description_.rank; }
  int first_device() const { return description_.first_device; }
  int device_count() const { return static_cast<int>(description_.devices.size()); }
  const std::string& address() const { return description_.address; }
  uint64_t incarnation() const { return description_.incarnation; }
  const Description& description() const { return description_; }

  // OK, or UNAVAILABLE naming the node once it is lost.
  absl::Status Usable() const;
  void MarkLost(const std::string& why);

  // A buffer of `bytes` on the member's device `local_device`, released there when the last
  // reference drops.
  absl::StatusOr<BufferPtr> Allocate(int local_device, int64_t bytes);
  absl::Status Execute(const wire::DeviceWork& work);
  absl::Status Write(uint64_t handle, int64_t offset, const void* src, int64_t bytes);
  absl::Status Read(uint64_t handle, int64_t offset, int64_t bytes, void* dst);
  absl::Status Synchronize();
  // Probes the member (deadline `timeout`) and refreshes its devices' figures.
  absl::Status Heartbeat(absl::Duration timeout);
  // Asks the member to connect the data plane for `epoch`; returns when its rendezvous is done.
  absl::Status Connect(int64_t epoch, absl::Duration timeout);
  // The member's data plane epoch from the last heartbeat (0: not connected).
  int64_t data_plane_epoch() const;

  // The device's figures, refreshed first (queued frees sent, then a heartbeat) when the leader
  // allocated or freed there since the last refresh, or that is older than 20 ms: a client
  // reading them after its call sees its buffers' memory as the member counts it.
  DeviceMemory memory(int local_device);
  std::string device_uuid(int local_device) const;
  absl::Status DeviceStatus(int local_device) const;

  // Queues a handle to free (RemoteBuffer's destructor); sent in batches.
  void Free(uint64_t handle);

 private:
  // Registers a call in flight for MarkLost to cancel, so that no caller waits on a lost node
  // longer than the heartbeats take to find it lost.
  class InFlight {
   public:
    InFlight(RemoteNode& node, grpc::ClientContext& context);
    ~InFlight();

   private:
    RemoteNode& node_;
    grpc::ClientContext& context_;
  };
  absl::StatusOr<uint64_t> Call(const wire::DeviceWork& work);
  // The member's error, as the leader reports it: its code, the node named.
  absl::Status FromGrpc(const grpc::Status& status, const char* what) const;
  // One unary RPC (`method`, an Async* method of the stub) whose wait is bounded by the client
  // call this thread serves (ScopedCallBound) as well as by `own_bound`, registered in flight for
  // MarkLost; its failure as FromBoundedGrpc reports it, naming `what`.
  template <typename Request, typename Response, typename AsyncMethod>
  absl::Status BoundedCall(const char* what, absl::Duration own_bound, AsyncMethod method,
                           const Request& request, Response* response);
  // The same for a wait bounded by the client call it serves (ScopedCallBound): `ended` is why the
  // caller stopped waiting, if it did; `by_call_deadline`, that the RPC's deadline was the call's,
  // so its passing is the call's DEADLINE_EXCEEDED, not the member's fault.
  absl::Status FromBoundedGrpc(const grpc::Status& status, const absl::Status& ended,
                               bool by_call_deadline, const char* what) const;
  void SendFrees();
  // Sends `batch` now (the frees thread, and memory()'s refresh).
  void SendFreeBatch(std::vector<uint64_t> batch);

  const Description description_;
  const uint64_t leader_incarnation_;
  std::shared_ptr<internal::v1::ClusterService::Stub> stub_;

  absl::Mutex send_mu_;  // held while a batch of frees is sent (SendFreeBatch)
  mutable absl::Mutex mu_;
  std::string lost_ ABSL_GUARDED_BY(mu_);  // empty while live
  std::vector<wire::DeviceDescription> devices_ ABSL_GUARDED_BY(mu_);
  int64_t data_plane_epoch_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<uint64_t> frees_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<grpc::ClientContext*> in_flight_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time refreshed_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::thread freer_;
};

// A buffer on a member: its handle there, and the node that holds it.
class RemoteBuffer final : public DeviceBuffer {
 public:
  RemoteBuffer(std::shared_ptr<RemoteNode> node, uint64_t handle, int device, int64_t bytes)
      : node_(std::move(node)), handle_(handle), device_(device), bytes_(bytes) {}
  ~RemoteBuffer() override { node_->Free(handle_); }
  int device() const override { return device_; }
  int64_t bytes() const override { return bytes_; }
  uint64_t handle() const { return handle_; }
  RemoteNode& node() const { return *node_; }

 private:
  const std::shared_ptr<RemoteNode> node_;
  const uint64_t handle_;
  const int device_;
  const int64_t bytes_;
};

}  // namespace distarray::cluster

#endif  // DISTARRAY_SERVER_CLUSTER_REMOTE_NODE_H_
