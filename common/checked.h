// Checked size and index arithmetic: the one helper every size, byte count, slice length and
// offset computed from a client's numbers goes through. The daemon faces remote clients, so an
// int64 that wraps is an out-of-bounds buffer, not a curiosity: every operation here either
// returns the exact result or INVALID_ARGUMENT naming the field the numbers came from.
#ifndef DISTARRAY_COMMON_CHECKED_H_
#define DISTARRAY_COMMON_CHECKED_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace distarray {

// The exact result, or nullopt when it does not fit in int64.
inline std::optional<int64_t> AddOrNull(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}
inline std::optional<int64_t> SubOrNull(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_sub_overflow(a, b, &out)) return std::nullopt;
  return out;
}
inline std::optional<int64_t> MulOrNull(int64_t a, int64_t b) {
  int64_t out;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// The same, as a status naming `field` ("index_map.chunks[3].slices[0]: size arithmetic
// overflows int64 (a * b)").
absl::Status OverflowError(absl::string_view field, absl::string_view what);

inline absl::StatusOr<int64_t> CheckedAdd(int64_t a, int64_t b, absl::string_view field) {
  if (auto r = AddOrNull(a, b)) return *r;
  return OverflowError(field, absl::StrCat(a, " + ", b));
}
inline absl::StatusOr<int64_t> CheckedSub(int64_t a, int64_t b, absl::string_view field) {
  if (auto r = SubOrNull(a, b)) return *r;
  return OverflowError(field, absl::StrCat(a, " - ", b));
}
inline absl::StatusOr<int64_t> CheckedMul(int64_t a, int64_t b, absl::string_view field) {
  if (auto r = MulOrNull(a, b)) return *r;
  return OverflowError(field, absl::StrCat(a, " * ", b));
}

// The product of non-negative factors (a shape's element count, times an element size for
// bytes), or INVALID_ARGUMENT naming `field` when it passes `limit`.
template <typename Container>
absl::StatusOr<int64_t> CheckedProductOf(const Container& factors, int64_t init,
                                         absl::string_view field, int64_t limit = INT64_MAX) {
  int64_t out = init;
  for (int64_t f : factors) {
    auto r = MulOrNull(out, f);
    if (!r || *r > limit) return OverflowError(field, absl::StrCat("the product passes ", limit));
    out = *r;
  }
  return out;
}

}  // namespace distarray

#endif  // DISTARRAY_COMMON_CHECKED_H_
