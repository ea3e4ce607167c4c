#include "server/cluster/cluster_leader.h"

#include <random>
#include <utility>

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/cluster/cluster_credentials.h"

namespace distarray::cluster {

std::vector<wire::DeviceDescription> DescribeDevices(const Backend& backend) {
  std::vector<wire::DeviceDescription> devices(backend.device_count());
  for (int d = 0; d < backend.device_count(); ++d) {
    const DeviceMemory m = backend.memory(d);
    devices[d].set_name(m.name);
    devices[d].set_uuid(backend.device_uuid(d));
    devices[d].set_memory_used_bytes(m.used_bytes);
    devices[d].set_memory_limit_bytes(m.limit_bytes);
    devices[d].set_memory_total_bytes(m.total_bytes);
    devices[d].set_allocation_failures(m.allocation_failures);
    if (absl::Status s = backend.DeviceStatus(d); !s.ok()) {
      devices[d].set_status(std::string(s.message()));
    }
  }
  return devices;
}

uint64_t NewIncarnation() {
  std::random_device entropy;
  uint64_t value = 0;
  while (value == 0) value = (uint64_t{entropy()} << 32) ^ entropy();
  return value;
}

ClusterLeader::ClusterLeader(const ClusterOptions& options, std::string backend, int local_devices,
                             std::string version)
    : options_(options),
      backend_(std::move(backend)),
      local_devices_(local_devices),
      version_(std::move(version)),
      incarnation_(NewIncarnation()),
      data_plane_(DataPlane::Options{.rank = 0,
                                     .size = options.size,
                                     .address = options.address,
                                     .timeout = options.transfer_timeout}) {
  nodes_.resize(options.size);
}

ClusterLeader::~ClusterLeader() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (heartbeats_.joinable()) heartbeats_.join();
}

std::vector<int> ClusterLeader::MissingRanks() const {
  std::vector<int> missing;
  for (int r = 1; r < options_.size; ++r) {
    if (nodes_[r] == nullptr || !nodes_[r]->Usable().ok()) missing.push_back(r);
  }
  return missing;
}

absl::StatusOr<wire::JoinResponse> ClusterLeader::Join(const wire::JoinRequest& request) {
  const std::string who =
      absl::StrCat("rank ", request.rank(), " (", request.member_address(), ")");
  if (request.protocol() != internal::v1::PROTOCOL_VERSION_CURRENT) {
    return absl::FailedPreconditionError(absl::StrCat(who, " speaks cluster protocol ",
                                                      request.protocol(), ", the leader ",
                                                      internal::v1::PROTOCOL_VERSION_CURRENT));
  }
  if (request.version() != version_) {
    return absl::FailedPreconditionError(absl::StrCat(who, " runs distarrayd ", request.version(),
                                                      ", the leader ", version_,
                                                      "; every node must run the same release"));
  }
  if (request.backend() != backend_) {
    return absl::FailedPreconditionError(
        absl::StrCat(who, " runs the ", request.backend(), " backend, the leader ", backend_));
  }
  if (request.cluster_size() != options_.size) {
    return absl::InvalidArgumentError(absl::StrCat(
        who, " has --cluster_size=", request.cluster_size(), ", the leader ", options_.size));
  }
  if (request.rank() < 1 || request.rank() >= options_.size) {
    return absl::InvalidArgumentError(
        absl::StrCat(who, ": --cluster_rank must be in [1, ", options_.size - 1, "] for a member"));
  }
  // A backend has at most 64 devices (the host backend's bound; a GPU node has 8): the device
  // table a join adds to is bounded like every other request.
  constexpr int kMaxNodeDevices = 64;
  if (request.devices_size() == 0 || request.devices_size() > kMaxNodeDevices) {
    return absl::InvalidArgumentError(absl::StrCat(who, " announces ", request.devices_size(),
                                                   " devices; a node has 1 to ", kMaxNodeDevices));
  }
  std::shared_ptr<RemoteNode> previous;
  {
    absl::MutexLock lock(&mu_);
    previous = nodes_[request.rank()];
  }
  if (previous != nullptr) {
    if (previous->incarnation() == request.incarnation()) {
      absl::MutexLock lock(&mu_);  // the same process again (a retried Join)
      wire::JoinResponse response;
      response.set_formed(formed_);
      response.set_epoch(epoch_);
      return response;
    }
    if (previous->Usable().ok() && previous->Heartbeat(absl::Seconds(2)).ok()) {
      return absl::AlreadyExistsError(absl::StrCat(
          who, ": rank ", request.rank(), " is held by the live daemon at ", previous->address(),
          "; every daemon of a cluster needs its own --cluster_rank"));
    }
    if (previous->device_count() != request.devices_size()) {
      return absl::FailedPreconditionError(
          absl::StrCat(who, " rejoins with ", request.devices_size(), " devices; it had ",
                       previous->device_count(), ", and the cluster's device numbering is fixed"));
    }
    previous->MarkLost("restarted");
  }
  absl::MutexLock lock(&mu_);
  int first_device = 0;
  if (previous != nullptr) {
    first_device = previous->first_device();
  }
  RemoteNode::Description description{
      .rank = request.rank(),
      .first_device = first_device,  // assigned at formation for a first join
      .address = request.member_address(),
      .incarnation = request.incarnation(),
      .devices = {request.devices().begin(), request.devices().end()}};
  std::shared_ptr<grpc::Channel> channel = ClusterChannel(description.address, options_);
  nodes_[request.rank()] =
      std::make_shared<RemoteNode>(std::move(description), incarnation_, std::move(channel));
  spdlog::info("cluster: {} {} with {} devices", who, previous ? "rejoined" : "joined",
               request.devices_size());
  wire::JoinResponse response;
  response.set_formed(formed_);
  response.set_epoch(epoch_);
  for (int r : MissingRanks()) response.add_missing(r);
  return response;
}

absl::Status ClusterLeader::Form() {
  const absl::Time deadline = absl::Now() + options_.form_timeout;
  {
    absl::MutexLock lock(&mu_);
    auto all_joined = [this]()
                          ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return MissingRanks().empty(); };
    while (!mu_.AwaitWithDeadline(absl::Condition(&all_joined),
                                  std::min(deadline, absl::Now() + absl::Seconds(5)))) {
      const std::string missing = absl::StrJoin(MissingRanks(), ", ");
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError(
            absl::StrCat("the cluster did not form: rank(s) ", missing, " did not join within ",
                         absl::FormatDuration(options_.form_timeout)));
      }
      spdlog::info("cluster: waiting for rank(s) {} to join (leader listening for them)", missing);
    }
    // Device numbering is node-major and fixed from here on.
    first_devices_.assign(options_.size, 0);
    total_devices_ = local_devices_;
    for (int r = 1; r < options_.size; ++r) {
      first_devices_[r] = total_devices_;
      RemoteNode::Description description = nodes_[r]->description();
      description.first_device = total_devices_;
      total_devices_ += nodes_[r]->device_count();
      std::shared_ptr<grpc::Channel> channel = ClusterChannel(description.address, options_);
      nodes_[r] =
          std::make_shared<RemoteNode>(std::move(description), incarnation_, std::move(channel));
    }
  }
  if (absl::Status connected = ConnectDataPlane(1); !connected.ok()) return connected;
  {
    absl::MutexLock lock(&mu_);
    formed_ = true;
  }
  spdlog::info("cluster formed: {} nodes, {} devices", options_.size, total_devices_);
  heartbeats_ = std::thread([this] { Heartbeats(); });
  return absl::OkStatus();
}

absl::Status ClusterLeader::ConnectDataPlane(int64_t epoch) {
  std::vector<std::shared_ptr<RemoteNode>> nodes;
  {
    absl::MutexLock lock(&mu_);
    nodes = nodes_;
  }
  // Every rank's rendezvous must run at once: each waits for the others' keys, which earlier
  // epochs' (and strays') must not crowd out of the bounded store.
  store_.KeepOnlyEpoch(epoch);
  std::vector<absl::Status> results(nodes.size());
  std::vector<std::thread> threads;
  const absl::Duration timeout = options_.transfer_timeout + absl::Seconds(5);
  for (size_t r = 1; r < nodes.size(); ++r) {
    threads.emplace_back([&, r] { results[r] = nodes[r]->Connect(epoch, timeout); });
  }
  results[0] = data_plane_.Connect(store_.store(), epoch);
  for (std::thread& t : threads) t.join();
  for (const absl::Status& s : results) {
    if (!s.ok()) return s;
  }
  absl::MutexLock lock(&mu_);
  epoch_ = epoch;
  return absl::OkStatus();
}

std::shared_ptr<RemoteNode> ClusterLeader::node(int rank) const {
  absl::MutexLock lock(&mu_);
  return rank > 0 && rank < static_cast<int>(nodes_.size()) ? nodes_[rank] : nullptr;
}

void ClusterLeader::Heartbeats() {
  std::vector<absl::Time> last_answer(options_.size, absl::Now());
  std::vector<uint64_t> seen_incarnation(options_.size, 0);
  auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
  for (;;) {
    std::vector<std::shared_ptr<RemoteNode>> nodes;
    int64_t epoch = 0;
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stop), options_.heartbeat)) return;
      nodes = nodes_;
      epoch = epoch_;
    }
    bool all_live = true;
    bool reconnect = data_plane_.epoch() != epoch;
    for (int r = 1; r < options_.size; ++r) {
      RemoteNode& node = *nodes[r];
      if (node.incarnation() != seen_incarnation[r]) {  // a rejoined member: a fresh clock
        seen_incarnation[r] = node.incarnation();
        last_answer[r] = absl::Now();
      }
      if (!node.Usable().ok()) {
        all_live = false;
        continue;
      }
      if (absl::Status s = node.Heartbeat(options_.heartbeat * 2); s.ok()) {
        last_answer[r] = absl::Now();
        if (node.data_plane_epoch() != epoch) reconnect = true;
      } else {
        // Not answering, lost or not yet: no reconnection this round. A rendezvous with a member
        // that does not come would hold this thread for the transfer timeout, and with it the
        // detection of the member's loss.
        all_live = false;
        if (absl::Now() - last_answer[r] > options_.lost_after) {
          node.MarkLost(absl::StrCat("no answer for ",
                                     absl::FormatDuration(absl::Now() - last_answer[r]), " (",
                                     s.message(), ")"));
        }
      }
    }
    if (all_live && reconnect) {
      spdlog::info("cluster: every member answers; connecting the data plane (epoch {})",
                   epoch + 1);
      if (absl::Status s = ConnectDataPlane(epoch + 1); !s.ok()) {
        spdlog::error("cluster: {}", std::string(s.message()));
      }
    }
  }
}

}  // namespace distarray::cluster
