// Which cluster node an UNAVAILABLE status is about, carried as a status payload. A member that
// died outright (its connections refused) fails calls at once, seconds before the heartbeats
// find it lost; the payload lets the engine name the caller's arrays with chunks on that node in
// the same error (Engine::NameLostArrays) without parsing messages.
#ifndef DISTARRAY_SERVER_BACKEND_UNREACHABLE_NODE_H_
#define DISTARRAY_SERVER_BACKEND_UNREACHABLE_NODE_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"

namespace distarray {

inline constexpr absl::string_view kUnreachableNodePayload = "type.distarray/unreachable_node";

// `status` with the rank of the node it could not reach.
inline absl::Status WithUnreachableNode(absl::Status status, int rank) {
  status.SetPayload(kUnreachableNodePayload, absl::Cord(std::to_string(rank)));
  return status;
}

// The rank WithUnreachableNode attached to `status`, if any.
inline std::optional<int> UnreachableNode(const absl::Status& status) {
  const auto payload = status.GetPayload(kUnreachableNodePayload);
  int rank = 0;
  if (!payload.has_value() || !absl::SimpleAtoi(std::string(*payload), &rank)) return std::nullopt;
  return rank;
}

}  // namespace distarray

#endif  // DISTARRAY_SERVER_BACKEND_UNREACHABLE_NODE_H_
