// The daemon's configuration as an operator meets it: flags, DISTARRAY_* environment variables,
// --flagfile, --help, --version, the bad-flags exit code, and the JSON log format.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "distarray/client.h"
#include "distarray/index_maps.h"
#include "distarray/v1/distarray.grpc.pb.h"
#include "tests/support/daemon.h"
#include "tests/support/run_command.h"

namespace distarray::testing {
namespace {

constexpr int kExitBadFlags = 2;

CommandResult RunDaemon(const std::string& args, const std::string& env = "") {
  // A daemon that does start must not linger: every flag check here happens before anything
  // binds, and a run that gets that far is stopped by `timeout`.
  return RunCommand(absl::StrCat(env, " timeout 10 '", DaemonBinary(),
                                 "' --backend=host --listen=127.0.0.1:0 --metrics_listen= "
                                 "--health_listen= ",
                                 args));
}

// Sets an environment variable for the daemons the test starts, and unsets it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

int64_t DeviceLimit(const Daemon& daemon) {
  auto client = Client::Connect(daemon.address());
  EXPECT_TRUE(client.ok()) << client.status();
  if (!client.ok()) return -1;
  auto info = client->ServerInfo();
  EXPECT_TRUE(info.ok()) << info.status();
  return info.ok() && info->devices_size() > 0 ? info->devices(0).memory_limit_bytes() : -1;
}

TEST(Config, UnknownLogLevelExitsWithTheBadFlagsCodeNamingTheFlag) {
  for (const char* level : {"verbose", "infoo", ""}) {
    const CommandResult run = RunDaemon(absl::StrCat("'--log_level=", level, "'"));
    EXPECT_EQ(run.exit_code, kExitBadFlags) << level << ": " << run.output;
    EXPECT_NE(run.output.find("--log_level"), std::string::npos) << run.output;
    EXPECT_NE(run.output.find(absl::StrCat("'", level, "'")), std::string::npos) << run.output;
  }
}

TEST(Config, LogLevelIsCaseInsensitive) {
  Daemon::Options options;
  options.extra_flags = {"--log_level=WARNING"};
  auto daemon = Daemon::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  EXPECT_EQ((*daemon)->Terminate(10000), 0) << (*daemon)->log();
}

TEST(Config, BadFlagsExitWithTheBadFlagsCodeNamingTheFlag) {
  struct Case {
    std::string args;
    std::string env;
    std::string named;  // the message names this
  };
  const Case cases[] = {
      {"--no_such_flag=1", "", "--no_such_flag"},
      {"--host_devices=many", "", "--host_devices"},
      {"--log_format=xml", "", "--log_format"},
      {"--max_message_size=1KiB", "", "--max_message_size"},
      {"--keepalive_time_seconds=0", "", "--keepalive_time_seconds"},
      {"--drain_grace_seconds=-1", "", "--drain_grace_seconds"},
      {"--graph_agreement=vote", "", "--graph_agreement"},
      {"--run_graph_max_seconds=0", "", "--run_graph_max_seconds"},
      {"--run_graph_default_seconds=90 --run_graph_max_seconds=60", "",
       "--run_graph_default_seconds"},
      {"--flagfile=/nonexistent/distarrayd.flags", "", "/nonexistent/distarrayd.flags"},
      {"stray_argument", "", "stray_argument"},
      {"--listen", "", "--listen needs a value"},
      {"", "DISTARRAY_HOST_DEVICES=many", "DISTARRAY_HOST_DEVICES"},
      {"", "DISTARRAY_LOG_LEVEL=loud", "DISTARRAY_LOG_LEVEL"},
  };
  for (const Case& c : cases) {
    const CommandResult run = RunDaemon(c.args, c.env);
    EXPECT_EQ(run.exit_code, kExitBadFlags) << c.env << " " << c.args << ": " << run.output;
    EXPECT_NE(run.output.find(c.named), std::string::npos)
        << c.env << " " << c.args << ": " << run.output;
  }
}

TEST(Config, EnvironmentIsHonouredAndTheCommandLineWins) {
  {
    ScopedEnv limit("DISTARRAY_MEMORY_LIMIT", "48MiB");
    auto daemon = Daemon::Start({});
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    EXPECT_EQ(DeviceLimit(**daemon), int64_t{48} << 20);
    EXPECT_EQ((*daemon)->Terminate(10000), 0);
  }
  {
    ScopedEnv limit("DISTARRAY_MEMORY_LIMIT", "48MiB");
    Daemon::Options options;
    options.memory_limit = "40MiB";  // --memory_limit on the command line
    auto daemon = Daemon::Start(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    EXPECT_EQ(DeviceLimit(**daemon), int64_t{40} << 20);
    EXPECT_EQ((*daemon)->Terminate(10000), 0);
  }
}

TEST(Config, FlagfileIsReadInPlace) {
  const std::string dir = ::testing::TempDir();
  const std::string flagfile = absl::StrCat(dir, "/distarrayd-", getpid(), ".flags");
  std::ofstream(flagfile) << "# distarrayd settings\n\n  --memory_limit=24MiB  \n"
                          << "--max_list_page_size=7\n";
  {
    Daemon::Options options;
    options.extra_flags = {absl::StrCat("--flagfile=", flagfile)};
    auto daemon = Daemon::Start(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    EXPECT_EQ(DeviceLimit(**daemon), int64_t{24} << 20);
    EXPECT_EQ((*daemon)->Terminate(10000), 0);
  }
  {
    // A flag after --flagfile overrides the file's, and DISTARRAY_FLAGFILE names one too.
    ScopedEnv file("DISTARRAY_FLAGFILE", flagfile);
    Daemon::Options options;
    options.extra_flags = {"--memory_limit=20MiB"};
    auto daemon = Daemon::Start(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    EXPECT_EQ(DeviceLimit(**daemon), int64_t{20} << 20);
    EXPECT_EQ((*daemon)->Terminate(10000), 0);
  }
  std::ofstream(flagfile) << "--memory_limit=lots\n";
  const CommandResult bad = RunDaemon(absl::StrCat("--flagfile=", flagfile));
  EXPECT_EQ(bad.exit_code, kExitBadFlags) << bad.output;
  EXPECT_NE(bad.output.find("--memory_limit"), std::string::npos) << bad.output;
  std::filesystem::remove(flagfile);
}

// A download's messages stay under --max_message_size with room for their other fields, whatever
// piece size the client asks for: at the smallest limit (1 MiB) the default 1 MiB pieces and
// 64 MiB ones both arrive. (Uploads are the client's to size: here 512 KiB messages.)
TEST(Config, DownloadsFitTheSmallestMessageSize) {
  Daemon::Options options;
  options.extra_flags = {"--max_message_size=1MiB"};
  auto daemon = Daemon::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> values(int64_t{3} << 20);  // 12 MiB
  for (float& v : values) v = uniform(rng);
  for (const int64_t piece : {int64_t{0}, int64_t{64} << 20}) {
    ConnectOptions connect;
    connect.upload_message_bytes = 512 << 10;
    connect.download_message_bytes = piece;
    connect.shared_memory = SharedMemoryUse::kNever;
    auto client = Client::Connect((*daemon)->address(), 5000, connect);
    ASSERT_TRUE(client.ok()) << client.status();
    const auto n = static_cast<int64_t>(values.size());
    auto array = client->Upload<float>(values, {n}, {Split(1, 0, n, {0})});
    ASSERT_TRUE(array.ok()) << array.status();
    auto back = array->template Download<float>();
    ASSERT_TRUE(back.ok()) << "download_message_bytes " << piece << ": " << back.status();
    EXPECT_EQ(*back, values) << "download_message_bytes " << piece;
  }
  EXPECT_EQ((*daemon)->Terminate(10000), 0);
}

TEST(Config, VersionPrintsTheVersionAndBuild) {
  const CommandResult run = RunCommand(absl::StrCat("'", DaemonBinary(), "' --version"));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(run.output.rfind("distarrayd ", 0), 0u) << run.output;
  EXPECT_NE(run.output.find("build: "), std::string::npos) << run.output;
  EXPECT_TRUE(run.output.find("CUDA runtime: ") != std::string::npos ||
              run.output.find("CUDA: not built") != std::string::npos)
      << run.output;
}

TEST(Config, HelpDocumentsTheOperationalFlagsAndExitsZero) {
  const CommandResult run = RunCommand(absl::StrCat("'", DaemonBinary(), "' --help"));
  EXPECT_EQ(run.exit_code, 0) << run.output;
  for (const char* flag :
       {"--health_listen", "--health_port_file", "--log_format", "--log_progress_seconds",
        "--drain_grace_seconds", "--drain_seconds", "--keepalive_time_seconds",
        "--keepalive_timeout_seconds", "--max_message_size", "--log_level", "--graph_agreement"}) {
    EXPECT_NE(run.output.find(absl::StrCat(flag, " (")), std::string::npos) << flag;
  }
  EXPECT_NE(run.output.find("default: \"127.0.0.1:8081\""), std::string::npos) << run.output;
}

// Every line of --log_format=json is one JSON object with time, level and message; the lines
// logged while a call is served carry its request id, method and peer (and the tenant).
TEST(Config, JsonLogsParseAndCarryTheRequest) {
  Daemon::Options options;
  options.extra_flags = {"--log_format=json", "--log_level=debug"};
  auto daemon = Daemon::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  {
    auto client = Client::Connect((*daemon)->address());
    ASSERT_TRUE(client.ok()) << client.status();
    ArrayOptions array_options;
    array_options.index_map = OnDevice(1, 0);
    auto array = client->Create({1024}, v1::DTYPE_FLOAT32, array_options);
    ASSERT_TRUE(array.ok()) << array.status();
    // A failure logs at info inside the call too.
    EXPECT_FALSE(client->Open("no-such-array").ok());
    // A client's own request id is used as given.
    auto stub = v1::ArrayService::NewStub(
        grpc::CreateChannel((*daemon)->address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.AddMetadata("x-request-id", "client-req-42");
    v1::GetServerInfoResponse info;
    ASSERT_TRUE(stub->GetServerInfo(&context, {}, &info).ok());
  }
  ASSERT_EQ((*daemon)->Terminate(10000), 0);
  const std::string log = (*daemon)->log();
  int lines = 0;
  int in_calls = 0;
  bool saw_create = false;
  bool saw_client_id = false;
  for (absl::string_view line : absl::StrSplit(log, '\n', absl::SkipEmpty())) {
    google::protobuf::Struct object;
    const auto parsed = google::protobuf::util::JsonStringToMessage(std::string(line), &object);
    ASSERT_TRUE(parsed.ok()) << parsed.ToString() << "\n" << line;
    ++lines;
    const auto& fields = object.fields();
    for (const char* key : {"time", "level", "message"}) {
      ASSERT_TRUE(fields.contains(key)) << key << " missing: " << line;
      EXPECT_FALSE(fields.at(key).string_value().empty()) << line;
    }
    if (!fields.contains("request_id")) continue;
    ++in_calls;
    EXPECT_FALSE(fields.at("request_id").string_value().empty()) << line;
    EXPECT_EQ(fields.at("peer").string_value().rfind("ipv4:127.0.0.1:", 0), 0u) << line;
    EXPECT_EQ(fields.at("tenant").string_value(), "default") << line;
    if (fields.at("method").string_value() == "CreateArray") saw_create = true;
    if (fields.at("request_id").string_value() == "client-req-42") {
      saw_client_id = true;
      EXPECT_EQ(fields.at("method").string_value(), "GetServerInfo") << line;
    }
  }
  EXPECT_GT(lines, 3) << log;
  EXPECT_GT(in_calls, 0) << log;
  EXPECT_TRUE(saw_create) << log;
  EXPECT_TRUE(saw_client_id) << log;
}

}  // namespace
}  // namespace distarray::testing
