#include "tests/support/daemon.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"

#ifndef DISTARRAYD_PATH
#error "DISTARRAYD_PATH must name the distarrayd binary"
#endif

namespace distarray::testing {

std::string DaemonBinary() {
  const char* binary = std::getenv("DISTARRAYD");
  return binary != nullptr ? binary : DISTARRAYD_PATH;
}

namespace {

// The flags that make the daemon of `options` rank `rank` of a loopback cluster of
// options.cluster_size; the leader's cluster port is `leader_port` (members).
std::vector<std::string> ClusterFlags(const Daemon::Options& options, int rank, int leader_port,
                                      const std::string& dir) {
  if (options.cluster_size <= 1) return {};
  std::vector<std::string> flags = {
      absl::StrCat("--cluster_size=", options.cluster_size), absl::StrCat("--cluster_rank=", rank),
      "--cluster_listen=127.0.0.1:0", absl::StrCat("--cluster_port_file=", dir, "/cluster_port")};
  if (rank > 0) flags.push_back(absl::StrCat("--cluster_leader=127.0.0.1:", leader_port));
  return flags;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Launch(const Options& options, int rank,
                                                       int leader_port) {
  std::string dir_template =
      (std::filesystem::temp_directory_path() / "distarray-test-XXXXXX").string();
  const char* dir = mkdtemp(dir_template.data());
  if (dir == nullptr) return absl::InternalError("mkdtemp failed");
  const std::string port_file = absl::StrCat(dir, "/port");
  const std::string log_file = absl::StrCat(dir, "/log");
  const std::string health_port_file = absl::StrCat(dir, "/health_port");
  std::vector<std::string> args = {DaemonBinary(),
                                   "--listen=127.0.0.1:0",
                                   "--metrics_listen=",
                                   absl::StrCat("--backend=", options.backend),
                                   absl::StrCat("--host_devices=", options.host_devices),
                                   absl::StrCat("--port_file=", port_file),
                                   "--log_level=warn",
                                   "--health_listen=127.0.0.1:0",
                                   absl::StrCat("--health_port_file=", health_port_file),
                                   "--drain_grace_seconds=0",
                                   "--drain_seconds=2"};
  if (!options.memory_limit.empty()) args.push_back("--memory_limit=" + options.memory_limit);
  if (!options.transfer.empty()) args.push_back("--transfer=" + options.transfer);
  if (!options.graph_agreement.empty()) {
    args.push_back("--graph_agreement=" + options.graph_agreement);
  }
  if (!options.tokens.empty()) {
    const std::string tokens_file = absl::StrCat(dir, "/tokens");
    std::ofstream tokens(tokens_file);
    for (const auto& [tenant, token] : options.tokens) tokens << tenant << ": " << token << "\n";
    if (!tokens.flush()) return absl::InternalError("cannot write " + tokens_file);
    args.push_back("--auth_tokens_file=" + tokens_file);
  }
  for (std::string& flag : ClusterFlags(options, rank, leader_port, dir)) {
    args.push_back(std::move(flag));
  }
  args.insert(args.end(), options.extra_flags.begin(), options.extra_flags.end());

  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    // Both streams go to the log, so the daemon never holds the test's stdout pipe open.
    if (std::freopen(log_file.c_str(), "w", stderr) == nullptr) _exit(126);
    dup2(fileno(stderr), fileno(stdout));
    // Die with the test process even if it crashes before stopping us.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return std::unique_ptr<Daemon>(new Daemon(pid, "", "", dir));
}

absl::StatusOr<int> Daemon::WaitForPort(const std::string& file_name, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      const std::string message = absl::StrCat("distarrayd (starting, no ", file_name,
                                               " yet) exited with ", code, ": ", log());
      return code == 3 ? absl::UnavailableError(message) : absl::InternalError(message);
    }
    std::ifstream in(absl::StrCat(dir_, "/", file_name));
    int port = 0;
    if (in >> port && port > 0) return port;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("distarrayd did not write ", file_name, " within ", timeout_ms, " ms"));
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(const Options& options) {
  absl::StatusOr<std::unique_ptr<Daemon>> daemon = Launch(options, 0, 0);
  if (!daemon.ok()) return daemon.status();
  std::vector<std::unique_ptr<Daemon>> members;
  if (options.cluster_size > 1) {
    absl::StatusOr<int> leader_port = (*daemon)->WaitForPort("cluster_port", 30000);
    if (!leader_port.ok()) return leader_port.status();
    for (int rank = 1; rank < options.cluster_size; ++rank) {
      absl::StatusOr<std::unique_ptr<Daemon>> member = Launch(options, rank, *leader_port);
      if (!member.ok()) return member.status();
      members.push_back(*std::move(member));
    }
  }
  absl::StatusOr<int> port = (*daemon)->WaitForPort("port", 30000);
  if (!port.ok()) {
    std::string logs;
    for (size_t i = 0; i < members.size(); ++i) {
      logs += absl::StrCat("\nmember ", i + 1, ": ", members[i]->log());
    }
    return absl::Status(port.status().code(), absl::StrCat(port.status().message(), logs));
  }
  // The health port file is written before the API port's, during start-up.
  std::ifstream health_in((*daemon)->dir_ + "/health_port");
  int health_port = 0;
  health_in >> health_port;
  (*daemon)->address_ = absl::StrCat("127.0.0.1:", *port);
  (*daemon)->health_address_ = absl::StrCat("127.0.0.1:", health_port);
  (*daemon)->members_ = std::move(members);
  return daemon;
}

std::string Daemon::log() const {
  std::stringstream log;
  log << std::ifstream(dir_ + "/log").rdbuf();
  return log.str();
}

bool Daemon::alive() {
  int status = 0;
  if (pid_ <= 0) return false;
  const pid_t waited = waitpid(pid_, &status, WNOHANG);
  if (waited == pid_) {
    ReportDeath(status);
    return false;
  }
  if (waited != 0) return false;  // -1 (EINTR, ECHILD): not known dead, so still stopped at the end
  for (std::unique_ptr<Daemon>& member : members_) {
    // A member the test itself stopped and reaped is not a crash.
    if (member->pid_ > 0 && !member->alive()) return false;
  }
  return true;
}

void Daemon::ReportDeath(int wait_status) {
  // The test sees only a closed socket: the daemon's log (its crash report with the failing
  // stack among it) is the evidence, printed before the directory goes.
  const std::string how = WIFSIGNALED(wait_status)
                              ? absl::StrCat("signal ", WTERMSIG(wait_status))
                              : absl::StrCat("exit code ", WEXITSTATUS(wait_status));
  std::string text = log();
  constexpr size_t kTail = 16384;
  if (text.size() > kTail) text = "..." + text.substr(text.size() - kTail);
  std::fprintf(stderr, "distarrayd (pid %d) died during the test (%s); its log:\n%s\n",
               static_cast<int>(pid_), how.c_str(), text.c_str());
  pid_ = -1;
}

int Daemon::WaitForExit(int timeout_ms) {
  if (pid_ <= 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
  return status;
}

int Daemon::Terminate(int timeout_ms) {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  pid_ = -1;
  // The leader first, so that it synchronizes with live members while it drains; then the
  // members, whose SIGTERM ends them before they would miss the leader's heartbeats.
  for (std::unique_ptr<Daemon>& member : members_) {
    if (member->pid_ <= 0) continue;  // already reaped by the test
    const int member_status = member->Terminate(timeout_ms);
    if (!(member_status != -1 && WIFEXITED(member_status) && WEXITSTATUS(member_status) == 0)) {
      std::fprintf(stderr, "cluster member did not stop cleanly (wait status %d); its log:\n%s\n",
                   member_status, member->log().c_str());
      status = member_status;
    }
  }
  members_.clear();
  return status;
}

Daemon::~Daemon() {
  int status = 0;
  if (pid_ > 0 && waitpid(pid_, &status, WNOHANG) == pid_) ReportDeath(status);
  if (pid_ > 0) {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  std::filesystem::remove_all(dir_);
}

}  // namespace distarray::testing
