// Registered programs and the graph cache's keys: per-tenant byte budgets that deleting returns,
// ids that do not repeat, and digests that ignore unknown fields and stay small.
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "server/graph/program_check.h"
#include "server/graph/program_digest.h"
#include "server/graph/program_store.h"

namespace distarray {
namespace {

v1::Program Identity(const std::string& name) {
  v1::Program program;
  program.add_inputs(name);
  program.add_outputs(name);
  return program;
}

void AddUnknownField(v1::Program& program, int number, const std::string& bytes) {
  program.GetReflection()->MutableUnknownFields(&program)->AddLengthDelimited(number, bytes);
}

TEST(ProgramDigestTest, IgnoresUnknownFieldsAndIsSmall) {
  v1::Program plain = Identity("a");
  v1::Program padded = plain;
  AddUnknownField(padded, 1000, std::string(1 << 20, 'x'));
  v1::Program other_padding = plain;
  AddUnknownField(other_padding, 1001, "y");
  const std::string digest = ProgramDigest(plain);
  EXPECT_EQ(digest.size(), 64u);
  EXPECT_EQ(ProgramDigest(padded), digest);
  EXPECT_EQ(ProgramDigest(other_padding), digest);
  EXPECT_NE(ProgramDigest(Identity("b")), digest);
  // The request itself keeps its unknown fields: the digest works on a copy.
  EXPECT_EQ(padded.GetReflection()->GetUnknownFields(padded).field_count(), 1);
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // The bytes digest covers every field as sent (RunGraph's memo of checked programs).
  EXPECT_EQ(ProgramBytesDigest(plain).size(), 64u);
  EXPECT_EQ(ProgramBytesDigest(Identity("a")), ProgramBytesDigest(plain));
  EXPECT_NE(ProgramBytesDigest(padded), ProgramBytesDigest(plain));
  EXPECT_NE(ProgramBytesDigest(other_padding), ProgramBytesDigest(padded));
}

TEST(ProgramStoreTest, ChargesEachTenantAndDeletingReturnsTheBytes) {
  ProgramStore store(/*max_programs=*/100, /*max_tenant_bytes=*/1000);
  ASSERT_TRUE(store.Add("alice", Identity("a"), 600, "program").ok());
  const absl::StatusOr<std::string> over = store.Add("alice", Identity("a"), 401, "program");
  ASSERT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("program: the program takes 401 bytes; with the 600"),
            std::string::npos)
      << over.status();
  EXPECT_NE(over.status().message().find("(--tenant_program_bytes)"), std::string::npos);
  EXPECT_EQ(store.TenantBytes("alice"), 600);
  // Another tenant's budget is its own.
  ASSERT_TRUE(store.Add("bob", Identity("a"), 1000, "program").ok());
  absl::StatusOr<std::string> fits = store.Add("alice", Identity("a"), 400, "program");
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(store.TenantBytes("alice"), 1000);
  ASSERT_TRUE(store.Erase("alice", *fits, "program_id").ok());
  EXPECT_EQ(store.TenantBytes("alice"), 600);
  EXPECT_TRUE(store.Add("alice", Identity("a"), 400, "program").ok());
  // Refusals leave no trace of a tenant that holds nothing.
  EXPECT_FALSE(store.Add("carol", Identity("a"), 1001, "program").ok());
  EXPECT_EQ(store.TenantBytes("carol"), 0);
}

TEST(ProgramStoreTest, IdsAreRandomAndTwoStoresDoNotShareThem) {
  std::set<std::string> ids;
  for (int run = 0; run < 2; ++run) {
    ProgramStore store(1000, int64_t{1} << 30);  // a restarted daemon has a new store
    for (int i = 0; i < 100; ++i) {
      absl::StatusOr<std::string> id = store.Add("alice", Identity("a"), 1, "program");
      ASSERT_TRUE(id.ok());
      ASSERT_EQ(id->size(), 21u);
      EXPECT_TRUE(ids.insert(*id).second) << *id;
    }
  }
}

TEST(ProgramCheckTest, MemoryOfAProgramCountsWhatParsingTook) {
  v1::Program program = Identity("a");
  const int64_t small = ProgramMemoryBytes(program);
  EXPECT_GE(small, kStoredProgramOverheadBytes);
  v1::IndexMap* map = program.add_statements()->mutable_reshard()->mutable_index_map();
  for (int c = 0; c < 10000; ++c) map->add_chunks()->add_slices()->set_stop(c + 1);
  // Each chunk is at least two messages once parsed: far more than its 6 or so bytes on the wire.
  EXPECT_GT(ProgramMemoryBytes(program) - small, int64_t{10000} * 64);
  EXPECT_LT(static_cast<int64_t>(program.ByteSizeLong()), int64_t{10000} * 16);
  ProgramLimits limits;
  limits.max_program_bytes = ProgramMemoryBytes(program) - 1;
  const absl::Status refused = CheckProgramStructure(program, limits, {65536, 4}, "program");
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("(--max_program_bytes)"), std::string::npos) << refused;
}

}  // namespace
}  // namespace distarray
