// Connecting, as a new user meets it: a port where nothing listens fails at once and says so
// (not after the whole timeout), a host that does not answer fails at the timeout and says that,
// and GetServerInfo tells where the health port is.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "distarray/client.h"
#include "tests/support/daemon.h"

namespace distarray::testing {
namespace {

// A loopback TCP socket bound to a port of the kernel's choice; listening when `listen_too`
// (then the kernel completes handshakes that no one accepts, as a daemon hung before its
// server starts would). Closed with the object.
class LoopbackSocket {
 public:
  explicit LoopbackSocket(bool listen_too) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
        (listen_too && listen(fd_, 16) != 0)) {
      return;
    }
    port_ = ntohs(addr.sin_port);
  }
  ~LoopbackSocket() {
    if (fd_ >= 0) close(fd_);
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(Connect, RefusedConnectionFailsFastAndSaysSo) {
  // Bound but not listening: the port is ours, and a connection to it is refused.
  LoopbackSocket closed(/*listen_too=*/false);
  ASSERT_GT(closed.port(), 0);
  const auto start = std::chrono::steady_clock::now();
  auto client = Client::Connect(closed.address(), 10000);
  const double seconds = SecondsSince(start);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable) << client.status();
  EXPECT_NE(client.status().message().find("refused"), std::string::npos) << client.status();
  EXPECT_NE(client.status().message().find(closed.address()), std::string::npos) << client.status();
  EXPECT_LT(seconds, 3.0) << "a refused connection waited " << seconds << " s of the 10 s";
}

TEST(Connect, SilentPeerFailsAtTheTimeoutAndSaysSo) {
  LoopbackSocket silent(/*listen_too=*/true);  // accepts nothing, answers nothing
  ASSERT_GT(silent.port(), 0);
  const auto start = std::chrono::steady_clock::now();
  auto client = Client::Connect(silent.address(), 1500);
  const double seconds = SecondsSince(start);
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.status().code(), absl::StatusCode::kUnavailable) << client.status();
  EXPECT_NE(client.status().message().find("within 1500 ms"), std::string::npos) << client.status();
  EXPECT_EQ(client.status().message().find("refused"), std::string::npos) << client.status();
  EXPECT_GE(seconds, 1.4);
  EXPECT_LT(seconds, 5.0);
}

TEST(Connect, ServerInfoReportsTheHealthPort) {
  auto daemon = Daemon::Start({});
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  auto client = Client::Connect((*daemon)->address());
  ASSERT_TRUE(client.ok()) << client.status();
  auto info = client->ServerInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  const std::string& health = (*daemon)->health_address();
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(health.substr(health.rfind(':') + 1), &port)) << health;
  EXPECT_EQ(info->health_port(), port);
}

TEST(Connect, ServerInfoReportsNoHealthPortWithoutOne) {
  Daemon::Options options;
  options.extra_flags = {"--health_listen="};
  auto daemon = Daemon::Start(options);
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  auto client = Client::Connect((*daemon)->address());
  ASSERT_TRUE(client.ok()) << client.status();
  auto info = client->ServerInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->health_port(), 0);
}

}  // namespace
}  // namespace distarray::testing
