// The bound of the client call the current thread serves: its deadline and whether it is still
// wanted. Work that waits on something outside the process on the caller's behalf (a cluster
// member's answer, server/cluster/remote_node.h) stops waiting when the call ends, instead of
// holding the thread until a fixed timeout. gRPC's synchronous server runs each call on one thread
// from start to end, so a thread-local scope set by the handler covers everything it does on that
// thread; work on other threads (a device thread, the cluster's freer) sees no bound.
#ifndef DISTARRAY_SERVER_BACKEND_CALL_BOUND_H_
#define DISTARRAY_SERVER_BACKEND_CALL_BOUND_H_

#include <functional>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace distarray {

class ScopedCallBound {
 public:
  // `alive`: OK while the call is wanted; its error (CANCELLED, DEADLINE_EXCEEDED, the drain's
  // UNAVAILABLE) once not. Held by reference (no copy on every call): it must outlive the scope,
  // as the handler's CallContext does. Nests: an inner scope (a tighter run-time bound) replaces
  // the outer one for its lifetime.
  ScopedCallBound(absl::Time deadline, const std::function<absl::Status()>& alive)
      : deadline_(deadline), alive_(alive), previous_(current_) {
    current_ = this;
  }
  ~ScopedCallBound() { current_ = previous_; }
  ScopedCallBound(const ScopedCallBound&) = delete;
  ScopedCallBound& operator=(const ScopedCallBound&) = delete;

  // The bound of the call this thread serves, or null.
  static const ScopedCallBound* Current() { return current_; }

  absl::Time deadline() const { return deadline_; }
  absl::Status Alive() const { return alive_ ? alive_() : absl::OkStatus(); }

 private:
  const absl::Time deadline_;
  const std::function<absl::Status()>& alive_;
  const ScopedCallBound* const previous_;
  static inline thread_local const ScopedCallBound* current_ = nullptr;
};

}  // namespace distarray

#endif  // DISTARRAY_SERVER_BACKEND_CALL_BOUND_H_
