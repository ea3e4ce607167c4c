#include "server/daemon/drain.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <spdlog/spdlog.h>

#include "server/daemon/exit_codes.h"

#if defined(__SANITIZE_ADDRESS__)
#define DISTARRAY_LEAK_CHECK_AT_EXIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DISTARRAY_LEAK_CHECK_AT_EXIT 1
#endif
#endif
#ifndef DISTARRAY_LEAK_CHECK_AT_EXIT
#define DISTARRAY_LEAK_CHECK_AT_EXIT 0
#endif
#if DISTARRAY_LEAK_CHECK_AT_EXIT
#include <sanitizer/lsan_interface.h>
#endif

namespace distarray::daemon {

void DrainAndExit(const DaemonOptions& options, const DrainParts& parts) {
  const auto grace = absl::ToChronoMilliseconds(options.drain_grace);
  const auto drain = absl::ToChronoMilliseconds(options.drain);
  const auto start = std::chrono::steady_clock::now();
  parts.gate->BeginDrain();
  if (parts.health != nullptr) parts.health->SetDraining();
  spdlog::info(
      "draining: readiness NOT_SERVING and new calls refused; the listener closes in {} s, "
      "then calls still running have {} s",
      absl::ToDoubleSeconds(options.drain_grace), absl::ToDoubleSeconds(options.drain));
  // Shutdown() cancels the calls still running at its deadline, but a handler in CPU-bound work
  // (planning a huge map, say) does not look at its cancellation until that work ends, and
  // Wait() waits for every handler. An orchestrator's grace period expects us gone within the
  // drain time, so a watchdog ends the process 1 s after it. _Exit skips destructors on purpose:
  // they would wait for the same busy handler; device memory returns with the process.
  std::thread([start, limit = grace + drain + std::chrono::seconds(1)] {
    std::this_thread::sleep_until(start + limit);
    spdlog::error("calls still running {} s after SIGTERM; exiting without waiting for them",
                  std::chrono::duration<double>(limit).count());
    spdlog::default_logger()->flush();
    std::_Exit(kExitDrainTimedOut);
  }).detach();
  std::this_thread::sleep_until(start + grace);

  // The listener stays open until the calls in flight are done: gRPC's Shutdown() answers a call
  // that arrives on an open connection afterwards with CANCELLED, where the gate answers
  // UNAVAILABLE. So calls get until the cut-off to finish, then those still running end
  // UNAVAILABLE at their next check (between messages of a stream, between steps of long work),
  // and only then does the listener close. A call blocked on the network (a client that sends
  // nothing) cannot answer: Shutdown's deadline closes its connection, which its client also
  // sees as UNAVAILABLE.
  const absl::Time cutoff = absl::Now() + options.drain;
  int running = parts.gate->WaitForCalls(cutoff);
  if (running > 0) {
    spdlog::warn("drain time spent with {} calls still running; cutting them off", running);
    parts.gate->CutOff();
    constexpr absl::Duration kCutOffSlack = absl::Milliseconds(500);
    running = parts.gate->WaitForCalls(absl::Now() + kCutOffSlack);
  }
  spdlog::info("closing the API listener ({} calls still running)", running);
  parts.api->Shutdown(std::chrono::system_clock::now());
  parts.api->Wait();
  // Every call has ended. Finish the devices' queued work and free their memory, then leave
  // without running the destructors of gRPC's globals: gRPC 1.51's global shutdown joins an
  // executor thread that sleeps in epoll for up to 10 s (measured: 3 s and more on a loaded
  // 2-core machine), which would stretch SIGTERM-to-exit past the drain time. A sanitizer build
  // still runs its leak check first.
  if (parts.after_calls) parts.after_calls();
  const absl::Status released = parts.release_devices();
  if (!released.ok()) spdlog::error("devices at exit: {}", released.ToString());
  spdlog::info("stopped {:.2f} s after the signal",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  spdlog::default_logger()->flush();
#if DISTARRAY_LEAK_CHECK_AT_EXIT
  __lsan_do_leak_check();
#endif
  std::fflush(nullptr);
  std::_Exit(released.ok() ? EXIT_SUCCESS : kExitDevicesFailed);
}

}  // namespace distarray::daemon
