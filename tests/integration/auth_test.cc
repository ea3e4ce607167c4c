// Bearer-token authentication against the real daemon: --auth_tokens_file, UNAUTHENTICATED for a
// missing, malformed or wrong token (never echoing it), reload on SIGHUP (a bad file keeps the old
// tokens), tokens files refused at start-up naming the line, and the health port left open.
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "distarray/client.h"
#include "distarray/index_maps.h"
#include "gtest/gtest.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/daemon.h"
#include "tests/support/run_command.h"

namespace distarray::testing {
namespace {

constexpr char kAliceToken[] = "alice-token-0123456789abcdef";
constexpr char kBobToken[] = "bob-token-0123456789abcdefgh";
constexpr char kRotatedToken[] = "alice-rotated-0123456789abcd";

// A file under a fresh directory of its own, removed with the object.
class TempFile {
 public:
  explicit TempFile(const std::string& contents) {
    std::string dir = (std::filesystem::temp_directory_path() / "distarray-auth-XXXXXX").string();
    dir_ = mkdtemp(dir.data());
    path_ = dir_ + "/tokens";
    Write(contents);
  }
  ~TempFile() { std::filesystem::remove_all(dir_); }
  // Replaces the contents in one rename, as a Secret update does.
  void Write(const std::string& contents) const {
    const std::string next = path_ + ".next";
    std::ofstream(next) << contents;
    std::filesystem::rename(next, path_);
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_;
  std::string path_;
};

std::string TokensFile(const std::string& extra = "") {
  return absl::StrCat("# tenants of the test\n\nalice: ", kAliceToken, "\n  bob :  ", kBobToken,
                      "  \n", extra);
}

ConnectOptions WithToken(const std::string& token) {
  ConnectOptions options;
  options.token = token;
  options.keepalive = false;
  return options;
}

// GetServerInfo with exactly this `authorization` value (none when empty).
grpc::Status CallWith(const std::string& address, const std::string& authorization) {
  auto stub =
      v1::ArrayService::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  if (!authorization.empty()) context.AddMetadata("authorization", authorization);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::GetServerInfoResponse response;
  return stub->GetServerInfo(&context, {}, &response);
}

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tokens_ = std::make_unique<TempFile>(TokensFile());
    Daemon::Options options;
    options.host_devices = 2;
    options.extra_flags = {"--auth_tokens_file=" + tokens_->path(), "--log_level=info"};
    ASSERT_OK_AND_ASSIGN(daemon_, Daemon::Start(options));
  }
  void TearDown() override {
    if (daemon_ != nullptr) {
      const int status = daemon_->Terminate(10000);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << daemon_->log();
    }
  }
  // Sends SIGHUP and waits until the daemon logged `count` reload outcomes in all.
  void Reload(int count) {
    ASSERT_EQ(kill(daemon_->pid(), SIGHUP), 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string log = daemon_->log();
      int seen = 0;
      for (size_t at = 0; (at = log.find("SIGHUP: ", at)) != std::string::npos; ++at) ++seen;
      if (seen >= count) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    FAIL() << "no reload logged: " << daemon_->log();
  }

  std::unique_ptr<TempFile> tokens_;
  std::unique_ptr<Daemon> daemon_;
};

TEST_F(AuthTest, MissingMalformedAndWrongTokensAreUnauthenticatedWithoutEchoingThem) {
  const std::string address = daemon_->address();
  const grpc::Status missing = CallWith(address, "");
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(missing.error_message(),
            "authorization: this daemon requires a token; send the metadata 'authorization: "
            "Bearer <token>'");
  const grpc::Status basic = CallWith(address, absl::StrCat("Basic ", kAliceToken));
  EXPECT_EQ(basic.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(basic.error_message(), "authorization: expected 'Bearer <token>'");
  const std::string wrong_token = "not-a-token-of-this-daemon-42";
  const grpc::Status wrong = CallWith(address, absl::StrCat("Bearer ", wrong_token));
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(wrong.error_message(), "authorization: the bearer token is not valid");
  // A prefix of a real token, and a real token with a byte more, are wrong tokens too.
  for (const std::string& near :
       {std::string(kAliceToken).substr(0, 20), absl::StrCat(kAliceToken, "x")}) {
    const grpc::Status s = CallWith(address, absl::StrCat("Bearer ", near));
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << near;
  }
  // The scheme is case-insensitive.
  EXPECT_TRUE(CallWith(address, absl::StrCat("bearer ", kAliceToken)).ok());
  EXPECT_TRUE(CallWith(address, absl::StrCat("Bearer ", kBobToken)).ok());
  // The daemon's log names neither the wrong token nor a real one.
  const std::string log = daemon_->log();
  EXPECT_EQ(log.find(wrong_token), std::string::npos) << log;
  EXPECT_EQ(log.find(kAliceToken), std::string::npos) << log;
}

TEST_F(AuthTest, TheSdkSendsItsTokenOnEveryCallIncludingStreams) {
  // Connect itself calls GetServerInfo: no token, no client.
  absl::StatusOr<Client> anonymous = Client::Connect(daemon_->address(), 5000, WithToken(""));
  ASSERT_FALSE(anonymous.ok());
  EXPECT_EQ(anonymous.status().code(), absl::StatusCode::kUnauthenticated);
  ASSERT_OK_AND_ASSIGN(Client alice,
                       Client::Connect(daemon_->address(), 5000, WithToken(kAliceToken)));
  const std::vector<float> values = {1, 2, 3, 4, 5, 6};
  // Uploads and downloads are streams; RunGraph, Reduce and the rest are unary.
  ASSERT_OK_AND_ASSIGN(Array a, alice.Upload<float>(values, {6}, {Split(1, 0, 6, {0, 1})}));
  ASSERT_OK_AND_ASSIGN(std::vector<float> back, a.Download<float>());
  EXPECT_EQ(back, values);
  ASSERT_OK_AND_ASSIGN(auto list, alice.List());
  EXPECT_EQ(list.size(), 1u);
  ASSERT_OK(alice.Synchronize());
}

TEST_F(AuthTest, SighupReloadsTokensAndABadFileKeepsTheOldOnes) {
  ASSERT_OK_AND_ASSIGN(Client alice,
                       Client::Connect(daemon_->address(), 5000, WithToken(kAliceToken)));
  ASSERT_OK_AND_ASSIGN(
      Array kept, alice.Create({4}, v1::DTYPE_FLOAT32, {OnDevice(1, 0), v1::MODE_REPLICA, "kept"}));

  // Rotate alice's token: the new one works, the old one is refused, bob is untouched.
  tokens_->Write(absl::StrCat("alice: ", kRotatedToken, "\nbob: ", kBobToken, "\n"));
  Reload(1);
  EXPECT_EQ(CallWith(daemon_->address(), absl::StrCat("Bearer ", kAliceToken)).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(CallWith(daemon_->address(), absl::StrCat("Bearer ", kBobToken)).ok());
  // The rotated token is the same tenant: alice's named array is still hers.
  ASSERT_OK_AND_ASSIGN(Client rotated,
                       Client::Connect(daemon_->address(), 5000, WithToken(kRotatedToken)));
  ASSERT_OK_AND_ASSIGN(Array opened, rotated.Open("kept"));
  EXPECT_EQ(opened.handle(), kept.handle());

  // A malformed file: logged with its line, and the tokens in force stay.
  tokens_->Write(absl::StrCat("alice: ", kAliceToken, "\nthis line has no colon\n"));
  Reload(2);
  EXPECT_NE(daemon_->log().find("line 2: expected 'tenant: token'"), std::string::npos)
      << daemon_->log();
  EXPECT_NE(daemon_->log().find("the previous tokens stay in force"), std::string::npos);
  EXPECT_TRUE(CallWith(daemon_->address(), absl::StrCat("Bearer ", kRotatedToken)).ok());
  EXPECT_EQ(CallWith(daemon_->address(), absl::StrCat("Bearer ", kAliceToken)).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  ASSERT_OK(opened.Delete());
}

TEST_F(AuthTest, TheHealthPortNeedsNoToken) {
  // The health server is a server of its own, without the authenticator: a probe carries no token.
  const CommandResult probe = RunCommand(absl::StrCat(
      ProbeBinary(), " --address=", daemon_->health_address(), " --service=readiness"));
  EXPECT_EQ(probe.exit_code, 0) << probe.output;
}

// Start-up refuses tokens files it cannot use, naming the flag and the line, with exit code 2.
TEST(AuthFlags, BadTokensFilesFailStartUpNamingTheLine) {
  struct Case {
    std::string contents;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"alice: short\n", "line 1: the token must have 16 to 4096 bytes, it has 5"},
      {"# ok\nalice token-without-colon-000000\n", "line 2: expected 'tenant: token'"},
      {"bad/tenant: 0123456789abcdef0123\n", "line 1: tenant"},
      {"alice: 0123456789abcdef0123\nbob: 0123456789abcdef0123\n",
       "line 2: the same token as line 1"},
      {"alice: 0123456789abcdef 0123\n", "line 1: the token may hold printable ASCII only"},
      {"# only comments\n\n", "no 'tenant: token' line"},
  };
  for (const Case& c : cases) {
    TempFile file(c.contents);
    Daemon::Options options;
    options.extra_flags = {"--auth_tokens_file=" + file.path()};
    absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::Start(options);
    ASSERT_FALSE(daemon.ok()) << c.contents;
    const std::string message(daemon.status().message());
    EXPECT_NE(message.find("exited with 2"), std::string::npos) << message;
    EXPECT_NE(message.find("--auth_tokens_file"), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
    // Tokens are never quoted back.
    EXPECT_EQ(message.find("0123456789abcdef0123"), std::string::npos) << message;
  }
  Daemon::Options missing;
  missing.extra_flags = {"--auth_tokens_file=/nonexistent/tokens"};
  absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::Start(missing);
  ASSERT_FALSE(daemon.ok());
  EXPECT_NE(daemon.status().message().find("exited with 2: "), absl::string_view::npos);
  EXPECT_NE(daemon.status().message().find("--auth_tokens_file: cannot read /nonexistent/tokens"),
            absl::string_view::npos)
      << daemon.status();
}

}  // namespace
}  // namespace distarray::testing
