// The daemon's table of shared-memory segments, without a daemon: a segment is found only by the
// tenant and session that made it, every other name gets the same NOT_FOUND, the per-tenant
// bounds hold, and a session's end removes its segments.
#include "server/service/shared_memory_table.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace distarray {
namespace {

CallContext Call(const std::string& tenant, const std::string& session) {
  CallContext call;
  call.tenant = tenant;
  call.session = session;
  return call;
}

bool Exists(const std::string& name) {
  struct stat st;
  return stat(("/dev/shm" + name).c_str(), &st) == 0;
}

TEST(SharedMemoryTable, OnlyTheTenantAndSessionThatMadeASegmentFindIt) {
  SharedMemoryTable table({});
  const CallContext alice = Call("alice", "s1");
  auto made = table.Create(alice, 4096);
  ASSERT_TRUE(made.ok()) << made.status();
  const std::string name = (*made)->name();
  auto found = table.Find(alice, name, "source.name");
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->get(), made->get());

  // Another tenant under the same session id, another session of the same tenant, no session,
  // and names that are not segments: one answer, the same words, no size.
  const absl::Status missing =
      table.Find(alice, "/distarray-shm-00000000000000000000000000000000", "source.name").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  for (const CallContext& other :
       {Call("bob", "s1"), Call("alice", "s2"), Call("alice", ""), Call("default", "s1")}) {
    const absl::Status status = table.Find(other, name, "source.name").status();
    EXPECT_EQ(status, missing) << other.tenant << "/" << other.session;
    EXPECT_EQ(table.Release(other, name, "source.name"), missing);
  }
  EXPECT_EQ(missing.message().find("4096"), std::string::npos) << missing;
  EXPECT_NE(missing.message().find("source.name"), std::string::npos) << missing;
  // A file of the daemon's user that the table did not make: the same.
  EXPECT_EQ(table.Find(alice, "/sem.distarray-test", "source.name").status(), missing);
  // A malformed name is the request's own mistake.
  EXPECT_EQ(table.Find(alice, "../etc", "source.name").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Exists(name));

  ASSERT_TRUE(table.Release(alice, name, "source.name").ok());
  EXPECT_FALSE(Exists(name));
  EXPECT_EQ(table.Find(alice, name, "source.name").status(), missing);
  EXPECT_EQ(table.Release(alice, name, "source.name"), missing);
  // The transfer that still held it keeps its mapping.
  std::memset((*made)->data(), 1, 4096);
}

TEST(SharedMemoryTable, SegmentsNeedASessionAndANonNegativeSize) {
  SharedMemoryTable table({});
  const absl::Status no_session = table.Create(Call("alice", ""), 16).status();
  EXPECT_EQ(no_session.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(no_session.message().find("distarray-session"), std::string::npos) << no_session;
  const absl::Status negative = table.Create(Call("alice", "s"), -5).status();
  EXPECT_EQ(negative.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(negative.message().find("bytes"), std::string::npos) << negative;
  EXPECT_EQ(table.size(), 0);
}

TEST(SharedMemoryTable, PerTenantCountAndBytesBounds) {
  SharedMemoryTable table({.max_segments_per_tenant = 2, .max_bytes_per_tenant = 10000});
  const CallContext alice = Call("alice", "s");
  const absl::Status too_big = table.Create(alice, 10001).status();
  EXPECT_EQ(too_big.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(too_big.message().find("--shared_memory_max_bytes"), std::string::npos) << too_big;
  auto first = table.Create(alice, 6000);
  ASSERT_TRUE(first.ok()) << first.status();
  const absl::Status over_bytes = table.Create(alice, 5000).status();
  EXPECT_EQ(over_bytes.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(over_bytes.message().find("--shared_memory_max_bytes"), std::string::npos);
  ASSERT_TRUE(table.Create(alice, 4000).ok());
  const absl::Status over_count = table.Create(alice, 0).status();
  EXPECT_EQ(over_count.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(over_count.message().find("--shared_memory_max_segments"), std::string::npos);
  EXPECT_EQ(table.UsageOf("alice").segments, 2);
  EXPECT_EQ(table.UsageOf("alice").bytes, 10000);
  // Another tenant has bounds of its own.
  ASSERT_TRUE(table.Create(Call("bob", "s"), 10000).ok());
  // Releasing gives the room back.
  ASSERT_TRUE(table.Release(alice, (*first)->name(), "name").ok());
  EXPECT_EQ(table.UsageOf("alice").bytes, 4000);
  EXPECT_TRUE(table.Create(alice, 6000).ok());
}

TEST(SharedMemoryTable, ASessionsEndRemovesItsSegmentsOnly) {
  SharedMemoryTable table({});
  const CallContext mine = Call("alice", "s1");
  auto a = table.Create(mine, 100);
  auto b = table.Create(mine, 200);
  auto other = table.Create(Call("alice", "s2"), 300);
  ASSERT_TRUE(a.ok() && b.ok() && other.ok());
  EXPECT_EQ(table.ReleaseSession(mine.session_key()), 2);
  EXPECT_FALSE(Exists((*a)->name()));
  EXPECT_FALSE(Exists((*b)->name()));
  EXPECT_TRUE(Exists((*other)->name()));
  EXPECT_EQ(table.Find(mine, (*a)->name(), "name").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(table.UsageOf("alice").segments, 1);
  EXPECT_EQ(table.UsageOf("alice").bytes, 300);
}

TEST(SharedMemoryTable, ReleaseAllRemovesEveryNameAndTheUsage) {
  SharedMemoryTable table({});
  auto a = table.Create(Call("alice", "s"), 64);
  auto b = table.Create(Call("bob", "s"), 64);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(table.ReleaseAll(), 2);
  EXPECT_FALSE(Exists((*a)->name()));
  EXPECT_FALSE(Exists((*b)->name()));
  EXPECT_EQ(table.size(), 0);
  EXPECT_EQ(table.UsageOf("alice").segments, 0);
}

TEST(SharedMemoryTable, TheTableRemovesEveryNameWhenItGoes) {
  std::string name;
  {
    SharedMemoryTable table({});
    auto made = table.Create(Call("alice", "s"), 64);
    ASSERT_TRUE(made.ok());
    name = (*made)->name();
    EXPECT_TRUE(Exists(name));
  }
  EXPECT_FALSE(Exists(name));
}

}  // namespace
}  // namespace distarray
