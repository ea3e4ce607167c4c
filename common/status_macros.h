// RETURN_IF_ERROR / ASSIGN_OR_RETURN, which Debian 12's Abseil (20220623) does not ship.
#ifndef DISTARRAY_COMMON_STATUS_MACROS_H_
#define DISTARRAY_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define DA_CONCAT_INNER_(a, b) a##b
#define DA_CONCAT_(a, b) DA_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                                   \
  do {                                                          \
    if (::absl::Status da_status_ = (expr); !da_status_.ok()) { \
      return da_status_;                                        \
    }                                                           \
  } while (false)

#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr)   \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return std::move(tmp).status(); \
  lhs = std::move(tmp).value()

// ASSIGN_OR_RETURN(auto x, MakeX()); declares or assigns `lhs` from a StatusOr, returning its
// error status from the enclosing function.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(DA_CONCAT_(da_statusor_, __LINE__), lhs, expr)

#endif  // DISTARRAY_COMMON_STATUS_MACROS_H_
