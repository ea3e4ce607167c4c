// The leader's rendezvous store (server/cluster/rendezvous_store.h): bounded in keys and bytes
// against a peer that sets keys at will, and emptied of other epochs' keys when an epoch connects,
// through Gloo's own PrefixStore as the data plane scopes its keys.
#include "server/cluster/rendezvous_store.h"

#include <gloo/rendezvous/prefix_store.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace distarray::cluster {
namespace {

TEST(LeaderStoreTest, KeysAreWriteOnceAndWaitedFor) {
  LeaderStore store;
  ASSERT_TRUE(store.Set("epoch1/a", "x").ok());
  EXPECT_EQ(store.Set("epoch1/a", "y").code(), absl::StatusCode::kAlreadyExists);
  absl::StatusOr<std::string> got = store.Get("epoch1/a", absl::Milliseconds(10));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "x");
  EXPECT_EQ(store.Get("epoch1/missing", absl::Milliseconds(10)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(LeaderStoreTest, AFullStoreRefusesUntilTheNextEpochForgetsTheOthers) {
  LeaderStore store;
  for (int64_t i = 0; i < LeaderStore::kMaxKeys; ++i) {
    ASSERT_TRUE(store.Set(absl::StrCat("epoch999/stray", i), "v").ok()) << i;
  }
  const absl::Status full = store.Set("epoch2/rank0", "addresses");
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_NE(full.message().find("4096 keys"), std::string::npos) << full;
  // The leader's own rendezvous meets the same bound, as Gloo's error.
  gloo::rendezvous::PrefixStore scoped("epoch2", store.store());
  EXPECT_ANY_THROW(scoped.set("rank0", std::vector<char>{'a'}));

  store.KeepOnlyEpoch(2);
  EXPECT_EQ(store.keys(), 0);
  scoped.set("rank0", std::vector<char>{'a', 'b'});
  EXPECT_EQ(scoped.get("rank0"), (std::vector<char>{'a', 'b'}));
  // Keys of the epoch kept survive; others go, whatever their form.
  ASSERT_TRUE(store.Set("no-epoch", "v").ok());
  store.KeepOnlyEpoch(2);
  EXPECT_EQ(store.keys(), 1);
  absl::StatusOr<std::string> kept = store.Get("epoch2/rank0", absl::Milliseconds(10));
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(*kept, "ab");
  store.KeepOnlyEpoch(3);
  EXPECT_EQ(store.keys(), 0);
}

TEST(LeaderStoreTest, ItsBytesAreBoundedToo) {
  LeaderStore store;
  const std::string value(64 << 10, 'v');
  int64_t stored = 0;
  absl::Status status;
  while ((status = store.Set(absl::StrCat("epoch1/k", stored), value)).ok()) ++stored;
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  EXPECT_LT(stored * static_cast<int64_t>(value.size()), LeaderStore::kMaxBytes + 1);
  EXPECT_GT(stored, 200);
}

}  // namespace
}  // namespace distarray::cluster
