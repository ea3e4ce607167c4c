// Which node an UNAVAILABLE between the daemons of a cluster is about
// (server/cluster/answer_details.h, server/backend/unreachable_node.h): a transport failure is
// the member itself, a member's answer names the node it could not reach or none, and the rank
// survives the trip through the wire.
#include "server/cluster/answer_details.h"

#include <gtest/gtest.h>

#include <optional>

#include "server/backend/unreachable_node.h"

namespace distarray::cluster {
namespace {

TEST(AnswerDetailsTest, TheRankIsAPayloadThatRoundTrips) {
  const absl::Status plain = absl::UnavailableError("x");
  EXPECT_EQ(UnreachableNode(plain), std::nullopt);
  const absl::Status tagged = WithUnreachableNode(plain, 3);
  EXPECT_EQ(UnreachableNode(tagged), 3);
  EXPECT_EQ(tagged.message(), "x");
  EXPECT_EQ(tagged.code(), absl::StatusCode::kUnavailable);
}

TEST(AnswerDetailsTest, ATransportFailureIsTheMemberItself) {
  const grpc::Status refused(grpc::StatusCode::UNAVAILABLE, "failed to connect to all addresses");
  EXPECT_EQ(UnreachableNodeOf(refused, 1), 1);
  EXPECT_EQ(UnreachableNodeOf(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "late"), 1),
            std::nullopt);
}

TEST(AnswerDetailsTest, AMembersAnswerNamesTheNodeItCouldNotReachOrNone) {
  // A member that could not receive from node 2 passes node 2 on, not itself.
  const grpc::Status about_two =
      AnswerToGrpc(WithUnreachableNode(absl::UnavailableError("receive from node 2"), 2));
  EXPECT_EQ(about_two.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(about_two.error_message(), "receive from node 2");
  EXPECT_EQ(UnreachableNodeOf(about_two, 1), 2);
  // Its own UNAVAILABLE without a node (its data plane reconnecting) names no node.
  EXPECT_EQ(UnreachableNodeOf(AnswerToGrpc(absl::UnavailableError("not connected")), 1),
            std::nullopt);
  // Other codes never do, and success stays plain.
  EXPECT_EQ(UnreachableNodeOf(AnswerToGrpc(absl::ResourceExhaustedError("full")), 1), std::nullopt);
  EXPECT_TRUE(AnswerToGrpc(absl::OkStatus()).ok());
  EXPECT_EQ(UnreachableNodeOf(grpc::Status(grpc::StatusCode::UNAVAILABLE, "x", "garbage"), 1),
            std::nullopt);
}

}  // namespace
}  // namespace distarray::cluster
