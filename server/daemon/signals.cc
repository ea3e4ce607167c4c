#include "server/daemon/signals.h"

#include <pthread.h>
#include <signal.h>

#include <spdlog/spdlog.h>

#include "absl/debugging/failure_signal_handler.h"
#include "absl/debugging/symbolize.h"

namespace distarray::daemon {
namespace {

sigset_t DaemonSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

}  // namespace

void BlockDaemonSignals() {
  const sigset_t set = DaemonSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void InstallCrashReport(const char* argv0) {
#ifndef DISTARRAY_SANITIZED
  absl::InitializeSymbolizer(argv0);
  absl::InstallFailureSignalHandler(absl::FailureSignalHandlerOptions());
  // Abseil takes SIGTERM too; here it is the orderly stop that sigwait receives (blocked in every
  // thread), not a failure.
  signal(SIGTERM, SIG_DFL);
#else
  (void)argv0;
#endif
}

void SignalDispatcher::On(int signal, std::function<void()> callback) {
  callbacks_[signal] = std::move(callback);
}

int SignalDispatcher::WaitForTermination() {
  const sigset_t set = DaemonSignals();
  while (true) {
    int signal = 0;
    if (sigwait(&set, &signal) != 0) continue;
    if (signal == SIGTERM || signal == SIGINT) return signal;
    if (auto it = callbacks_.find(signal); it != callbacks_.end()) {
      it->second();
    } else {
      spdlog::info("signal {} ignored: nothing is configured to handle it", signal);
    }
  }
}

}  // namespace distarray::daemon
