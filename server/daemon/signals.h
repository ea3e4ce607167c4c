// Signal handling by sigwait on the main thread: the signals are blocked in every thread (the
// mask is inherited, so BlockDaemonSignals must run before any thread starts), and the main
// thread waits for them, so a handler may do anything ordinary code can (lock, log, reload a
// file) instead of only what is async-signal-safe.
#ifndef DISTARRAY_SERVER_DAEMON_SIGNALS_H_
#define DISTARRAY_SERVER_DAEMON_SIGNALS_H_

#include <functional>
#include <map>

namespace distarray::daemon {

// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread and every thread it starts later.
void BlockDaemonSignals();

// On a crash (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT) writes the signal and a symbolized stack
// of the failing thread to stderr, then dies of the same signal: the one line an operator (or a
// test's daemon log) needs to tell a crash in a library from one in the daemon. Sanitizer builds
// keep their own reports.
void InstallCrashReport(const char* argv0);

class SignalDispatcher {
 public:
  // Runs `callback` on the waiting thread each time `signal` arrives (SIGHUP: e.g. reload the
  // auth tokens). SIGTERM and SIGINT are not for callbacks: they end WaitForTermination.
  void On(int signal, std::function<void()> callback);

  // Waits for SIGTERM or SIGINT, running the callbacks of other signals as they come, and
  // returns the terminating signal.
  int WaitForTermination();

 private:
  std::map<int, std::function<void()>> callbacks_;
};

}  // namespace distarray::daemon

#endif  // DISTARRAY_SERVER_DAEMON_SIGNALS_H_
