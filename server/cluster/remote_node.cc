#include "server/cluster/remote_node.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "server/backend/call_bound.h"
#include "server/backend/unreachable_node.h"
#include "server/cluster/answer_details.h"

namespace distarray::cluster {
namespace {

// Bytes per Write or Read message: well under the channel's message bound.
constexpr int64_t kTransferPieceBytes = int64_t{16} << 20;
// Enqueueing work takes microseconds; a receive waits for its bytes up to the transfer timeout.
constexpr absl::Duration kExecuteDeadline = absl::Seconds(90);
// A read or a synchronize waits for the member's queued work.
constexpr absl::Duration kWaitDeadline = absl::Minutes(30);

// How often a wait on a member checks that the call it serves is still wanted.
constexpr auto kCallPollInterval = std::chrono::milliseconds(20);

void SetDeadline(grpc::ClientContext& context, absl::Duration d) {
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(absl::ToInt64Milliseconds(d)));
}

// Sets `context`'s deadline to `fixed` from now, or to the deadline of the client call this
// thread serves (ScopedCallBound) where that comes first; says which.
bool SetCallDeadline(grpc::ClientContext& context, absl::Duration fixed) {
  const absl::Time own = absl::Now() + fixed;
  const ScopedCallBound* bound = ScopedCallBound::Current();
  const bool by_call = bound != nullptr && bound->deadline() < own;
  context.set_deadline(absl::ToChronoTime(by_call ? bound->deadline() : own));
  return by_call;
}

// Runs one unary call that `start` begins on a completion queue, and waits for its answer while
// the client call this thread serves is wanted: polled every kCallPollInterval, the RPC is
// cancelled once it is not, and `ended` holds why (the client's cancel, the drain). Without a
// bound it simply waits.
template <typename Response, typename Start>
grpc::Status Await(grpc::ClientContext& context, Start start, Response* response,
                   absl::Status* ended) {
  grpc::CompletionQueue queue;
  auto reader = start(&queue);
  grpc::Status status;
  reader->Finish(response, &status, &status);
  const ScopedCallBound* bound = ScopedCallBound::Current();
  bool cancelled = false;
  for (;;) {
    void* tag = nullptr;
    bool ok = false;
    const grpc::CompletionQueue::NextStatus next =
        queue.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + kCallPollInterval);
    if (next != grpc::CompletionQueue::TIMEOUT) break;
    if (!cancelled && bound != nullptr) {
      if (absl::Status alive = bound->Alive(); !alive.ok()) {
        *ended = std::move(alive);
        context.TryCancel();  // the Finish event follows, with CANCELLED
        cancelled = true;
      }
    }
  }
  queue.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (queue.Next(&tag, &ok)) {
  }
  return status;
}

}  // namespace

RemoteNode::RemoteNode(Description description, uint64_t leader_incarnation,
                       std::shared_ptr<grpc::Channel> channel)
    : description_(std::move(description)), leader_incarnation_(leader_incarnation) {
  stub_ = internal::v1::ClusterService::NewStub(std::move(channel));
  devices_ = description_.devices;
  freer_ = std::thread([this] { SendFrees(); });
}

RemoteNode::~RemoteNode() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  freer_.join();
}

absl::Status RemoteNode::Usable() const {
  absl::MutexLock lock(&mu_);
  if (lost_.empty()) return absl::OkStatus();
  return WithUnreachableNode(
      absl::UnavailableError(absl::StrCat("cluster node ", rank(), " (", address(), ", devices ",
                                          first_device(), "..", first_device() + device_count() - 1,
                                          ") is lost: ", lost_,
                                          "; the array chunks on its devices are gone")),
      rank());
}

void RemoteNode::MarkLost(const std::string& why) {
  absl::MutexLock lock(&mu_);
  if (!lost_.empty()) return;
  lost_ = why;
  spdlog::error("cluster node {} ({}) lost: {}", rank(), address(), why);
  for (grpc::ClientContext* context : in_flight_) context->TryCancel();
}

RemoteNode::InFlight::InFlight(RemoteNode& node, grpc::ClientContext& context)
    : node_(node), context_(context) {
  absl::MutexLock lock(&node_.mu_);
  node_.in_flight_.insert(&context_);
  if (!node_.lost_.empty()) context_.TryCancel();
}

RemoteNode::InFlight::~InFlight() {
  absl::MutexLock lock(&node_.mu_);
  node_.in_flight_.erase(&context_);
}

template <typename Request, typename Response, typename AsyncMethod>
absl::Status RemoteNode::BoundedCall(const char* what, absl::Duration own_bound, AsyncMethod method,
                                     const Request& request, Response* response) {
  grpc::ClientContext context;
  const bool by_call = SetCallDeadline(context, own_bound);
  InFlight in_flight(*this, context);
  absl::Status ended;
  const grpc::Status s = Await(
      context,
      [&](grpc::CompletionQueue* queue) {
        return (stub_.get()->*method)(&context, request, queue);
      },
      response, &ended);
  if (s.ok() && ended.ok()) return absl::OkStatus();
  return FromBoundedGrpc(s, ended, by_call, what);
}

absl::Status RemoteNode::FromBoundedGrpc(const grpc::Status& status, const absl::Status& ended,
                                         bool by_call_deadline, const char* what) const {
  if (!ended.ok()) {
    return absl::Status(ended.code(), absl::StrCat("waiting for cluster node ", rank(), " (",
                                                   address(), "), ", what, ": ", ended.message()));
  }
  if (by_call_deadline && status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    return absl::DeadlineExceededError(
        absl::StrCat("the call's deadline passed while waiting for cluster node ", rank(), " (",
                     address(), "), ", what));
  }
  return FromGrpc(status, what);
}

absl::Status RemoteNode::FromGrpc(const grpc::Status& status, const char* what) const {
  if (status.error_code() == grpc::StatusCode::CANCELLED) {
    if (absl::Status usable = Usable(); !usable.ok()) return usable;
  }
  const auto code = static_cast<absl::StatusCode>(status.error_code());
  // A member's own refusal keeps its code (RESOURCE_EXHAUSTED for its memory); a broken
  // connection is the node's unavailability.
  absl::Status failed(code, absl::StrCat("cluster node ", rank(), " (", address(), "), ", what,
                                         ": ", status.error_message()));
  // Rank 0 is this leader: a member that could not receive from it names no node at risk.
  const std::optional<int> unreachable = UnreachableNodeOf(status, rank());
  return unreachable.has_value() && *unreachable != 0
             ? WithUnreachableNode(std::move(failed), *unreachable)
             : failed;
}

absl::StatusOr<uint64_t> RemoteNode::Call(const wire::DeviceWork& work) {
  if (absl::Status usable = Usable(); !usable.ok()) return usable;
  wire::DeviceWorkResult result;
  // An allocation left behind by a caller that stopped waiting would leak its handle on the
  // member, and a copy's half abandoned on one node would leave the other's waiting for it: those
  // run to their own bounds (the transfer timeout). Other work only stops being waited for.
  const bool bounded = work.work_case() != wire::DeviceWork::kAllocate &&
                       work.work_case() != wire::DeviceWork::kSendBox &&
                       work.work_case() != wire::DeviceWork::kReceiveBox;
  if (bounded) {
    RETURN_IF_ERROR(BoundedCall("device work", kExecuteDeadline,
                                &internal::v1::ClusterService::Stub::AsyncExecute, work, &result));
    return result.allocated();
  }
  grpc::ClientContext context;
  SetDeadline(context, kExecuteDeadline);
  InFlight in_flight(*this, context);
  if (grpc::Status s = stub_->Execute(&context, work, &result); !s.ok()) {
    return FromGrpc(s, "device work");
  }
  return result.allocated();
}

absl::StatusOr<BufferPtr> RemoteNode::Allocate(int local_device, int64_t bytes) {
  wire::DeviceWork work;
  work.mutable_allocate()->set_device(local_device);
  work.mutable_allocate()->set_bytes(bytes);
  absl::StatusOr<uint64_t> handle = Call(work);
  {
    absl::MutexLock lock(&mu_);
    refreshed_ = absl::InfinitePast();  // the figures changed
  }
  if (!handle.ok()) return handle.status();
  return std::make_shared<RemoteBuffer>(shared_from_this(), *handle, first_device() + local_device,
                                        bytes);
}

absl::Status RemoteNode::Execute(const wire::DeviceWork& work) { return Call(work).status(); }

absl::Status RemoteNode::Write(uint64_t handle, int64_t offset, const void* src, int64_t bytes) {
  if (absl::Status usable = Usable(); !usable.ok()) return usable;
  const char* from = static_cast<const char*>(src);
  for (int64_t done = 0; done < bytes;) {
    const int64_t piece = std::min(kTransferPieceBytes, bytes - done);
    wire::WriteRequest request;
    request.set_buffer(handle);
    request.set_offset(offset + done);
    request.set_data(from + done, static_cast<size_t>(piece));
    wire::WriteResponse response;
    RETURN_IF_ERROR(BoundedCall("write", kExecuteDeadline,
                                &internal::v1::ClusterService::Stub::AsyncWrite, request,
                                &response));
    done += piece;
  }
  return absl::OkStatus();
}

absl::Status RemoteNode::Read(uint64_t handle, int64_t offset, int64_t bytes, void* dst) {
  if (absl::Status usable = Usable(); !usable.ok()) return usable;
  char* to = static_cast<char*>(dst);
  for (int64_t done = 0; done < bytes;) {
    const int64_t piece = std::min(kTransferPieceBytes, bytes - done);
    wire::ReadRequest request;
    request.set_buffer(handle);
    request.set_offset(offset + done);
    request.set_bytes(piece);
    wire::ReadResponse response;
    RETURN_IF_ERROR(BoundedCall(
        "read", kWaitDeadline, &internal::v1::ClusterService::Stub::AsyncRead, request, &response));
    if (static_cast<int64_t>(response.data().size()) != piece) {
      return absl::InternalError(absl::StrCat("cluster node ", rank(), " returned ",
                                              response.data().size(), " bytes for ", piece));
    }
    std::memcpy(to + done, response.data().data(), static_cast<size_t>(piece));
    done += piece;
  }
  return absl::OkStatus();
}

absl::Status RemoteNode::Synchronize() {
  if (absl::Status usable = Usable(); !usable.ok()) return usable;
  wire::SynchronizeRequest request;
  wire::SynchronizeResponse response;
  return BoundedCall("synchronize", kWaitDeadline,
                     &internal::v1::ClusterService::Stub::AsyncSynchronize, request, &response);
}

absl::Status RemoteNode::Heartbeat(absl::Duration timeout) {
  grpc::ClientContext context;
  SetDeadline(context, timeout);
  wire::HeartbeatRequest request;
  request.set_leader_incarnation(leader_incarnation_);
  wire::HeartbeatResponse response;
  if (grpc::Status s = stub_->Heartbeat(&context, request, &response); !s.ok()) {
    return FromGrpc(s, "heartbeat");
  }
  if (response.incarnation() != incarnation()) {
    return absl::UnavailableError(
        absl::StrCat("cluster node ", rank(), " (", address(), ") restarted since it joined"));
  }
  absl::MutexLock lock(&mu_);
  if (response.devices_size() == static_cast<int>(devices_.size())) {
    devices_.assign(response.devices().begin(), response.devices().end());
  }
  data_plane_epoch_ = response.epoch();
  return absl::OkStatus();
}

absl::Status RemoteNode::Connect(int64_t epoch, absl::Duration timeout) {
  grpc::ClientContext context;
  SetDeadline(context, timeout);
  wire::ConnectRequest request;
  request.set_epoch(epoch);
  wire::ConnectResponse response;
  if (grpc::Status s = stub_->Connect(&context, request, &response); !s.ok()) {
    return FromGrpc(s, "data plane connection");
  }
  absl::MutexLock lock(&mu_);
  data_plane_epoch_ = epoch;
  return absl::OkStatus();
}

int64_t RemoteNode::data_plane_epoch() const {
  absl::MutexLock lock(&mu_);
  return data_plane_epoch_;
}

DeviceMemory RemoteNode::memory(int local_device) {
  // Allocations and frees reset the clock, so a reader after its own call always refreshes; this
  // only spares the devices of one node a refresh each within one GetServerInfo.
  constexpr absl::Duration kFreshMemory = absl::Milliseconds(20);
  std::vector<uint64_t> frees;
  bool refresh = false;
  {
    absl::MutexLock lock(&mu_);
    refresh = lost_.empty() && absl::Now() - refreshed_ > kFreshMemory;
    if (refresh) frees.swap(frees_);
  }
  if (refresh) {
    SendFreeBatch(std::move(frees));
    if (Heartbeat(absl::Seconds(2)).ok()) {
      absl::MutexLock lock(&mu_);
      refreshed_ = absl::Now();
    }
  }
  absl::MutexLock lock(&mu_);
  DeviceMemory m;
  if (local_device < 0 || local_device >= static_cast<int>(devices_.size())) return m;
  const wire::DeviceDescription& d = devices_[local_device];
  m.name = d.name();
  m.used_bytes = d.memory_used_bytes();
  m.limit_bytes = d.memory_limit_bytes();
  m.total_bytes = d.memory_total_bytes();
  m.allocation_failures = d.allocation_failures();
  return m;
}

std::string RemoteNode::device_uuid(int local_device) const {
  absl::MutexLock lock(&mu_);
  if (local_device < 0 || local_device >= static_cast<int>(devices_.size())) return "";
  return devices_[local_device].uuid();
}

absl::Status RemoteNode::DeviceStatus(int local_device) const {
  if (absl::Status usable = Usable(); !usable.ok()) return usable;
  absl::MutexLock lock(&mu_);
  if (local_device >= 0 && local_device < static_cast<int>(devices_.size()) &&
      !devices_[local_device].status().empty()) {
    return absl::UnavailableError(
        absl::StrCat("cluster node ", rank(), ": ", devices_[local_device].status()));
  }
  return absl::OkStatus();
}

void RemoteNode::Free(uint64_t handle) {
  absl::MutexLock lock(&mu_);
  frees_.push_back(handle);
  refreshed_ = absl::InfinitePast();
}

void RemoteNode::SendFrees() {
  // Frees are batched: a reshard drops hundreds of buffers at once. Their order against the work
  // that used them does not matter: that work was enqueued on the member before the last
  // reference dropped here, and the member's backend holds its own references until it is done.
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !frees_.empty(); };
  for (;;) {
    std::vector<uint64_t> batch;
    bool stopping = false;
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(50));
      batch.swap(frees_);
      stopping = stopping_;
      if (!lost_.empty()) batch.clear();  // nothing left there to free
    }
    SendFreeBatch(std::move(batch));
    if (stopping) return;
  }
}

void RemoteNode::SendFreeBatch(std::vector<uint64_t> batch) {
  // One batch at a time: memory()'s refresh, even with nothing of its own to send, waits here for
  // a batch the frees thread took and is sending, so its heartbeat reads the member's figures
  // after those frees.
  absl::MutexLock sending(&send_mu_);
  if (batch.empty()) return;
  wire::FreeRequest request;
  request.mutable_buffers()->Add(batch.begin(), batch.end());
  wire::FreeResponse response;
  grpc::ClientContext context;
  SetDeadline(context, absl::Seconds(10));
  if (grpc::Status s = stub_->Free(&context, request, &response); !s.ok()) {
    spdlog::warn("cluster node {}: freeing {} buffers failed: {}", rank(), batch.size(),
                 s.error_message());
  }
}

}  // namespace distarray::cluster
