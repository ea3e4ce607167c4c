// A member's side of the device work: the buffers the leader holds handles to, and the work it
// sends (ClusterService.Execute, Write, Read), run on this node's own backend. Handles are never
// reused within a process, so a handle from before a restart is unknown, never another buffer.
#ifndef DISTARRAY_SERVER_CLUSTER_MEMBER_WORK_H_
#define DISTARRAY_SERVER_CLUSTER_MEMBER_WORK_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "server/backend/backend.h"
#include "server/cluster/data_plane.h"
#include "server/cluster/wire.h"

namespace distarray::cluster {

class MemberWork {
 public:
  MemberWork(Backend& backend, DataPlane& data_plane)
      : backend_(backend), data_plane_(data_plane) {}

  // Enqueues one piece of work; for Allocate, the new buffer's handle.
  absl::StatusOr<uint64_t> Execute(const wire::DeviceWork& work);
  void Free(absl::Span<const uint64_t> handles);
  absl::Status Write(uint64_t handle, int64_t offset, const std::string& data);
  absl::StatusOr<std::string> Read(uint64_t handle, int64_t offset, int64_t bytes);
  int64_t live_buffers() const;

 private:
  // The buffer of `handle`; 0 is null when `optional`. INTERNAL for an unknown handle.
  absl::StatusOr<BufferPtr> Lookup(uint64_t handle, bool optional = false) const;
  // A box and its buffer, checked to lie within it (INTERNAL otherwise): a member trusts no size
  // it can check, as a backend does not for the engine's.
  absl::StatusOr<BufferBox> Lookup(DType dtype, const wire::BufferBox& box) const;
  absl::StatusOr<BoxCopy> Lookup(DType dtype, const wire::BoxCopy& copy) const;

  absl::StatusOr<uint64_t> Allocate(const wire::Allocate& request);
  absl::Status Run(const wire::Elementwise& request);
  absl::Status Run(const wire::Reduce& request);
  absl::Status Run(const wire::Sort& request);
  absl::Status Run(const wire::Scan& request);
  absl::Status Run(const wire::Merge& request);
  absl::Status Run(const wire::CsrBlock& request);
  absl::Status Run(const wire::Factorize& request);

  Backend& backend_;
  DataPlane& data_plane_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, BufferPtr> buffers_ ABSL_GUARDED_BY(mu_);
  uint64_t next_handle_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace distarray::cluster

#endif  // DISTARRAY_SERVER_CLUSTER_MEMBER_WORK_H_
