// Byte-size literals: 64_MiB reads better than 64 << 20.
#ifndef DISTARRAY_COMMON_SIZES_H_
#define DISTARRAY_COMMON_SIZES_H_

#include <cstdint>

namespace distarray {

constexpr int64_t operator""_KiB(unsigned long long n) { return static_cast<int64_t>(n) << 10; }
constexpr int64_t operator""_MiB(unsigned long long n) { return static_cast<int64_t>(n) << 20; }
constexpr int64_t operator""_GiB(unsigned long long n) { return static_cast<int64_t>(n) << 30; }

}  // namespace distarray

#endif  // DISTARRAY_COMMON_SIZES_H_
