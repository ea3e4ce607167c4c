#include "server/service/call_slots.h"

#include <gtest/gtest.h>

#include <optional>
#include <vector>

namespace distarray {
namespace {

TEST(TenantCallSlotsTest, OneTenantAtItsBoundLeavesOthersTheirSlots) {
  TenantCallSlots slots(2);
  std::vector<TenantCallSlots::Slot> alice;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<TenantCallSlots::Slot> slot = slots.Acquire("alice");
    ASSERT_TRUE(slot.ok()) << slot.status();
    alice.push_back(*std::move(slot));
  }
  EXPECT_EQ(slots.InFlight("alice"), 2);
  const absl::StatusOr<TenantCallSlots::Slot> refused = slots.Acquire("alice");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.status().message(),
            "tenant 'alice' has 2 calls in flight, the most --max_concurrent_calls_per_tenant "
            "allows; retry once some finish");
  EXPECT_EQ(slots.InFlight("alice"), 2);  // a refusal holds nothing
  {
    absl::StatusOr<TenantCallSlots::Slot> bob = slots.Acquire("bob");
    ASSERT_TRUE(bob.ok());
    EXPECT_EQ(slots.InFlight("bob"), 1);
  }
  EXPECT_EQ(slots.InFlight("bob"), 0);  // returned when the slot went
  alice.pop_back();
  EXPECT_EQ(slots.InFlight("alice"), 1);
  EXPECT_TRUE(slots.Acquire("alice").ok());
}

TEST(TenantCallSlotsTest, MovedSlotsReturnOnce) {
  TenantCallSlots slots(1);
  std::optional<TenantCallSlots::Slot> moved;
  {
    absl::StatusOr<TenantCallSlots::Slot> slot = slots.Acquire("t");
    ASSERT_TRUE(slot.ok());
    moved.emplace(*std::move(slot));
  }
  EXPECT_EQ(slots.InFlight("t"), 1);
  TenantCallSlots::Slot assigned;
  assigned = std::move(*moved);
  moved.reset();
  EXPECT_EQ(slots.InFlight("t"), 1);
  assigned = TenantCallSlots::Slot();
  EXPECT_EQ(slots.InFlight("t"), 0);
}

TEST(TenantCallSlotsTest, NoBoundTakesNoCount) {
  TenantCallSlots slots(0);
  std::vector<TenantCallSlots::Slot> held;
  for (int i = 0; i < 1000; ++i) {
    absl::StatusOr<TenantCallSlots::Slot> slot = slots.Acquire("t");
    ASSERT_TRUE(slot.ok());
    held.push_back(*std::move(slot));
  }
  EXPECT_EQ(slots.InFlight("t"), 0);
}

}  // namespace
}  // namespace distarray
