#include "server/engine/sessions.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace distarray {
namespace {

TEST(SessionTableTest, ExpiresSessionsPastTheirLease) {
  SessionTable table(absl::Seconds(10));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  ASSERT_TRUE(table.Touch("t", "t/a", t0).ok());
  ASSERT_TRUE(table.Touch("t", "t/b", t0 + absl::Seconds(5)).ok());
  EXPECT_EQ(table.Live(t0 + absl::Seconds(9)), 2);
  EXPECT_EQ(table.TakeExpired(t0 + absl::Seconds(11)), std::vector<std::string>{"t/a"});
  EXPECT_EQ(table.Live(t0 + absl::Seconds(11)), 1);
  EXPECT_TRUE(table.TakeExpired(t0 + absl::Seconds(11)).empty());
}

// A client minting a new id per call cannot grow the table without bound: new sessions are
// refused while the table is full, known ones still renew, and room returns as leases expire.
// Each tenant here stays under its own bound, so the daemon's bound is the one that refuses.
TEST(SessionTableTest, NewSessionsAreRefusedWhileTheTableIsFull) {
  SessionTable table(absl::Seconds(10), SessionLimits{65536, 1024});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int64_t i = 0; i < 65536; ++i) {
    const std::string tenant = absl::StrCat("t", i / 1024);
    ASSERT_TRUE(table.Touch(tenant, absl::StrCat(tenant, "/s", i), t0).ok()) << i;
  }
  const absl::Status refused = table.Touch("u", "u/one-more", t0);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.message(),
            "distarray-session: 65536 sessions are live, the most the daemon holds; retry once "
            "some expire");
  EXPECT_TRUE(table.Touch("t0", "t0/s7", t0 + absl::Seconds(1)).ok());
  EXPECT_EQ(table.TakeExpired(t0 + absl::Seconds(10) + absl::Milliseconds(500)).size(), 65535u);
  EXPECT_TRUE(table.Touch("u", "u/one-more", t0 + absl::Seconds(11)).ok());
}

// One tenant filling its own bound does not stop another tenant's new sessions; its known
// sessions still renew, and its room returns as its sessions expire.
TEST(SessionTableTest, OneTenantAtItsBoundLeavesRoomForOthers) {
  SessionTable table(absl::Seconds(10), SessionLimits{100, 3});
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(table.Touch("alice", absl::StrCat("alice/", i), t0).ok());
  }
  const absl::Status refused = table.Touch("alice", "alice/3", t0);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.message(),
            "distarray-session: tenant 'alice' has 3 live sessions, the most "
            "--max_sessions_per_tenant allows; reuse a session or retry once some expire");
  EXPECT_TRUE(table.Touch("alice", "alice/1", t0 + absl::Seconds(1)).ok());  // a renewal
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(table.Touch("bob", absl::StrCat("bob/", i), t0).ok()) << i;
  }
  EXPECT_EQ(table.Touch("bob", "bob/3", t0).code(), absl::StatusCode::kResourceExhausted);
  // alice/0 and alice/2 expire; alice/1 was renewed.
  EXPECT_EQ(table.TakeExpired(t0 + absl::Seconds(10) + absl::Milliseconds(500)).size(), 5u);
  EXPECT_TRUE(table.Touch("alice", "alice/3", t0 + absl::Seconds(11)).ok());
  EXPECT_TRUE(table.Touch("alice", "alice/4", t0 + absl::Seconds(11)).ok());
  EXPECT_EQ(table.Touch("alice", "alice/5", t0 + absl::Seconds(11)).code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace distarray
