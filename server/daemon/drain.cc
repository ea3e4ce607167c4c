#include "server/daemon/drain.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <grpcpp/health_check_service_interface.h>
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

void DrainAndExit(const DaemonOptions& options, grpc::Server& api, Engine& engine) {
  const auto drain = absl::ToChronoSeconds(options.drain);
  spdlog::info("draining for up to {} s", drain.count());
  // Shutdown() cancels the calls still running at the deadline, but a handler in CPU-bound work
  // (planning a huge map, say) does not look at its cancellation until that work ends, and
  // Wait() waits for every handler. An orchestrator's grace period expects us gone within the
  // drain time, so a watchdog ends the process 1 s after it. _Exit skips destructors on purpose:
  // they would wait for the same busy handler; device memory returns with the process.
  std::thread([drain] {
    std::this_thread::sleep_for(drain + std::chrono::seconds(1));
    spdlog::error("calls still running {} s after SIGTERM; exiting without waiting for them",
                  drain.count() + 1);
    spdlog::default_logger()->flush();
    std::_Exit(kExitDrainTimedOut);
  }).detach();
  api.GetHealthCheckService()->SetServingStatus(false);
  api.Shutdown(std::chrono::system_clock::now() + drain);
  api.Wait();
  // Every call has ended. Finish the devices' queued work, then leave without running the
  // destructors of gRPC's globals: gRPC 1.51's global shutdown joins an executor thread that
  // sleeps in epoll for up to 10 s (measured: 3 s and more on a loaded 2-core machine), which
  // would stretch SIGTERM-to-exit past the drain time. The process's exit returns host and
  // device memory; a sanitizer build still runs its leak check first.
  const absl::Status synced = engine.backend().Synchronize();
  if (!synced.ok()) spdlog::error("devices at exit: {}", synced.ToString());
  spdlog::info("stopped");
  spdlog::default_logger()->flush();
#if DISTARRAY_LEAK_CHECK_AT_EXIT
  __lsan_do_leak_check();
#endif
  std::fflush(nullptr);
  std::_Exit(synced.ok() ? EXIT_SUCCESS : kExitDevicesFailed);
}

}  // namespace distarray::daemon
