// TLS and mutual TLS on the API port, with certificates made by openssl at test time: a CA, a
// server certificate for 127.0.0.1 and localhost (subjectAltName), a client certificate, and a
// client certificate of another CA. Checks that TLS clients work (with a token too), that a
// plaintext client and clients without a good certificate are refused, and that unusable files
// fail start-up with exit code 2 naming the flag.
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "distarray/client.h"
#include "distarray/index_maps.h"
#include "gtest/gtest.h"
#include "tests/support/backend_fixture.h"
#include "tests/support/daemon.h"
#include "tests/support/run_command.h"
#include "tests/support/test_certificates.h"

namespace distarray::testing {
namespace {

class TlsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeCertificates(
        "distarray-tls",
        absl::StrCat(SelfSignedCa("ca", "test-ca"), SelfSignedCa("other-ca", "another-ca"),
                     "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nextendedKeyUsage="
                     "serverAuth\\n' > server.ext; ",
                     "printf 'extendedKeyUsage=clientAuth\\n' > client.ext; ",
                     SignedBy("ca", "server", "localhost", "server.ext"),
                     SignedBy("ca", "client", "alice", "client.ext"),
                     SignedBy("other-ca", "stranger", "mallory", "client.ext"),
                     "printf 'not a certificate\\n' > garbage.pem")));
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  static std::string File(const std::string& name) { return *dir_ + "/" + name; }

  // The daemon with these TLS flags.
  static absl::StatusOr<std::unique_ptr<Daemon>> StartWith(std::vector<std::string> flags) {
    Daemon::Options options;
    options.host_devices = 2;
    options.extra_flags = std::move(flags);
    return Daemon::Start(options);
  }
  static std::vector<std::string> ServerFlags(bool mutual) {
    std::vector<std::string> flags = {"--tls_cert_file=" + File("server.crt"),
                                      "--tls_key_file=" + File("server.key")};
    if (mutual) flags.push_back("--tls_client_ca_file=" + File("ca.crt"));
    return flags;
  }
  // A TLS client trusting the test CA, with the named client certificate ("" for none).
  static ConnectOptions TlsOptions(const std::string& client = "") {
    ConnectOptions options;
    options.tls = true;
    options.keepalive = false;
    options.tls_root_certs_pem = ReadPem(File("ca.crt"));
    if (!client.empty()) {
      options.tls_client_cert_pem = ReadPem(File(client + ".crt"));
      options.tls_client_key_pem = ReadPem(File(client + ".key"));
    }
    return options;
  }
  static void Stop(Daemon& daemon) {
    const int status = daemon.Terminate(10000);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << daemon.log();
  }
  // A round trip through the daemon: upload, download.
  static void ExpectWorks(const Client& client) {
    const std::vector<float> values = {1, 2, 3, 4};
    absl::StatusOr<Array> a = client.Upload<float>(values, {4}, {Split(1, 0, 4, {0, 1})});
    ASSERT_TRUE(a.ok()) << a.status();
    absl::StatusOr<std::vector<float>> back = a->Download<float>();
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, values);
  }

  static std::string* dir_;
};
std::string* TlsTest::dir_ = nullptr;

TEST_F(TlsTest, TlsClientsWorkAndPlaintextClientsAreRefused) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon, StartWith(ServerFlags(false)));
  {
    ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon->address(), 5000, TlsOptions()));
    ExpectWorks(client);
    ConnectOptions plaintext;
    plaintext.keepalive = false;
    absl::StatusOr<Client> refused = Client::Connect(daemon->address(), 2000, plaintext);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
    // A client that does not trust the server's CA is refused too.
    ConnectOptions untrusting = TlsOptions();
    untrusting.tls_root_certs_pem = ReadPem(File("other-ca.crt"));
    absl::StatusOr<Client> unverified = Client::Connect(daemon->address(), 2000, untrusting);
    ASSERT_FALSE(unverified.ok());
    EXPECT_EQ(unverified.status().code(), absl::StatusCode::kUnavailable);
  }
  Stop(*daemon);
}

TEST_F(TlsTest, MutualTlsRejectsClientsWithoutACertificateOfItsCa) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon, StartWith(ServerFlags(true)));
  {
    ASSERT_OK_AND_ASSIGN(Client client,
                         Client::Connect(daemon->address(), 5000, TlsOptions("client")));
    ExpectWorks(client);
    for (const std::string& who : {std::string(""), std::string("stranger")}) {
      SCOPED_TRACE(who.empty() ? "no client certificate" : who);
      absl::StatusOr<Client> refused = Client::Connect(daemon->address(), 2000, TlsOptions(who));
      ASSERT_FALSE(refused.ok());
      EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
    }
  }
  Stop(*daemon);
}

TEST_F(TlsTest, TokensWorkOverTls) {
  const std::string tokens = File("tokens");
  std::ofstream(tokens) << "alice: alice-token-0123456789abcdef\n";
  std::vector<std::string> flags = ServerFlags(true);
  flags.push_back("--auth_tokens_file=" + tokens);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Daemon> daemon, StartWith(flags));
  {
    // A certificate alone does not authenticate a tenant: the token is still required.
    absl::StatusOr<Client> no_token =
        Client::Connect(daemon->address(), 5000, TlsOptions("client"));
    ASSERT_FALSE(no_token.ok());
    EXPECT_EQ(no_token.status().code(), absl::StatusCode::kUnauthenticated);
    ConnectOptions options = TlsOptions("client");
    options.token = "alice-token-0123456789abcdef";
    ASSERT_OK_AND_ASSIGN(Client client, Client::Connect(daemon->address(), 5000, options));
    ExpectWorks(client);
  }
  Stop(*daemon);
}

TEST_F(TlsTest, UnusableFilesFailStartUpNamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--tls_cert_file=" + File("missing.crt"), "--tls_key_file=" + File("server.key")},
       "--tls_cert_file: cannot read " + File("missing.crt")},
      {{"--tls_cert_file=" + File("garbage.pem"), "--tls_key_file=" + File("server.key")},
       "--tls_cert_file: " + File("garbage.pem") + " holds no PEM certificate"},
      {{"--tls_cert_file=" + File("server.crt"), "--tls_key_file=" + File("garbage.pem")},
       "--tls_key_file: " + File("garbage.pem") + " holds no unencrypted PEM private key"},
      {{"--tls_cert_file=" + File("server.crt"), "--tls_key_file=" + File("client.key")},
       "--tls_key_file: the key in " + File("client.key") +
           " does not belong to the certificate in --tls_cert_file"},
      {{"--tls_cert_file=" + File("server.crt")}, "--tls_key_file: required with --tls_cert_file"},
      {{"--tls_client_ca_file=" + File("ca.crt")},
       "--tls_cert_file: required with --tls_client_ca_file"},
      {{"--tls_cert_file=" + File("server.crt"), "--tls_key_file=" + File("server.key"),
        "--tls_client_ca_file=" + File("garbage.pem")},
       "--tls_client_ca_file: " + File("garbage.pem") + " holds no PEM certificate"},
  };
  for (const auto& [flags, expected] : cases) {
    absl::StatusOr<std::unique_ptr<Daemon>> daemon = StartWith(flags);
    ASSERT_FALSE(daemon.ok()) << expected;
    const std::string message(daemon.status().message());
    EXPECT_NE(message.find("exited with 2"), std::string::npos) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace distarray::testing
