// The recorder tests' loop, `while all(a < limit): a += 1` with a cap: recorded on a backend's
// recorder, and run on the host as the reference every replay is compared with.
#ifndef DISTARRAY_TESTS_SUPPORT_COUNT_LOOP_REFERENCE_H_
#define DISTARRAY_TESTS_SUPPORT_COUNT_LOOP_REFERENCE_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/status_macros.h"
#include "server/backend/graph_recorder.h"
#include "tests/support/in_process_backend.h"

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

// Records on device 0: flag = all(a < limit); while flag (at most `cap` times) { a = a + 1;
// flag = all(a < limit) } over a's n float32 elements. The temporaries are allocated on the
// recording: graph slots.
inline absl::StatusOr<std::unique_ptr<RecordedGraph>> RecordCountLoop(GraphRecorder& recorder,
                                                                      const BufferPtr& a, int64_t n,
                                                                      double limit, int64_t cap) {
  ASSIGN_OR_RETURN(std::unique_ptr<GraphRecording> recording, recorder.Begin(0));
  ASSIGN_OR_RETURN(BufferPtr less, recording->Allocate(0, n));
  ASSIGN_OR_RETURN(BufferPtr flag, recording->Allocate(0, 1));
  auto condition = [&]() -> absl::Status {
    RETURN_IF_ERROR(recording->Elementwise(ElementwiseOpId::kLess, DType::kFloat32, less, n,
                                           {ArrayArg(a), ScalarArg(limit)}));
    return recording->Reduce(ReduceKind::kAll, DType::kBool, less, AllOf(n), flag, 1, nullptr);
  };
  RETURN_IF_ERROR(condition());
  RETURN_IF_ERROR(recording->BeginWhile(flag, cap));
  RETURN_IF_ERROR(recording->Elementwise(ElementwiseOpId::kAdd, DType::kFloat32, a, n,
                                         {ArrayArg(a), ScalarArg(1)}));
  RETURN_IF_ERROR(condition());
  RETURN_IF_ERROR(recording->EndWhile(flag));
  return recording->Finish();
}

}  // namespace distarray::testing

#endif  // DISTARRAY_TESTS_SUPPORT_COUNT_LOOP_REFERENCE_H_
