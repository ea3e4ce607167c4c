#include "server/engine/sessions.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

namespace distarray {
namespace {

TEST(SessionTableTest, ExpiresSessionsPastTheirLease) {
  SessionTable table(absl::Seconds(10));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  ASSERT_TRUE(table.Touch("a", t0).ok());
  ASSERT_TRUE(table.Touch("b", t0 + absl::Seconds(5)).ok());
  EXPECT_EQ(table.Live(t0 + absl::Seconds(9)), 2);
  EXPECT_EQ(table.TakeExpired(t0 + absl::Seconds(11)), std::vector<std::string>{"a"});
  EXPECT_EQ(table.Live(t0 + absl::Seconds(11)), 1);
  EXPECT_TRUE(table.TakeExpired(t0 + absl::Seconds(11)).empty());
}

// A client minting a new id per call cannot grow the table without bound: new sessions are
// refused while the table is full, known ones still renew, and room returns as leases expire.
TEST(SessionTableTest, NewSessionsAreRefusedWhileTheTableIsFull) {
  SessionTable table(absl::Seconds(10));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (size_t i = 0; i < SessionTable::kMaxSessions; ++i) {
    ASSERT_TRUE(table.Touch(absl::StrCat("s", i), t0).ok());
  }
  const absl::Status refused = table.Touch("one-more", t0);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.message(),
            "distarray-session: 65536 sessions are live, the most the daemon holds; retry once "
            "some expire");
  EXPECT_TRUE(table.Touch("s7", t0 + absl::Seconds(1)).ok());
  EXPECT_EQ(table.TakeExpired(t0 + absl::Seconds(10) + absl::Milliseconds(500)).size(),
            SessionTable::kMaxSessions - 1);
  EXPECT_TRUE(table.Touch("one-more", t0 + absl::Seconds(11)).ok());
}

}  // namespace
}  // namespace distarray
