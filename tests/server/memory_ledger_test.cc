#include "server/backend/memory_ledger.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace distarray {
namespace {

TEST(MemoryLedgerTest, EachAllocationCountsItsBookkeeping) {
  MemoryLedger ledger(0, 1 << 20);
  ASSERT_TRUE(ledger.Reserve(100).ok());
  EXPECT_EQ(ledger.used(), 100 + kAllocationOverheadBytes);
  ledger.Release(100);
  EXPECT_EQ(ledger.used(), 0);
}

// A million one-byte chunks would hold hundreds of MiB of daemon memory: the limit refuses them
// long before, although their data is only a megabyte.
TEST(MemoryLedgerTest, ManyTinyAllocationsReachTheLimit) {
  constexpr int64_t kLimit = 64 << 20;
  MemoryLedger ledger(3, kLimit);
  int64_t granted = 0;
  absl::Status status;
  while ((status = ledger.Reserve(1)).ok()) ++granted;
  EXPECT_EQ(granted, kLimit / (1 + kAllocationOverheadBytes));
  EXPECT_LT(granted, 1'000'000);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(status.message().find("device 3: allocating 1 bytes would exceed the memory limit of "
                                  "67108864 bytes"),
            std::string::npos)
      << status;
  for (int64_t i = 0; i < granted; ++i) ledger.Release(1);
  EXPECT_EQ(ledger.used(), 0);
}

TEST(MemoryLedgerTest, HugeRequestsDoNotWrap) {
  MemoryLedger ledger(0, std::numeric_limits<int64_t>::max() / 2);
  ASSERT_TRUE(ledger.Reserve(1 << 20).ok());
  EXPECT_EQ(ledger.Reserve(std::numeric_limits<int64_t>::max()).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ledger.Reserve(std::numeric_limits<int64_t>::max() - 100).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ledger.Reserve(-1).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ledger.used(), (1 << 20) + kAllocationOverheadBytes);
}

TEST(MemoryLedgerTest, AnAllocationFillingTheLimitExactlyFits) {
  MemoryLedger ledger(0, 4096);
  ASSERT_TRUE(ledger.Reserve(4096 - kAllocationOverheadBytes).ok());
  EXPECT_EQ(ledger.Reserve(0).code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace distarray
