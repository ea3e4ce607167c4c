// Helpers for unit tests that drive a backend in-process (no daemon): status assertions, operands,
// and typed uploads and reads of device buffers.
#ifndef DISTARRAY_TESTS_SUPPORT_IN_PROCESS_BACKEND_H_
#define DISTARRAY_TESTS_SUPPORT_IN_PROCESS_BACKEND_H_

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/box.h"
#include "common/status_macros.h"
#include "server/backend/backend.h"
#include "tests/support/required_backends.h"
#include "tests/support/strided_views.h"

#define DA_ASSERT_OK(expr)          \
  do {                              \
    const absl::Status s_ = (expr); \
    ASSERT_TRUE(s_.ok()) << s_;     \
  } while (false)
#define DA_CONCAT_TEST_INNER_(a, b) a##b
#define DA_CONCAT_TEST_(a, b) DA_CONCAT_TEST_INNER_(a, b)
#define DA_ASSERT_OK_AND_ASSIGN(lhs, expr)             \
  auto DA_CONCAT_TEST_(result_, __LINE__) = (expr);    \
  ASSERT_TRUE(DA_CONCAT_TEST_(result_, __LINE__).ok()) \
      << DA_CONCAT_TEST_(result_, __LINE__).status();  \
  lhs = *std::move(DA_CONCAT_TEST_(result_, __LINE__))

namespace distarray::testing {

// How a host vector holds elements of T: bool as one byte each (std::vector<bool> is packed).
template <typename T>
using HostElement = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;

// Elementwise operands: all of a buffer, or a scalar.
inline ElementwiseArg ArrayArg(const BufferPtr& buffer) {
  ElementwiseArg arg;
  arg.buffer = buffer;
  return arg;
}
inline ElementwiseArg ScalarArg(Scalar value) {
  ElementwiseArg arg;
  arg.scalar = value;
  return arg;
}
inline ElementwiseArg ScalarArg(double value) { return ScalarArg(Scalar::Float(value)); }

// All of a dense 1-d buffer of n elements, as a copy's box.
// A liveness check for RecordedGraph::Wait that reports the client gone (CANCELLED) once
// `after` has passed since this call.
inline std::function<absl::Status()> CancelledAfter(std::chrono::milliseconds after) {
  const auto start = std::chrono::steady_clock::now();
  return [start, after]() -> absl::Status {
    if (std::chrono::steady_clock::now() - start > after) {
      return absl::CancelledError("the client went away");
    }
    return absl::OkStatus();
  };
}

inline BufferBox Whole(const BufferPtr& buffer, int64_t n) {
  return BufferBox{buffer, Shape{n}, FullBox(Shape{n})};
}

// A new buffer on `device` holding `values`.
template <typename T>
absl::StatusOr<BufferPtr> UploadTo(Backend& backend, const std::vector<T>& values, int device = 0) {
  const int64_t bytes = static_cast<int64_t>(values.size() * sizeof(T));
  ASSIGN_OR_RETURN(BufferPtr buffer, backend.Allocate(device, bytes));
  RETURN_IF_ERROR(backend.WriteFromHost(buffer, 0, values.data(), bytes));
  return buffer;
}

// The first n elements of `buffer`, after the work that writes it.
template <typename T>
absl::StatusOr<std::vector<HostElement<T>>> ReadFrom(Backend& backend, const BufferPtr& buffer,
                                                     int64_t n) {
  std::vector<HostElement<T>> values(n);
  ASSIGN_OR_RETURN(
      std::unique_ptr<PendingRead> read,
      backend.ReadToHost(buffer, 0, n * static_cast<int64_t>(sizeof(T)), values.data()));
  RETURN_IF_ERROR(read->Wait());
  return values;
}

}  // namespace distarray::testing

#endif  // DISTARRAY_TESTS_SUPPORT_IN_PROCESS_BACKEND_H_
