// Whether the daemons the integration tests start run under the sanitizers. scripts/sanitize.sh
// runs the Release tree's test program against the sanitized tree's distarrayd and says so with
// DISTARRAY_SANITIZED_DAEMON=1; a test program compiled in a sanitized tree knows it anyway. Tests
// that time the daemon or measure its memory skip there: ASan's slowdown, quarantine and shadow
// memory change what they measure, not the code they check.
#ifndef DISTARRAY_TESTS_SUPPORT_SANITIZED_DAEMON_H_
#define DISTARRAY_TESTS_SUPPORT_SANITIZED_DAEMON_H_

#include <cstdlib>
#include <string_view>

namespace distarray::testing {

inline bool DaemonSanitized() {
#ifdef DISTARRAY_SANITIZED
  return true;
#else
  const char* flag = std::getenv("DISTARRAY_SANITIZED_DAEMON");
  return flag != nullptr && std::string_view(flag) == "1";
#endif
}

}  // namespace distarray::testing

#endif  // DISTARRAY_TESTS_SUPPORT_SANITIZED_DAEMON_H_
