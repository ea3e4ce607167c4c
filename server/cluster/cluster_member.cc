#include "server/cluster/cluster_member.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "server/cluster/cluster_credentials.h"
#include "server/cluster/cluster_leader.h"
#include "server/cluster/rendezvous_store.h"

namespace distarray::cluster {

ClusterMember::ClusterMember(const ClusterOptions& options, Backend& backend, std::string version)
    : options_(options),
      backend_(backend),
      version_(std::move(version)),
      incarnation_(NewIncarnation()),
      data_plane_(DataPlane::Options{.rank = options.rank,
                                     .size = options.size,
                                     .address = options.address,
                                     .timeout = options.transfer_timeout}),
      work_(backend, data_plane_),
      leader_(internal::v1::ClusterService::NewStub(ClusterChannel(options.leader, options))),
      last_heartbeat_(absl::Now()) {}

absl::Status ClusterMember::Join(const std::string& advertised_address) {
  wire::JoinRequest request;
  request.set_protocol(internal::v1::PROTOCOL_VERSION_CURRENT);
  request.set_version(version_);
  request.set_backend(std::string(backend_.name()));
  request.set_rank(options_.rank);
  request.set_cluster_size(options_.size);
  request.set_member_address(advertised_address);
  request.set_incarnation(incarnation_);
  for (wire::DeviceDescription& d : DescribeDevices(backend_)) *request.add_devices() = d;

  const absl::Time deadline = absl::Now() + options_.form_timeout;
  absl::Duration backoff = absl::Milliseconds(100);
  for (int attempt = 1;; ++attempt) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    wire::JoinResponse response;
    const grpc::Status s = leader_->Join(&context, request, &response);
    if (s.ok()) {
      spdlog::info("cluster: joined the leader at {} as rank {} of {}", options_.leader,
                   options_.rank, options_.size);
      absl::MutexLock lock(&mu_);
      last_heartbeat_ = absl::Now();
      return absl::OkStatus();
    }
    const auto code = static_cast<absl::StatusCode>(s.error_code());
    if (code != absl::StatusCode::kUnavailable && code != absl::StatusCode::kDeadlineExceeded) {
      return absl::Status(code, absl::StrCat("the leader at ", options_.leader,
                                             " refused this daemon: ", s.error_message()));
    }
    if (absl::Now() + backoff > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "cannot reach the cluster leader at ", options_.leader, " (--cluster_leader) within ",
          absl::FormatDuration(options_.form_timeout), ": ", s.error_message()));
    }
    spdlog::warn("cluster: cannot reach the leader at {} (attempt {}: {}); retrying in {}",
                 options_.leader, attempt, s.error_message(), absl::FormatDuration(backoff));
    std::this_thread::sleep_for(std::chrono::milliseconds(absl::ToInt64Milliseconds(backoff)));
    backoff = std::min(backoff * 2, absl::Seconds(5));
  }
}

absl::Status ClusterMember::Connect(int64_t epoch) {
  GrpcStore store(leader_);
  return data_plane_.Connect(store, epoch);
}

wire::HeartbeatResponse ClusterMember::Heartbeat(const wire::HeartbeatRequest& request) {
  {
    absl::MutexLock lock(&mu_);
    last_heartbeat_ = absl::Now();
    if (leader_incarnation_ == 0) leader_incarnation_ = request.leader_incarnation();
    if (request.leader_incarnation() != leader_incarnation_ && leader_changed_.empty()) {
      leader_changed_ = "the leader restarted (another process now holds its address)";
    }
  }
  wire::HeartbeatResponse response;
  response.set_incarnation(incarnation_);
  for (wire::DeviceDescription& d : DescribeDevices(backend_)) *response.add_devices() = d;
  response.set_epoch(data_plane_.epoch());
  return response;
}

absl::Status ClusterMember::WatchLeader(const std::function<bool()>& stop) {
  while (!stop()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    absl::MutexLock lock(&mu_);
    if (!leader_changed_.empty()) return absl::UnavailableError(leader_changed_);
    // The leader's heartbeats start once the cluster has formed; until then it may wait for
    // other members as long as the formation timeout.
    const absl::Duration limit = connected() ? options_.lost_after : options_.form_timeout;
    if (absl::Now() - last_heartbeat_ > limit) {
      return absl::UnavailableError(absl::StrCat(
          "the cluster leader at ", options_.leader, " sent no heartbeat for ",
          absl::FormatDuration(absl::Now() - last_heartbeat_), "; its clients' arrays are gone"));
    }
  }
  return absl::OkStatus();
}

}  // namespace distarray::cluster
