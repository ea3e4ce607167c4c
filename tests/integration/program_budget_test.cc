// Programs against the real daemon as a hostile tenant would use them: the memory a program may
// take (--max_program_bytes, inline or registered), each tenant's budget of registered programs
// (--tenant_program_bytes, given back by DeleteProgram), index maps checked at registration,
// program ids that a restarted daemon never gives again, and the graph cache's keys.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "distarray/client.h"
#include "distarray/graph.h"
#include "distarray/index_maps.h"
#include "gtest/gtest.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/daemon.h"
#include "tests/support/sanitized_daemon.h"

namespace distarray::testing {
namespace {

constexpr char kAliceToken[] = "alice-token-0123456789abcdef";
constexpr char kBobToken[] = "bob-token-0123456789abcdefgh";

// A daemon with two tenants and the given extra flags.
class TwoTenants {
 public:
  explicit TwoTenants(std::vector<std::string> flags) : flags_(std::move(flags)) {}
  void Start() {
    Daemon::Options options;
    options.tokens = {{"alice", kAliceToken}, {"bob", kBobToken}};
    options.host_devices = 2;
    options.memory_limit = "64MiB";
    options.extra_flags = flags_;
    ASSERT_OK_AND_ASSIGN(daemon_, Daemon::Start(options));
    ASSERT_OK_AND_ASSIGN(alice_, Connect(kAliceToken));
    ASSERT_OK_AND_ASSIGN(bob_, Connect(kBobToken));
  }
  // Stops the daemon (it must exit 0); Start() may be called again for a fresh one.
  void Stop() {
    alice_.reset();
    bob_.reset();
    if (daemon_ != nullptr) {
      const int status = daemon_->Terminate(10000);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << daemon_->log();
      daemon_.reset();
    }
  }
  ~TwoTenants() { Stop(); }

  Client& alice() { return *alice_; }
  Client& bob() { return *bob_; }
  Daemon& daemon() { return *daemon_; }

 private:
  absl::StatusOr<std::unique_ptr<Client>> Connect(const std::string& token) {
    ConnectOptions options;
    options.token = token;
    absl::StatusOr<Client> client = Client::Connect(daemon_->address(), 5000, options);
    if (!client.ok()) return client.status();
    return std::make_unique<Client>(*std::move(client));
  }

  std::vector<std::string> flags_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<Client> alice_;
  std::unique_ptr<Client> bob_;
};

// b = a resharded to `chunks` one-element chunks over devices 0 and 1, `reshards` times (the
// issue's attack: many large index maps, cheap on the wire, several times that once parsed).
v1::Program IndexMapHeavyProgram(int chunks, int reshards = 1) {
  v1::Program program;
  program.add_inputs("a");
  for (int r = 0; r < reshards; ++r) {
    v1::Statement* s = program.add_statements();
    s->set_target(absl::StrCat("b", r));
    s->mutable_reshard()->set_source("a");
    v1::IndexMap* map = s->mutable_reshard()->mutable_index_map();
    for (int c = 0; c < chunks; ++c) {
      v1::Chunk* chunk = map->add_chunks();
      chunk->set_device(c % 2);
      chunk->add_slices()->set_start(c);
      chunk->mutable_slices(0)->set_stop(c + 1);
    }
  }
  program.add_outputs("b0");
  return program;
}

v1::Program AddOne() {
  graph::ProgramBuilder p;
  graph::Var a = p.Input("a");
  p.Output("b", a + 1.0f);
  return p.program();
}

TEST(ProgramBudget, AProgramOverMaxProgramBytesIsRefusedInlineAndRegistered) {
  TwoTenants daemon({"--max_program_bytes=1MiB"});
  ASSERT_NO_FATAL_FAILURE(daemon.Start());
  // 20,000 chunks: about 400 KB on the wire, several MB parsed.
  const v1::Program big = IndexMapHeavyProgram(20000);
  ASSERT_LT(big.ByteSizeLong(), size_t{1} << 20);
  const absl::Status registered = daemon.alice().RegisterProgram(big).status();
  EXPECT_EQ(registered.code(), absl::StatusCode::kInvalidArgument) << registered;
  EXPECT_NE(registered.message().find("program: the program takes"), std::string::npos)
      << registered;
  EXPECT_NE(registered.message().find("(--max_program_bytes)"), std::string::npos) << registered;
  ASSERT_OK_AND_ASSIGN(Array a,
                       daemon.alice().Create({20000}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  const absl::Status inline_run = daemon.alice().RunGraph(big, {{"a", &a}}).status();
  EXPECT_EQ(inline_run.code(), absl::StatusCode::kInvalidArgument) << inline_run;
  EXPECT_NE(inline_run.message().find("(--max_program_bytes)"), std::string::npos) << inline_run;
  // A smaller one of the same kind registers and runs.
  ASSERT_OK_AND_ASSIGN(std::string id, daemon.alice().RegisterProgram(IndexMapHeavyProgram(100)));
  ASSERT_OK_AND_ASSIGN(Array small,
                       daemon.alice().Create({100}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  ASSERT_OK_AND_ASSIGN(GraphRun ran, daemon.alice().RunGraph(id, {{"a", &small}}));
  EXPECT_EQ(ran.outputs.at("b0").info().index_map().chunks_size(), 100);
}

TEST(ProgramBudget, EachTenantsRegisteredProgramsStayWithinItsBudgetAndDeletingReturnsIt) {
  TwoTenants daemon({"--max_program_bytes=1MiB", "--tenant_program_bytes=2MiB"});
  ASSERT_NO_FATAL_FAILURE(daemon.Start());
  // Each well under 1 MiB parsed, so a few fit in 2 MiB and then no more.
  const v1::Program program = IndexMapHeavyProgram(3000);
  std::vector<std::string> ids;
  absl::Status refused;
  for (int i = 0; i < 64; ++i) {
    absl::StatusOr<std::string> id = daemon.alice().RegisterProgram(program);
    if (!id.ok()) {
      refused = id.status();
      break;
    }
    ids.push_back(*id);
  }
  ASSERT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_GE(ids.size(), 2u);
  EXPECT_LT(ids.size(), 32u);
  EXPECT_NE(refused.message().find("program: the program takes"), std::string::npos) << refused;
  EXPECT_NE(refused.message().find("(--tenant_program_bytes)"), std::string::npos) << refused;
  // The budget is alice's: bob registers as many as she did, and more is refused for him too.
  for (size_t i = 0; i < ids.size(); ++i) ASSERT_OK(daemon.bob().RegisterProgram(program).status());
  EXPECT_EQ(daemon.bob().RegisterProgram(program).status().code(),
            absl::StatusCode::kResourceExhausted);
  // Deleting gives the bytes back: alice registers again, and her kept programs still run.
  ASSERT_OK(daemon.alice().DeleteProgram(ids.back()));
  ids.pop_back();
  ASSERT_OK_AND_ASSIGN(std::string again, daemon.alice().RegisterProgram(program));
  ASSERT_OK_AND_ASSIGN(Array a, daemon.alice().Create({3000}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  ASSERT_OK(daemon.alice().RunGraph(again, {{"a", &a}}).status());
  ASSERT_OK(daemon.alice().RunGraph(ids.front(), {{"a", &a}}).status());
  EXPECT_EQ(daemon.alice().RegisterProgram(program).status().code(),
            absl::StatusCode::kResourceExhausted);
}

TEST(ProgramBudget, IndexMapsOfAProgramAreCheckedAgainstMaxChunksAtRegistration) {
  TwoTenants daemon({"--max_chunks=64"});
  ASSERT_NO_FATAL_FAILURE(daemon.Start());
  const absl::Status status = daemon.alice().RegisterProgram(IndexMapHeavyProgram(65)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_EQ(status.message(),
            "program.statements[0].reshard.index_map.chunks: 65 chunks exceed the limit of 64");
  ASSERT_OK(daemon.alice().RegisterProgram(IndexMapHeavyProgram(64)).status());
}

// The daemon's resident memory in bytes (VmRSS).
int64_t ResidentBytes(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

// The issue: deleting registered programs returned little of their memory to the host.
TEST(ProgramBudget, DeletingLargeProgramsReturnsTheirMemoryToTheHost) {
  if (DaemonSanitized()) {
    GTEST_SKIP() << "measures the daemon's resident memory, which ASan's quarantine and shadow "
                    "memory change; the plain build's run checks it";
  }
  TwoTenants daemon({"--tenant_program_bytes=256MiB"});
  ASSERT_NO_FATAL_FAILURE(daemon.Start());
  const v1::Program program = IndexMapHeavyProgram(50000);  // several MB parsed
  const int64_t baseline = ResidentBytes(daemon.daemon().pid());
  std::vector<std::string> ids;
  for (int i = 0; i < 8; ++i) {
    ASSERT_OK_AND_ASSIGN(std::string id, daemon.alice().RegisterProgram(program));
    ids.push_back(id);
  }
  const int64_t grown = ResidentBytes(daemon.daemon().pid()) - baseline;
  ASSERT_GT(grown, int64_t{16} << 20);
  for (const std::string& id : ids) ASSERT_OK(daemon.alice().DeleteProgram(id));
  const int64_t left = ResidentBytes(daemon.daemon().pid()) - baseline;
  EXPECT_LT(left, grown / 2) << "registering took " << grown << " bytes; deleting left " << left;
}

TEST(ProgramIds, ARestartedDaemonGivesIdsTheEarlierRunNeverGave) {
  TwoTenants daemon({});
  ASSERT_NO_FATAL_FAILURE(daemon.Start());
  std::set<std::string> before;
  for (int i = 0; i < 8; ++i) {
    ASSERT_OK_AND_ASSIGN(std::string id, daemon.alice().RegisterProgram(AddOne()));
    before.insert(id);
  }
  ASSERT_EQ(before.size(), 8u);
  daemon.Stop();
  ASSERT_NO_FATAL_FAILURE(daemon.Start());
  for (int i = 0; i < 8; ++i) {
    ASSERT_OK_AND_ASSIGN(std::string id, daemon.alice().RegisterProgram(AddOne()));
    EXPECT_FALSE(before.contains(id)) << id << " was given by the earlier run too";
  }
  // An id kept from before the restart names nothing now.
  ASSERT_OK_AND_ASSIGN(Array a, daemon.alice().Create({4}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  for (const std::string& old : before) {
    const absl::Status run = daemon.alice().RunGraph(old, {{"a", &a}}).status();
    EXPECT_EQ(run.code(), absl::StatusCode::kNotFound) << run;
    EXPECT_EQ(run.message(), absl::StrCat("program_id: no registered program '", old, "'"));
  }
}

// b = a + `constant`, with `padding` bytes of a field this daemon does not know (a newer client's,
// or a hostile one's).
v1::Program PaddedAdd(float constant, const std::string& padding) {
  graph::ProgramBuilder p;
  graph::Var a = p.Input("a");
  p.Output("b", a + constant);
  v1::Program program = p.program();
  program.GetReflection()->MutableUnknownFields(&program)->AddLengthDelimited(1000, padding);
  return program;
}

TEST(GraphCacheKeys, UnknownFieldsNeitherSplitEntriesNorStayInTheCache) {
  if (DaemonSanitized()) {
    GTEST_SKIP() << "measures the daemon's resident memory, which ASan's quarantine and shadow "
                    "memory change; the plain build's run checks it";
  }
  TwoTenants daemon({});
  ASSERT_NO_FATAL_FAILURE(daemon.Start());
  // One device: the host backend records and caches the graph.
  ASSERT_OK_AND_ASSIGN(Array a, daemon.alice().Create({4}, v1::DTYPE_FLOAT32, {OnDevice(1, 0)}));
  ASSERT_OK_AND_ASSIGN(GraphRun first,
                       daemon.alice().RunGraph(PaddedAdd(1, std::string(1000, 'x')), {{"a", &a}}));
  ASSERT_EQ(first.execution, v1::GRAPH_EXECUTION_DEVICE_GRAPH);
  EXPECT_FALSE(first.graph_cache_hit);
  ASSERT_OK_AND_ASSIGN(GraphRun second,
                       daemon.alice().RunGraph(PaddedAdd(1, std::string(5, 'y')), {{"a", &a}}));
  EXPECT_TRUE(second.graph_cache_hit) << "two programs differing only in unknown fields";
  ASSERT_OK_AND_ASSIGN(std::vector<float> b, second.outputs.at("b").Download<float>());
  EXPECT_EQ(b, std::vector<float>(4, 1.0f));

  // Rounds of 16 programs, each with 4 MiB of unknown field: 64 MiB sent per round. The first
  // round brings the allocator's arenas to their working size (the requests' own memory); a
  // second round of new programs (16 more cache entries, the cache holds 64) may reuse that but
  // keeps nothing of the fields. Before, each entry's key held the program's bytes twice: 128 MiB
  // more per round.
  constexpr int kPrograms = 16;
  const std::string padding(4 << 20, 'z');
  const auto round = [&](float first) {
    for (int i = 0; i < kPrograms; ++i) {
      ASSERT_OK_AND_ASSIGN(GraphRun ran,
                           daemon.alice().RunGraph(PaddedAdd(first + i, padding), {{"a", &a}}));
      EXPECT_FALSE(ran.graph_cache_hit);
    }
  };
  ASSERT_NO_FATAL_FAILURE(round(100));
  const int64_t before = ResidentBytes(daemon.daemon().pid());
  ASSERT_GT(before, 0);
  ASSERT_NO_FATAL_FAILURE(round(200));
  const int64_t grown = ResidentBytes(daemon.daemon().pid()) - before;
  // Under one field's worth per program: allocator growth differs by C library (27 MiB on Debian
  // 12's glibc 2.36, 36 MiB on Ubuntu 24.04's 2.39), and the old keys grew by twice the bound.
  EXPECT_LT(grown, int64_t{kPrograms} * (4 << 20))
      << "the daemon grew by " << grown << " bytes over " << kPrograms << " cached programs";
}

}  // namespace
}  // namespace distarray::testing
