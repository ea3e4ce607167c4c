// Which node an UNAVAILABLE between the daemons of a cluster is about, across the internal
// service. A member's handler always answers with details: "answered", or
// "unreachable_node=N" when its own failure was reaching node N (a receive from a third node
// that died). A status without details came from gRPC's transport: the member itself could not be
// reached. The leader attaches the rank it learns (server/backend/unreachable_node.h), so the
// engine names the caller's arrays on that node and no other.
#ifndef DISTARRAY_SERVER_CLUSTER_ANSWER_DETAILS_H_
#define DISTARRAY_SERVER_CLUSTER_ANSWER_DETAILS_H_

#include <optional>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/backend/unreachable_node.h"

namespace distarray::cluster {

inline constexpr absl::string_view kAnswered = "answered";
inline constexpr absl::string_view kUnreachableNodePrefix = "unreachable_node=";

// A member handler's status on the wire.
inline grpc::Status AnswerToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const std::optional<int> node = UnreachableNode(status);
  return grpc::Status(
      static_cast<grpc::StatusCode>(status.code()), std::string(status.message()),
      node.has_value() ? absl::StrCat(kUnreachableNodePrefix, *node) : std::string(kAnswered));
}

// The node an UNAVAILABLE answer from node `rank` is about: `rank` itself when the transport
// failed, the node its answer names, or none.
inline std::optional<int> UnreachableNodeOf(const grpc::Status& status, int rank) {
  if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return std::nullopt;
  const std::string& details = status.error_details();
  if (details.empty()) return rank;
  int node = 0;
  if (absl::StartsWith(details, kUnreachableNodePrefix) &&
      absl::SimpleAtoi(absl::string_view(details).substr(kUnreachableNodePrefix.size()), &node)) {
    return node;
  }
  return std::nullopt;
}

}  // namespace distarray::cluster

#endif  // DISTARRAY_SERVER_CLUSTER_ANSWER_DETAILS_H_
