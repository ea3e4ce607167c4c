// The bytes between nodes: Gloo's tcp transport, one full mesh of connections per rendezvous
// epoch. A copy from a buffer on one node into a buffer on another runs in two halves, each on
// its own node's backend: Send packs the source box on its device, reads it to the host and
// posts it to the peer; Receive takes the bytes, writes them to its device and combines them into
// the destination box. Any backend works this way (the GPU path stages through the host; NCCL
// between nodes is docs/cluster.md's next step).
//
// Gloo's sends are rendezvous: a send completes only once the peer has posted the matching
// receive, so Send returns as soon as its bytes are posted and a waiter thread holds them until
// the peer takes them. Sizes are agreed before either half runs (the leader checks both boxes):
// Gloo aborts a process that receives more bytes than it posted.
#ifndef DISTARRAY_SERVER_CLUSTER_DATA_PLANE_H_
#define DISTARRAY_SERVER_CLUSTER_DATA_PLANE_H_

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/backend/backend.h"

namespace gloo {
class Context;
namespace rendezvous {
class Store;
}
namespace transport {
class Device;
}
}  // namespace gloo

namespace distarray::cluster {

class DataPlane {
 public:
  struct Options {
    int rank = 0;
    int size = 1;
    std::string address;                         // this node's address as its peers reach it
    absl::Duration timeout = absl::Seconds(30);  // rendezvous, and each transfer's wait
  };
  explicit DataPlane(Options options);
  ~DataPlane();  // waits for the posted sends (each at most the timeout)
  DataPlane(const DataPlane&) = delete;
  DataPlane& operator=(const DataPlane&) = delete;

  // Connects to every other rank through `store` (keys scoped by `epoch`, which must grow with
  // every reconnection: the store's keys are write-once). Blocks until every rank has connected
  // or the timeout passes (UNAVAILABLE naming the epoch). Replaces the previous connections.
  absl::Status Connect(gloo::rendezvous::Store& store, int64_t epoch);
  // The connected epoch; 0 when not connected or broken by a failed transfer.
  int64_t epoch() const;

  // The halves of one copy between nodes (see the file comment). `tag` is unique per copy in
  // flight. UNAVAILABLE when not connected or the peer is gone.
  absl::Status Send(Backend& backend, DType dtype, const BufferBox& src, int peer, uint64_t tag);
  absl::Status Receive(Backend& backend, DType dtype, const BufferBox& dst, Combine combine,
                       int peer, uint64_t tag);

 private:
  // The context of the current epoch, or UNAVAILABLE.
  absl::StatusOr<std::shared_ptr<gloo::Context>> Current() const;
  // A transfer on `context` failed: Gloo closes every pair after a timeout, so the epoch is over.
  void MarkBroken(const std::shared_ptr<gloo::Context>& context, const std::string& why);
  void ReapFinishedSenders() ABSL_EXCLUSIVE_LOCKS_REQUIRED(senders_mu_);

  // Host memory in pieces, kept for the next transfer: fresh memory costs a page fault per 4 KiB
  // on first touch, which on 16 cores cost a cross-node copy a third of its time.
  class PiecePool {
   public:
    std::unique_ptr<char[]> Take();
    void Give(std::unique_ptr<char[]> piece);

   private:
    static constexpr int64_t kMaxIdlePieces = 64;  // 512 MiB kept at most
    absl::Mutex mu_;
    std::vector<std::unique_ptr<char[]>> idle_ ABSL_GUARDED_BY(mu_);
  };
  class HostPieces;

  const Options options_;
  PiecePool pool_;
  std::shared_ptr<gloo::transport::Device> device_;
  mutable absl::Mutex mu_;
  std::shared_ptr<gloo::Context> context_ ABSL_GUARDED_BY(mu_);
  int64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;

  struct Sender {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  absl::Mutex senders_mu_;
  std::list<Sender> senders_ ABSL_GUARDED_BY(senders_mu_);
};

// A copy's pieces are told apart by bits kPieceShift..62 of its Gloo slot; copy tags keep them
// clear (the top bit marks a copy, the low bits count them).
inline constexpr int kPieceShift = 40;

// Bytes of a box of `dtype`; the two halves of a copy must agree on it.
absl::StatusOr<int64_t> BoxBytes(DType dtype, const Box& box);

}  // namespace distarray::cluster

#endif  // DISTARRAY_SERVER_CLUSTER_DATA_PLANE_H_
