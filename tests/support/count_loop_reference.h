// The recorder tests' loop, `while all(a < limit): a += 1` with a cap, run on the host: the
// reference every backend's recorded replay is compared with.
#ifndef DISTARRAY_TESTS_SUPPORT_COUNT_LOOP_REFERENCE_H_
#define DISTARRAY_TESTS_SUPPORT_COUNT_LOOP_REFERENCE_H_

#include <cstdint>
#include <utility>
#include <vector>

namespace distarray::testing {

struct HostLoop {
  std::vector<float> a;
  int64_t iterations = 0;
  bool hit_cap = false;
};

inline HostLoop RunCountLoopOnHost(std::vector<float> a, float limit, int64_t cap) {
  auto all_less = [&] {
    for (float v : a) {
      if (!(v < limit)) return false;
    }
    return true;
  };
  HostLoop out;
  bool flag = all_less();
  while (flag) {
    if (out.iterations == cap) {
      out.hit_cap = true;
      break;
    }
    for (float& v : a) v += 1;
    ++out.iterations;
    flag = all_less();
  }
  out.a = std::move(a);
  return out;
}

// i % 7 + offset: a start the loop takes a known number of iterations from.
inline std::vector<float> Mod7(int64_t n, float offset) {
  std::vector<float> a(n);
  for (int64_t i = 0; i < n; ++i) a[i] = static_cast<float>(i % 7) + offset;
  return a;
}

}  // namespace distarray::testing

#endif  // DISTARRAY_TESTS_SUPPORT_COUNT_LOOP_REFERENCE_H_
